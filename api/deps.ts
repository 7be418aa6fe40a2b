import type { ProjectionEngine } from '../projections/engine.js';
import type { Config } from '../app/config.js';
import type { Identity } from '../app/identity.js';
import type { SignIn } from '../app/sign-in.js';
import type { Runs } from '../app/runs.js';
import type { Workspaces } from '../app/workspaces.js';
import type { RunDeletion } from '../app/run-deletion.js';
import type { Secrets } from '../app/secrets.js';
import type { McpServers } from '../app/mcp-servers.js';
import type { JobStateStore } from '../app/job-state.js';
import type { Images } from '../app/images.js';
import type { Playbooks } from '../app/playbooks.js';
import type { Jobs } from '../app/jobs.js';
import type { JobCompiler } from '../app/compile.js';
import type { PlaybookEditor } from '../app/playbook-edits.js';
import type { WorkspaceSettings } from '../app/workspace-settings.js';
import type { Providers } from '../app/providers.js';
import type { Queries } from '../app/queries/index.js';
import type { Static } from 'typebox';
import type { SandboxInfo, SubscriptionsInfo } from '../schemas/system.js';

type SandboxInfoDto = Static<typeof SandboxInfo>;

/**
 * What route plugins may use, built once by the composition root. There is no store here: reads go through
 * `queries` (scoped to the caller's workspace), writes through the application services (docs/api.md).
 */
export interface AppDeps {
  config: Pick<Config, 'publicUrl' | 'logLevel' | 'workspacesEnabled'> & { allowPrivateNetworkTargets: boolean };
  queries: Queries;
  engine: ProjectionEngine;
  identity: Identity;
  signIn: SignIn;
  workspaces: Workspaces;
  jobs: Jobs;
  compiler: JobCompiler;
  playbookEditor: PlaybookEditor;
  settings: WorkspaceSettings;
  providers: Providers;
  version: string;
  runs: Runs;
  runDeletion: RunDeletion;
  secrets: Secrets;
  mcp: McpServers;
  jobState: JobStateStore;
  images: Images;
  playbooks: Playbooks;
  /** The sandbox backend this process runs runs on, or null for a process without the runner role. */
  sandbox(): SandboxInfoDto | null;
  /** How this process's subscriptions to the log fare (docs/design.md, "Failure handling"). */
  subscriptions(): Static<typeof SubscriptionsInfo>;
}
