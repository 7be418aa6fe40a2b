import type { RunFiles } from '../adapters/run-files.js';
import type { ProjectionEngine } from '../projections/engine.js';
import type { ReadCache } from '../projections/read-cache.js';
import type { CommandBus } from '../app/commands.js';
import type { Config } from '../app/config.js';
import type { Identity } from '../app/identity.js';
import type { Runs } from '../app/runs.js';
import type { Keys } from '../adapters/keys.js';
import type { Models } from '../app/models.js';
import type { Secrets } from '../app/secrets.js';
import type { McpServers } from '../app/mcp-servers.js';
import type { JobStateStore } from '../app/job-state.js';
import type { Images } from '../app/images.js';
import type { Playbooks } from '../app/playbooks.js';
import type { Static } from 'typebox';
import type { SandboxInfo } from '../schemas/system.js';

type SandboxInfoDto = Static<typeof SandboxInfo>;
import type { Stores } from '../store/open.js';

/** What route plugins may use. Handlers reach the stores only through these, never through globals. */
export interface AppDeps {
  config: Pick<Config, 'publicUrl' | 'logLevel'> & { allowPrivateNetworkTargets: boolean };
  stores: Stores;
  bus: CommandBus;
  engine: ProjectionEngine;
  identity: Identity;
  cache: ReadCache;
  version: string;
  runs: Runs;
  keys: Keys;
  models: Models;
  secrets: Secrets;
  mcp: McpServers;
  jobState: JobStateStore;
  images: Images;
  playbooks: Playbooks;
  /** The sandbox backend this process runs runs on, or null for a process without the runner role. */
  sandbox(): SandboxInfoDto | null;
  /** Where finished runs' artifacts are kept: `<dir>/<runId>/<relative path>`. */
  runFiles: RunFiles;
}
