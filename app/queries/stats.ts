import {
  aggregate,
  dayMs,
  gettingCheaper,
  hourMs,
  gettingLeaner,
  merge,
  overviewPeriod,
  percentileByOffset,
  segments,
  type OverviewRange,
  type StatsAgg,
} from '../../domain/stats.js';
import type { RunStatus } from '../../domain/job-types.js';
import { liveStatuses } from '../../domain/run.js';
import { jobsCollection, type JobDoc } from '../../projections/jobs.js';
import { playbookVersionsCollection, type PlaybookVersionDoc } from '../../projections/playbooks.js';
import { runsCollection, type RunDoc } from '../../projections/runs.js';
import {
  bucketAgg,
  bucketIds,
  statsDaysCollection,
  statsHoursCollection,
  statsRunsCollection,
  type StatsBucketDoc,
  type StatsRunDoc,
} from '../../projections/stats.js';
import type { DocumentStore } from '../../store/document-store.js';
import type { OverviewOutputBody, RunRef, Totals } from '../../schemas/stats.js';
import type { JobQueries } from './jobs.js';

export interface JobHistory {
  /** The job's runs queued since `from` that were not skipped, by number (deleted runs included). */
  runs: Array<StatsRunDoc & { runId: string }>;
  /** The playbook versions saved since `from`, by version. */
  versions: PlaybookVersionDoc[];
}

/** "Getting cheaper" looks at the last 90 days whatever the range. */
const cheaperWindowMs = 90 * dayMs;
const recentFailuresShown = 5;
/** Live runs are few (bounded by concurrency); this cap only bounds the answer. */
const runningShown = 500;

/**
 * The statistics read side (docs/design.md, "Stats"): everything comes from the stats read model's hour and day
 * buckets, plus the few single runs at the cut edges of a window, so a request reads about a hundred documents
 * whatever the number of runs.
 */
export class StatsQueries {
  constructor(
    private readonly docs: DocumentStore,
    private readonly jobs: JobQueries,
    private readonly workspaceId: string,
  ) {}

  async jobHistory(jobId: string, from: number): Promise<JobHistory> {
    await this.jobs.get(jobId);
    const workspaceId = this.workspaceId;
    const [runs, versions] = await Promise.all([
      this.docs
        .collection<StatsRunDoc>(statsRunsCollection)
        .find({ jobId, workspaceId, queuedAt: { $gte: from }, status: { $ne: 'skipped' } }, { sort: [['number', 1]] }),
      this.docs
        .collection<PlaybookVersionDoc>(playbookVersionsCollection)
        .find({ jobId, workspaceId, createdAt: { $gte: from } }, { sort: [['version', 1]] }),
    ]);
    return { runs: runs.map((r) => ({ ...r, runId: r._id })), versions };
  }

  async overview(range: OverviewRange, now: number): Promise<OverviewOutputBody> {
    const workspaceId = this.workspaceId;
    const period = overviewPeriod(range, now);
    const buckets = await this.buckets(
      period.bucket === 'hour' ? statsHoursCollection : statsDaysCollection,
      period.from,
      period.to,
      period.bucketMs,
    );
    // The day buckets this request has read already, reused by the other windows.
    const known = period.bucket === 'day' ? { from: period.from, to: period.to, docs: buckets } : null;
    const [previous, window, running, failures, any] = await Promise.all([
      this.window(period.previousFrom, period.previousTo, known),
      this.window(now - cheaperWindowMs, Math.ceil(now / dayMs) * dayMs, known),
      this.latest(liveStatuses, 1, runningShown),
      this.latest(['failed', 'timed_out'], -1, recentFailuresShown),
      this.docs.collection<StatsRunDoc>(statsRunsCollection).findOne({ workspaceId }),
    ]);
    const byStart = new Map(buckets.map((b) => [b.start, bucketAgg(b)]));
    const current = merge([...byStart.values()]);
    const perDay: OverviewOutputBody['perDay'] = [];
    const costByJob: OverviewOutputBody['costByJob'] = [];
    for (let start = period.from; start < period.to; start += period.bucketMs) {
      const agg = byStart.get(start);
      const c = agg?.counts;
      perDay.push({
        day: start,
        succeeded: c?.succeeded ?? 0,
        failed: c?.failed ?? 0,
        cancelled: c?.cancelled ?? 0,
        timedOut: c?.timedOut ?? 0,
        skipped: c?.skipped ?? 0,
        other: c?.other ?? 0,
        cost: agg?.cost ?? 0,
        tokens: agg?.tokens ?? 0,
      });
      for (const [jobId, j] of Object.entries(agg?.jobs ?? {}))
        costByJob.push({ day: start, jobId, jobName: j.jobName, cost: j.cost, tokens: j.tokens });
    }
    const cheaper = gettingCheaper(window.agg.jobs);
    const leaner = gettingLeaner(window.agg.jobs);
    // Names as the jobs are called now: a bucket keeps the name a run was queued under.
    const names = await this.jobNames([
      ...new Set([...costByJob.map((c) => c.jobId), ...cheaper.map((c) => c.jobId), ...leaner.map((c) => c.jobId)]),
    ]);
    const named = <T extends { jobId: string; jobName: string }>(x: T): T => ({
      ...x,
      jobName: names.get(x.jobId) ?? x.jobName,
    });
    return {
      range,
      bucket: period.bucket,
      bucketMs: period.bucketMs,
      from: period.from,
      to: period.to,
      current: totals(current),
      previous: totals(previous),
      perDay,
      costByJob: costByJob.map(named),
      running: running.map(runRef),
      recentFailures: failures.map(runRef),
      gettingCheaper: cheaper.map(named),
      gettingLeaner: leaner.map(named),
      hasRuns: any !== null,
    };
  }

  /** Runs of these statuses in queue order, read one status at a time so each read walks an index. */
  private async latest(statuses: readonly RunStatus[], order: 1 | -1, limit: number): Promise<RunDoc[]> {
    const runs = this.docs.collection<RunDoc>(runsCollection);
    const lists = await Promise.all(
      statuses.map((status) =>
        runs.find({ workspaceId: this.workspaceId, status }, { sort: [['queuedAt', order]], limit }),
      ),
    );
    return lists
      .flat()
      .sort((a, b) => order * (a.queuedAt - b.queuedAt) || order * a._id.localeCompare(b._id))
      .slice(0, limit);
  }

  private buckets(collection: string, from: number, to: number, step: number): Promise<StatsBucketDoc[]> {
    return this.docs
      .collection<StatsBucketDoc>(collection)
      .find({ _id: { $in: bucketIds(this.workspaceId, from, to, step) } }, { sort: [['start', 1]] });
  }

  /** What the runs queued in [start, end) sum to: whole days, whole hours, and single runs at the edges. */
  private async window(
    start: number,
    end: number,
    known: { from: number; to: number; docs: StatsBucketDoc[] } | null,
  ): Promise<{ agg: Omit<StatsAgg, 'durations'>; durations: number[][] }> {
    const parts = segments(start, end);
    const reads: Array<Promise<StatsAgg[]>> = [];
    for (const [a, b] of parts.days) {
      if (known && a >= known.from && b <= known.to)
        reads.push(Promise.resolve(known.docs.filter((d) => d.start >= a && d.start < b).map(bucketAgg)));
      else reads.push(this.buckets(statsDaysCollection, a, b, dayMs).then((docs) => docs.map(bucketAgg)));
    }
    for (const [a, b] of parts.hours)
      reads.push(this.buckets(statsHoursCollection, a, b, hourMs).then((docs) => docs.map(bucketAgg)));
    for (const [a, b] of parts.runs)
      reads.push(
        this.docs
          .collection<StatsRunDoc>(statsRunsCollection)
          .find({ workspaceId: this.workspaceId, queuedAt: { $gte: a, $lt: b } })
          .then((runs) => [aggregate(runs.map((r) => ({ ...r, runId: r._id })))]),
      );
    return merge((await Promise.all(reads)).flat());
  }

  private async jobNames(ids: string[]): Promise<Map<string, string>> {
    if (ids.length === 0) return new Map();
    const jobs = await this.docs
      .collection<JobDoc>(jobsCollection)
      .find({ _id: { $in: ids }, workspaceId: this.workspaceId });
    return new Map(jobs.map((j) => [j._id, j.name]));
  }
}

function totals({ agg, durations }: { agg: Omit<StatsAgg, 'durations'>; durations: number[][] }): Totals {
  const succeeded = agg.counts.succeeded;
  const failed = agg.counts.failed + agg.counts.timedOut;
  return {
    runs: agg.runs,
    succeeded,
    failed,
    successRate: succeeded + failed === 0 ? 0 : succeeded / (succeeded + failed),
    p50Ms: percentileByOffset(durations, 50),
    p95Ms: percentileByOffset(durations, 95),
    runCost: agg.runCost,
    learningCost: agg.learningCost,
    runTokens: agg.runTokens,
    learningTokens: agg.learningTokens,
  };
}

function runRef(r: RunDoc): RunRef {
  return {
    id: r._id,
    jobId: r.jobId,
    jobName: r.jobName,
    number: r.number,
    status: r.status,
    mode: r.mode,
    queuedAt: r.queuedAt,
    startedAt: r.startedAt,
    error: r.error,
    summary: r.summary,
  };
}
