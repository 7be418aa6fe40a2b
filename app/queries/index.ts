import { timingSafeEqual } from 'node:crypto';
import type { Observable } from 'rxjs';
import { hashToken } from '../../adapters/keys.js';
import type { JobDoc } from '../../projections/jobs.js';
import { jobsCollection } from '../../projections/jobs.js';
import { usersCollection } from '../../projections/identity.js';
import type { ReadCache } from '../../projections/read-cache.js';
import type { DocumentStore } from '../../store/document-store.js';
import type { EventStore, RecordedEvent } from '../../store/event-store.js';
import type { RunFiles } from '../../adapters/run-files.js';
import { RunArtifacts } from './artifacts.js';
import { AuditQueries } from './audit.js';
import type { Principal } from '../principal.js';
import type { DeltaSource } from '../live-deltas.js';
import { IdentityQueries } from './identity.js';
import { ImageQueries } from './images.js';
import { JobQueries } from './jobs.js';
import { PastQueries } from './past.js';
import { McpServerQueries } from './mcp-servers.js';
import { ProviderQueries } from './providers.js';
import { StreamFeeds } from './run-feeds.js';
import { RunQueries } from './runs.js';
import { SecretQueries } from './secrets.js';
import { StatsQueries } from './stats.js';
import { StatsBucketCache } from './stats-buckets.js';
import { RunTimeline, workspaceRunEvents } from './timeline.js';

export type { MemberView, TokenView } from './identity.js';

/**
 * The read side of the API. Workspace data is reachable only through `forPrincipal`, which fixes the workspace
 * every query filters on: a caller cannot ask for another workspace's documents, and jobs are answered only while
 * they are not archived (docs/api.md).
 */
export class Queries {
  private readonly feeds: StreamFeeds;
  /** Parsed stats buckets, shared by every request of the process (docs/design.md, "Stats"). */
  private readonly statsBuckets = new StatsBucketCache();

  constructor(
    private readonly docs: DocumentStore,
    private readonly events: EventStore,
    private readonly cache: ReadCache,
    /** Live output fragments of the runs this process executes (never stored). */
    private readonly deltas: DeltaSource,
    /** Run outputs and whole timeline payloads on disk. */
    private readonly files: RunFiles,
  ) {
    this.feeds = new StreamFeeds(events);
  }

  forPrincipal(principal: Principal): WorkspaceQueries {
    return new WorkspaceQueries(
      this.docs,
      this.events,
      this.cache,
      this.feeds,
      this.deltas,
      this.files,
      principal,
      this.statsBuckets,
    );
  }

  /**
   * The job a webhook call names, in any workspace, when `token` is its current webhook token: there the token is the
   * credential, and the job's workspace is the caller's. Null for a missing, archived or tokenless job and for a
   * wrong token alike, so a caller learns nothing about which. The hashes are compared in constant time.
   */
  async jobForWebhook(jobId: string, token: string): Promise<JobDoc | null> {
    const job = await this.docs.collection<JobDoc>(jobsCollection).findOne({ _id: jobId, archived: false });
    const expected = job?.webhookTokenHash;
    if (!job || !expected) return null;
    const a = Buffer.from(hashToken(token));
    const b = Buffer.from(expected);
    return a.length === b.length && timingSafeEqual(a, b) ? job : null;
  }

  /** Whether anyone has signed in yet: the login page's first-start guidance shows until then. */
  async anyUserExists(): Promise<boolean> {
    return (await this.docs.collection(usersCollection).findOne({})) !== null;
  }

  /** The database kinds behind the stores: `sqlite`, `mongodb`, or `<events>+<documents>` when they differ. */
  database(): string {
    const { events, docs } = this;
    return events.kind === docs.kind ? events.kind : `${events.kind}+${docs.kind}`;
  }
}

/** The reads of one principal's workspace; made per request by `Queries.forPrincipal`. */
export class WorkspaceQueries {
  readonly jobs: JobQueries;

  constructor(
    private readonly docs: DocumentStore,
    private readonly events: EventStore,
    cache: ReadCache,
    private readonly feeds: StreamFeeds,
    private readonly deltas: DeltaSource,
    private readonly files: RunFiles,
    private readonly principal: Principal,
    private readonly statsBuckets: StatsBucketCache,
  ) {
    this.jobs = new JobQueries(docs, cache, principal.workspaceId);
  }

  get workspaceId(): string {
    return this.principal.workspaceId;
  }

  get runs(): RunQueries {
    return new RunQueries(this.docs, this.workspaceId);
  }

  get images(): ImageQueries {
    return new ImageQueries(this.docs, this.jobs, this.workspaceId);
  }

  get secrets(): SecretQueries {
    return new SecretQueries(this.docs, this.workspaceId);
  }

  get mcpServers(): McpServerQueries {
    return new McpServerQueries(this.docs, this.workspaceId);
  }

  get providers(): ProviderQueries {
    return new ProviderQueries(this.docs, this.workspaceId);
  }

  get identity(): IdentityQueries {
    return new IdentityQueries(this.docs, this.principal);
  }

  get audit(): AuditQueries {
    return new AuditQueries(this.docs, this.jobs, this.workspaceId);
  }

  /** Jobs and playbooks as they were at an instant, folded from the log. */
  get past(): PastQueries {
    return new PastQueries(this.events, this.jobs);
  }

  get stats(): StatsQueries {
    return new StatsQueries(this.docs, this.jobs, this.workspaceId, this.statsBuckets);
  }

  /** A run's timeline, once the run is found in this workspace (`not_found` "Run not found" otherwise). */
  async timeline(runId: string): Promise<RunTimeline> {
    return new RunTimeline(this.events, this.feeds, this.deltas, this.files, await this.runs.get(runId));
  }

  /** A run's output files, once the run is found in this workspace (`not_found` "Run not found" otherwise). */
  async artifacts(runId: string): Promise<RunArtifacts> {
    return new RunArtifacts(this.files, await this.runs.get(runId));
  }

  /** Every event of this workspace's runs from now on. */
  runEvents(): Promise<Observable<RecordedEvent>> {
    return workspaceRunEvents(this.events, this.workspaceId);
  }
}
