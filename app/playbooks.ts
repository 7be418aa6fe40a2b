import { dockerfileHash as hashOfDockerfile } from '../domain/image.js';
import { DomainError } from '../domain/decider.js';
import {
  emptyContent,
  playbookDecider,
  playbookStream,
  playbookStreamId,
  type PlaybookContent,
  type SavePlaybook,
} from '../domain/playbook.js';
import {
  emptyStats,
  playbookStatsDecider,
  playbookStatsStreamId,
  withStats,
  type PlaybookStats,
  type ScriptCalls,
} from '../domain/playbook-stats.js';
import { playbookFiles } from '../domain/playbook-render.js';
import type { ProjectionEngine } from '../projections/engine.js';
import {
  playbookStatsCollection,
  playbookVersionsCollection,
  versionDocId,
  type PlaybookStatsDoc,
  type PlaybookVersionDoc,
} from '../projections/playbooks.js';
import type { FileIn } from '../adapters/sandbox/types.js';
import type { AppliedOp, PlaybookAuthor } from '../schemas/playbook.js';
import type { DocumentStore, FindOptions, Search } from '../store/document-store.js';
import type { EventStore } from '../store/event-store.js';
import type { CommandBus, CommandContext } from './commands.js';

/** sha256 hex of the trimmed Dockerfile, or null without one: what image builds are keyed by. */
export function dockerfileHash(dockerfile: string | null): string | null {
  return dockerfile === null || dockerfile.trim() === '' ? null : hashOfDockerfile(dockerfile);
}

/** A version as the read model holds it, with the statistics merged into its content. */
export interface StoredVersion {
  version: number;
  content: PlaybookContent;
  summary: string | null;
  author: PlaybookAuthor | null;
  authorId: string | null;
  sourceRunId: string | null;
  ops: AppliedOp[] | null;
  opCount: number;
  dockerfileHash: string | null;
  graduated: boolean;
  createdAt: number | null;
}

export interface SaveRequest {
  /** Already validated (`validateContent` for edits, `applyOps` for reflection). */
  content: PlaybookContent;
  baseVersion: number | null;
  summary: string;
  author: PlaybookAuthor;
  sourceRunId?: string | null;
  ops?: AppliedOp[] | null;
  /** Reflection applied a propose_main: the job graduates at this version. */
  proposedMain?: boolean;
}

export const versionZero = (): StoredVersion => ({
  version: 0,
  content: emptyContent(),
  summary: 'The empty playbook',
  author: null,
  authorId: null,
  sourceRunId: null,
  ops: null,
  opCount: 0,
  dockerfileHash: null,
  graduated: false,
  createdAt: null,
});

function fromDoc(d: PlaybookVersionDoc, stats: PlaybookStats): StoredVersion {
  return {
    version: d.version,
    content: withStats(d.content as unknown as PlaybookContent, stats),
    summary: d.summary,
    author: d.author as PlaybookAuthor,
    authorId: d.authorId,
    sourceRunId: d.sourceRunId,
    ops: (d.ops ?? null) as unknown as AppliedOp[] | null,
    opCount: d.opCount,
    dockerfileHash: d.dockerfileHash,
    graduated: d.graduated,
    createdAt: d.createdAt,
  };
}

/**
 * The content of one version, read from the job's playbook stream: version v is the event at revision v − 1, so it
 * is one read whatever the history's length. Null when the version does not exist (or is another workspace's).
 */
export async function versionContent(
  events: EventStore,
  workspaceId: string,
  jobId: string,
  version: number,
): Promise<PlaybookContent | null> {
  if (version === 0) return emptyContent();
  const [recorded] = await events.readStream(playbookStreamId(jobId), { fromRevision: version - 1, limit: 1 });
  if (!recorded) return null;
  const decoded = playbookStream.decode(recorded);
  if (!decoded) return null;
  const { event } = decoded;
  if (event.data.workspaceId !== workspaceId || event.data.version !== version) return null;
  return event.data.content;
}

/**
 * The files a run's sandbox gets from the playbook version the run was pinned to when it was queued (docs/playbooks.md,
 * "Rendering"): /svc/PLAYBOOK.md, /svc/toolkit/<name> and /svc/main (both 0755). A version that cannot be found gives
 * the empty playbook's files: a run is never refused for its playbook.
 */
export async function filesForRun(
  events: EventStore,
  workspaceId: string,
  jobId: string,
  version: number,
): Promise<FileIn[]> {
  const content = (await versionContent(events, workspaceId, jobId, version)) ?? emptyContent();
  return playbookFiles(content);
}

/** Reads and writes of job playbooks: the routes, reflection and the runner use this, never the streams directly. */
export class Playbooks {
  constructor(
    private readonly bus: CommandBus,
    private readonly events: EventStore,
    private readonly docs: DocumentStore,
    private readonly engine: ProjectionEngine,
    private readonly clock: () => number = Date.now,
    /** After every save: a Dockerfile gets its image build queued (docs/playbooks.md, "Versions and saves"). */
    private readonly afterSave: (
      ctx: CommandContext,
      workspaceId: string,
      jobId: string,
      content: PlaybookContent,
    ) => Promise<void> = async () => undefined,
  ) {}

  private get versionDocs() {
    return this.docs.collection<PlaybookVersionDoc>(playbookVersionsCollection);
  }

  async stats(workspaceId: string, jobId: string): Promise<PlaybookStats> {
    const d = await this.docs
      .collection<PlaybookStatsDoc>(playbookStatsCollection)
      .findOne({ _id: jobId, workspaceId });
    if (!d) return emptyStats();
    return {
      learnings: (d.learnings ?? []) as unknown as PlaybookStats['learnings'],
      scripts: (d.scripts ?? []) as unknown as PlaybookStats['scripts'],
    };
  }

  /** The latest version (version 0 when nothing was saved yet), statistics merged in. */
  async current(workspaceId: string, jobId: string): Promise<StoredVersion> {
    const [latest] = await this.versionDocs.find({ jobId, workspaceId }, { sort: [['version', -1]], limit: 1 });
    return latest ? fromDoc(latest, await this.stats(workspaceId, jobId)) : versionZero();
  }

  /** The latest version number straight from the stream: what a change must start from. */
  async latestVersion(jobId: string): Promise<number> {
    return (await this.bus.load(playbookStreamId(jobId), playbookDecider)).state.version;
  }

  /** One version; version 0 is the implicit empty playbook. Null when it does not exist. */
  async version(workspaceId: string, jobId: string, version: number): Promise<StoredVersion | null> {
    if (version === 0) return versionZero();
    const d = await this.versionDocs.findOne({ _id: versionDocId(jobId, version), workspaceId });
    return d ? fromDoc(d, await this.stats(workspaceId, jobId)) : null;
  }

  async list(
    workspaceId: string,
    jobId: string,
    find: FindOptions,
    search: Search | undefined,
  ): Promise<{ items: StoredVersion[]; total: number }> {
    const filter = { jobId, workspaceId };
    const [docs, total] = await Promise.all([
      this.versionDocs.find(filter, find),
      this.versionDocs.count(filter, { search }),
    ]);
    const stats = emptyStats();
    return { items: docs.map((d) => fromDoc(d, stats)), total };
  }

  /**
   * Saves a new version. With `baseVersion` the append expects exactly that version to be the latest, so a stale
   * change answers 409 instead of overwriting one made meanwhile. Answers the new version once the read models
   * have it.
   */
  async save(
    ctx: CommandContext,
    workspaceId: string,
    jobId: string,
    request: SaveRequest,
    rolledBackFrom: number | null = null,
  ): Promise<number> {
    const command: SavePlaybook = {
      type: 'SavePlaybook',
      jobId,
      workspaceId,
      content: request.content,
      baseVersion: request.baseVersion,
      summary: request.summary,
      author: request.author,
      authorId: request.author === 'user' || request.author === 'rollback' ? ctx.actor.id : null,
      sourceRunId: request.sourceRunId ?? null,
      ops: request.ops ?? null,
      dockerfileHash: dockerfileHash(request.content.dockerfile),
      proposedMain: request.proposedMain ?? false,
      rolledBackFrom,
      now: this.clock(),
    };
    const result = await this.bus.execute(playbookStreamId(jobId), playbookDecider, command, { ...ctx, workspaceId });
    await this.engine.waitFor(result.position);
    await this.afterSave(ctx, workspaceId, jobId, request.content);
    return result.state.version;
  }

  /** A new version with the content of `version` (0: the empty playbook). History is never rewritten. */
  async rollback(
    ctx: CommandContext,
    workspaceId: string,
    jobId: string,
    version: number,
    baseVersion: number | null,
  ): Promise<number> {
    const content = await versionContent(this.events, workspaceId, jobId, version);
    if (!content) throw DomainError.notFound(`Playbook version ${version}`);
    return this.save(
      ctx,
      workspaceId,
      jobId,
      { content, baseVersion, summary: `Rolled back to version ${version}`, author: 'rollback' },
      version,
    );
  }

  /** One hit for each learning a reflection said the run used; ids that name no learning of the latest version are ignored. */
  async recordLearningHits(
    ctx: CommandContext,
    workspaceId: string,
    jobId: string,
    runId: string | null,
    ids: string[],
  ): Promise<void> {
    const { state } = await this.bus.load(playbookStreamId(jobId), playbookDecider);
    const known = new Set(state.content.learnings.map((l) => l.id.toLowerCase()));
    const used = ids.filter((id) => known.has(id.toLowerCase()));
    if (used.length === 0) return;
    await this.bus.execute(
      playbookStatsStreamId(jobId),
      playbookStatsDecider,
      { type: 'CountLearningHits', jobId, workspaceId, runId, ids: used },
      { ...ctx, workspaceId },
    );
  }

  /** Toolkit calls and failures of one finished run (recorded whether or not the job learns). */
  async recordScriptCalls(
    ctx: CommandContext,
    workspaceId: string,
    jobId: string,
    runId: string | null,
    counts: ScriptCalls[],
  ): Promise<void> {
    await this.bus.execute(
      playbookStatsStreamId(jobId),
      playbookStatsDecider,
      { type: 'CountScriptCalls', jobId, workspaceId, runId, counts },
      { ...ctx, workspaceId },
    );
  }

  /** See `filesForRun`. */
  filesForRun(workspaceId: string, jobId: string, version: number): Promise<FileIn[]> {
    return filesForRun(this.events, workspaceId, jobId, version);
  }
}
