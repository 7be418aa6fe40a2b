import type { DeltaSource } from '../app/live-deltas.js';
import type { Logger } from 'pino';
import type { Static } from 'typebox';
import type { Config } from '../app/config.js';
import type { CommandBus } from '../app/commands.js';
import type { Identity } from '../app/identity.js';
import type { Images } from '../app/images.js';
import type { JobStateStore } from '../app/job-state.js';
import type { McpServers } from '../app/mcp-servers.js';
import type { Models } from '../app/models.js';
import type { NotificationSender } from '../app/notifications.js';
import type { Playbooks } from '../app/playbooks.js';
import type { Runs } from '../app/runs.js';
import type { Secrets } from '../app/secrets.js';
import type { Keys } from '../adapters/keys.js';
import type { ProjectionEngine } from '../projections/engine.js';
import type { ReadCache } from '../projections/read-cache.js';
import type { Dispatcher } from '../runner/dispatcher.js';
import type { ImageGc } from '../runner/image-gc.js';
import type { ImageBuilder } from '../runner/image-builder.js';
import type { SandboxInfo as SandboxInfoSchema } from '../schemas/system.js';
import type { Stores } from '../store/open.js';
import type { SubscriptionHealth } from '../store/resilient-event-store.js';

/*
 * The shapes the composition root hands around: start.ts builds the services, runner-role.ts the runner role. Both
 * import these from here, so neither imports the other's types.
 */

/** Everything a process of the service holds, wired once. */
export interface Services {
  config: Config;
  stores: Stores;
  keys: Keys;
  bus: CommandBus;
  engine: ProjectionEngine;
  identity: Identity;
  cache: ReadCache;
  runs: Runs;
  models: Models;
  secrets: Secrets;
  mcp: McpServers;
  jobState: JobStateStore;
  playbooks: Playbooks;
  /** Job images: builds of playbook Dockerfiles, their reads, and the image a run starts from. */
  images: Images;
  /** Posts notifications to workspace webhooks through the egress guard (the runner role's notifier uses it). */
  notifications: NotificationSender;
  /** Where people open the web app: SVC_PUBLIC_URL, else the address the API listens on once it does. */
  appUrl: () => string;
  /** Set when this process has the runner role. */
  runner: RunnerRole | null;
  /** Live deltas of runs executed by this process or another (docs/design.md, "Live deltas across replicas"). */
  deltas: DeltaSource & { close(): Promise<void> };
  /** How this process's subscriptions to the log fare (docs/design.md, "Failure handling"). */
  subscriptions(): SubscriptionHealth;
  log: Logger;
}

export interface RunnerRole {
  sandboxInfo(): Static<typeof SandboxInfoSchema>;
  dispatcher: Dispatcher;
  /** Builds job images; null when the backend cannot build them (bwrap) or is not usable. */
  imageBuilder: ImageBuilder | null;
  /** Daily removal of job images no recent playbook version uses; null without an image builder. */
  imageGc: ImageGc | null;
  stop(): Promise<void>;
}
