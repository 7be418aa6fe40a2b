import { describeCron, nextOccurrence } from '../../domain/cron.js';
import { DomainError, type Decider, type DomainEvent } from '../../domain/decider.js';
import { isDemoted, type RunRecord } from '../../domain/graduation.js';
import { jobRunsDecider, jobRunsStream, jobRunsStreamId } from '../../domain/job-runs.js';
import { jobDecider, jobStream, jobStreamId } from '../../domain/job.js';
import {
  playbookStatsDecider,
  playbookStatsStream,
  playbookStatsStreamId,
  withStats,
} from '../../domain/playbook-stats.js';
import { isEmptyPlaybook, playbookDecider, playbookStream, playbookStreamId } from '../../domain/playbook.js';
import { runDecider, runStream, runStreamId } from '../../domain/run.js';
import type { StoredEvent, StreamCategory } from '../../domain/stream.js';
import type { JobDoc } from '../../projections/jobs.js';
import type { LastRun } from '../../schemas/job.js';
import type { EventStore, RecordedEvent } from '../../store/event-store.js';
import { versionZero, type StoredVersion } from '../playbooks.js';
import type { JobQueries } from './jobs.js';

/** How many of a job's latest runs a past job shows, as the jobs read model does. */
const recentRunsShown = 10;

/**
 * Jobs and playbooks as they were at an instant (docs/api.md, "Time travel"): their streams read from the log and
 * folded with the deciders' own `evolve` up to the instant, never read from a read model, so the answer is what the
 * events say. The job must exist today (and not be archived) in the caller's workspace (docs/api.md, "The tenant
 * rule"); before it was created it is `not_found`.
 */
export class PastQueries {
  constructor(
    private readonly events: EventStore,
    private readonly jobs: JobQueries,
    private readonly clock: () => number = Date.now,
  ) {}

  /** The job as `GET /api/jobs/{id}` would have answered at `at`. */
  async job(jobId: string, at: number): Promise<JobDoc> {
    this.checkInstant(at);
    const current = await this.jobs.get(jobId);
    const job = await this.fold(jobStream, jobStreamId(jobId), jobDecider, at);
    if (job.state.status === 'none') throw DomainError.notFound('Job');
    const { config, createdAt, updatedAt } = job.state;
    const archived = job.state.status === 'archived';
    const playbook = await this.fold(playbookStream, playbookStreamId(jobId), playbookDecider, at);
    const saved = playbook.events.map((e) => e.data);
    const graduated = saved.filter((v) => v.graduated).at(-1)?.version ?? null;
    const runs = await this.runs(jobId, at);
    const recent: LastRun[] = runs.recent.map((r) => ({
      id: r.id,
      number: r.number,
      status: r.status,
      queuedAt: r.queuedAt,
    }));
    return {
      _id: jobId,
      workspaceId: current.workspaceId,
      archived,
      ...config,
      sortName: config.name.toLowerCase(),
      scheduleHuman: config.cron === null ? null : describeCron(config.cron),
      nextRunAt:
        config.cron && config.enabled && !archived ? nextOccurrence(config.cron, config.timezone ?? 'UTC', at) : null,
      playbookVersion: playbook.state.version,
      playbookEmpty: isEmptyPlaybook(playbook.state.content),
      playbookHasMain: playbook.state.content.main !== null,
      graduatedVersion: graduated,
      demoted: isDemoted(runs.recent, graduated),
      hasWebhookToken: job.events.some((e) => e.type === 'JobWebhookTokenSet'),
      createdAt,
      updatedAt,
      lastRun: recent[0] ?? null,
      lastMode: runs.recent[0]?.mode ?? null,
      runCount: runs.count,
      recentRuns: recent.length === 0 ? null : recent,
    } as JobDoc;
  }

  /** The playbook as `GET /api/jobs/{id}/playbook` would have answered at `at`, statistics of that time merged in. */
  async playbook(jobId: string, at: number): Promise<StoredVersion> {
    this.checkInstant(at);
    await this.jobs.get(jobId);
    const job = await this.fold(jobStream, jobStreamId(jobId), jobDecider, at);
    if (job.state.status === 'none') throw DomainError.notFound('Job');
    const playbook = await this.fold(playbookStream, playbookStreamId(jobId), playbookDecider, at);
    const last = playbook.events.at(-1)?.data;
    if (!last) return versionZero();
    const stats = await this.fold(playbookStatsStream, playbookStatsStreamId(jobId), playbookStatsDecider, at);
    return {
      version: last.version,
      content: withStats(playbook.state.content, stats.state),
      summary: last.summary,
      author: last.author,
      authorId: last.authorId,
      sourceRunId: last.sourceRunId,
      ops: last.ops,
      opCount: last.ops?.length ?? 0,
      dockerfileHash: last.dockerfileHash,
      graduated: last.graduated,
      createdAt: last.createdAt,
    };
  }

  /** An instant in the future has no answer yet: `validation_failed` naming `at`. */
  private checkInstant(at: number): void {
    if (at > this.clock())
      throw DomainError.validation([{ field: 'at', code: 'out_of_range', message: 'must not be in the future' }]);
  }

  /** The job's run count and latest runs at `at`, each run folded to that instant. */
  private async runs(jobId: string, at: number): Promise<{ count: number; recent: Array<RunRecord & PastRun> }> {
    const admitted = await this.fold(jobRunsStream, jobRunsStreamId(jobId), jobRunsDecider, at);
    const ids = admitted.events.flatMap((e) => (e.type === 'RunAdmitted' ? [e.data.runId] : []));
    const folded: Array<RunRecord & PastRun> = [];
    // Newest first; a run admitted but not yet queued at `at` does not exist yet.
    for (const runId of ids.reverse()) {
      if (folded.length >= recentRunsShown) break;
      const run = await this.fold(runStream, runStreamId(runId), runDecider, at);
      if (run.state.status === 'none') continue;
      const fellBack = run.events.some((e) => e.type === 'RunFellBack');
      folded.push({
        id: runId,
        number: run.state.number,
        status: run.state.status,
        mode: run.state.mode,
        fellBack,
        playbookVersion: run.state.playbookVersion,
        queuedAt: run.state.queuedAt,
      });
    }
    return { count: ids.length, recent: folded };
  }

  /** The events of a stream decided at or before `at`, and the state they fold to. */
  private async fold<E extends DomainEvent, S, K>(
    category: StreamCategory<E, K>,
    streamId: string,
    decider: Pick<Decider<unknown, E, S>, 'evolve'> & { initialState?: S },
    at: number,
  ): Promise<{ state: S; events: E[] }> {
    const recorded = await this.events.readStream(streamId);
    const events: E[] = [];
    for (const r of recorded) {
      if (r.metadata.ts > at) break;
      const decoded = category.decode<RecordedEvent & StoredEvent>(r);
      if (decoded) events.push(decoded.event as unknown as E);
    }
    const state = events.reduce((s, e) => decider.evolve(s, e), decider.initialState as S);
    return { state, events };
  }
}

interface PastRun {
  id: string;
  status: LastRun['status'];
  queuedAt: number;
  mode: JobDoc['modePin'] & string;
}
