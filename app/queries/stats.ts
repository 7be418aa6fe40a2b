import {
  addTotals,
  dayMs,
  edgePoints,
  gettingCheaper,
  gettingLeaner,
  hourMs,
  minSucceededRuns,
  overviewPeriod,
  percentileByOffset,
  segments,
  summarize,
  type BucketRun,
  type BucketTotals,
  type JobPoints,
  type JobTotals,
  type OverviewRange,
} from '../../domain/stats.js';
import type { RunStatus } from '../../domain/job-types.js';
import { liveStatuses } from '../../domain/run.js';
import { jobsCollection, type JobDoc } from '../../projections/jobs.js';
import { playbookVersionsCollection, type PlaybookVersionDoc } from '../../projections/playbooks.js';
import { runsCollection, type RunDoc } from '../../projections/runs.js';
import { statsRunsCollection, type StatsRunDoc } from '../../projections/stats.js';
import type { DocumentStore } from '../../store/document-store.js';
import type { OverviewOutputBody, RunRef, Totals } from '../../schemas/stats.js';
import type { JobQueries } from './jobs.js';
import { BucketReader, StatsBucketCache } from './stats-buckets.js';

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
/** The rules compare this many first and latest runs. */
const edgeRuns = 3;

/**
 * A stretch of time as the read model answers it: a whole day, a whole hour, or the runs of part of an hour
 * (`runs` is set for the last two).
 */
interface Piece {
  start: number;
  totals: BucketTotals;
  durations: () => ArrayLike<number>;
  runs: readonly BucketRun[] | null;
}

const floorDay = (t: number) => Math.floor(t / dayMs) * dayMs;
const floorHour = (t: number) => Math.floor(t / hourMs) * hourMs;

/**
 * The statistics read side (docs/design.md, "Stats"): everything comes from the stats read model's day and hour
 * buckets, read by revision through a cache shared by the process's requests, so a request reads a few small
 * documents whatever the number of runs, and only what changed since the last one.
 */
export class StatsQueries {
  constructor(
    private readonly docs: DocumentStore,
    private readonly jobs: JobQueries,
    private readonly workspaceId: string,
    private readonly cache: StatsBucketCache = new StatsBucketCache(),
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
    const cheaperFrom = now - cheaperWindowMs;
    const cheaperTo = Math.ceil(now / dayMs) * dayMs;
    const reader = new BucketReader(this.docs, workspaceId, this.cache);
    const reads = Promise.all([
      this.latest(liveStatuses, 1, runningShown),
      this.docs.collection<StatsRunDoc>(statsRunsCollection).findOne({ workspaceId }),
    ]);
    // Tomorrow too: the latest failures may come from a clock a little ahead.
    await reader.span(floorDay(Math.min(period.previousFrom, cheaperFrom)), Math.max(period.to, cheaperTo) + dayMs);
    // Every bucket the three windows touch, read in two queries at most.
    const starts: number[] = [];
    for (let start = period.from; start < period.to; start += period.bucketMs) starts.push(start);
    const days = period.bucket === 'day' ? [...starts] : [];
    const hours = period.bucket === 'hour' ? [...starts] : [];
    for (const [a, b] of [
      [period.previousFrom, period.previousTo],
      [cheaperFrom, cheaperTo],
    ] as const) {
      const parts = segments(a, b);
      for (const [x, y] of parts.days) for (let d = x; d < y; d += dayMs) days.push(d);
      for (const [x, y] of parts.hours) for (let h = x; h < y; h += hourMs) hours.push(h);
      for (const [x] of parts.runs) hours.push(floorHour(x));
    }
    await reader.load(days, hours);

    const current = starts.map((start) =>
      period.bucket === 'hour' ? hourPiece(reader, start) : dayPiece(reader, start),
    );
    const previous = window(reader, period.previousFrom, period.previousTo);
    const cheaperWindow = window(reader, cheaperFrom, cheaperTo);
    const judged = await this.judged(reader, cheaperWindow);
    const cheaper = gettingCheaper(judged);
    const leaner = gettingLeaner(judged);
    const failures = await this.recentFailures(reader);
    const [running, any] = await reads;

    const perDay: OverviewOutputBody['perDay'] = [];
    const costByJob: OverviewOutputBody['costByJob'] = [];
    for (const { start, totals: t } of current) {
      perDay.push({ day: start, ...t.counts, cost: t.cost, tokens: t.tokens });
      for (const [jobId, jobName, cost, tokens] of t.jobs) costByJob.push({ day: start, jobId, jobName, cost, tokens });
    }
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

  /**
   * The jobs the cheaper/leaner rules judge: those with enough succeeded runs in the window, with their first and
   * latest three. Only the buckets holding those runs are read run by run: for each job, the pieces from either end
   * of the window until three of its succeeded runs are in, which for a job that runs daily is the window's first
   * hours and today.
   */
  private async judged(reader: BucketReader, pieces: Piece[]): Promise<Record<string, JobPoints>> {
    const byJob = pieces.map((p) => jobIndex(p.totals));
    // Each job's succeeded runs in the window, and its name as the latest piece holding it gives it.
    const all = new Map<string, { jobName: string; succeeded: number }>();
    for (const p of pieces)
      for (const job of p.totals.jobs) {
        const j = all.get(job[0]);
        if (j) {
          j.jobName = job[1];
          j.succeeded += job[4];
        } else all.set(job[0], { jobName: job[1], succeeded: job[4] });
      }
    const jobs = [...all].filter(([, j]) => j.succeeded >= minSucceededRuns);
    if (jobs.length === 0) return {};
    const needed = new Set<Piece>();
    for (const [jobId] of jobs) {
      for (const order of [pieces.keys(), [...pieces.keys()].reverse()]) {
        let seen = 0;
        for (const i of order) {
          const n = byJob[i]!.get(jobId)?.[4] ?? 0;
          if (n === 0) continue;
          needed.add(pieces[i]!);
          seen += n;
          if (seen >= edgeRuns) break;
        }
      }
    }
    const wholeDays = pieces.filter((p) => needed.has(p) && p.runs === null).map((p) => p.start);
    await reader.load(
      [],
      wholeDays.flatMap((d) => reader.hoursOf(d)),
    );
    const runs = function* () {
      for (const p of pieces) {
        if (!needed.has(p)) continue;
        if (p.runs) yield* p.runs;
        else for (const h of reader.hoursOf(p.start)) yield* reader.hour(h)?.runs ?? [];
      }
    };
    const edges = edgePoints(runs());
    const out: Record<string, JobPoints> = {};
    for (const [jobId, { jobName, succeeded }] of jobs) {
      const e = edges.get(jobId) ?? { first: [], last: [] };
      out[jobId] = { jobName, succeeded, first: e.first, last: e.last };
    }
    return out;
  }

  /**
   * The latest failed or timed-out runs. The runs read model's index gives them oldest first, so asking it for the
   * newest sorts every failure there is; instead the stats buckets name the candidates (the failures of the latest
   * days that have any, whole days at a time) and the runs read model is read by id. It is asked in full only when
   * the days read run out first: buckets keep deleted runs, which the runs read model no longer has.
   */
  private async recentFailures(reader: BucketReader): Promise<RunDoc[]> {
    const days = reader.daysWithRuns().reverse();
    const found: RunDoc[] = [];
    let next = 0;
    while (next < days.length) {
      const batch: number[] = [];
      for (let n = 0; next < days.length && n < recentFailuresShown - found.length;) {
        const day = days[next++]!;
        await reader.load([day], []);
        const c = reader.day(day)?.totals.counts;
        if (!c || c.failed + c.timedOut === 0) continue;
        batch.push(day);
        n += c.failed + c.timedOut;
      }
      if (batch.length === 0) break;
      await reader.load(
        [],
        batch.flatMap((d) => reader.hoursOf(d)),
      );
      const ids: string[] = [];
      for (const d of batch)
        for (const h of reader.hoursOf(d))
          for (const r of reader.hour(h)?.runs ?? [])
            if (r.counted === 'failed' || r.counted === 'timedOut') ids.push(r.runId);
      // By id alone: with the workspace in the filter too, SQLite prefers an index on the workspace and reads them all.
      const docs = ids.length > 0 ? await this.docs.collection<RunDoc>(runsCollection).find({ _id: { $in: ids } }) : [];
      found.push(...docs.filter((r) => r.workspaceId === this.workspaceId));
      // Every failure of the days read is in `found`, and every other one is older than all of them.
      if (found.length >= recentFailuresShown) return inQueueOrder(found, -1).slice(0, recentFailuresShown);
    }
    return this.latest(['failed', 'timed_out'], -1, recentFailuresShown);
  }

  /** Runs of these statuses in queue order, read one status at a time so each read walks an index. */
  private async latest(statuses: readonly RunStatus[], order: 1 | -1, limit: number): Promise<RunDoc[]> {
    const runs = this.docs.collection<RunDoc>(runsCollection);
    const lists = await Promise.all(
      statuses.map((status) =>
        runs.find({ workspaceId: this.workspaceId, status }, { sort: [['queuedAt', order]], limit }),
      ),
    );
    return inQueueOrder(lists.flat(), order).slice(0, limit);
  }

  private async jobNames(ids: string[]): Promise<Map<string, string>> {
    if (ids.length === 0) return new Map();
    // By id alone, as for the failures above.
    const jobs = await this.docs.collection<JobDoc>(jobsCollection).find({ _id: { $in: ids } });
    return new Map(jobs.filter((j) => j.workspaceId === this.workspaceId).map((j) => [j._id, j.name]));
  }
}

const inQueueOrder = (runs: RunDoc[], order: 1 | -1) =>
  runs.sort((a, b) => order * (a.queuedAt - b.queuedAt) || order * a._id.localeCompare(b._id));

const empty = summarize([]);

function dayPiece(reader: BucketReader, start: number): Piece {
  const day = reader.day(start);
  if (!day) return { start, totals: empty.totals, durations: () => empty.durations, runs: null };
  return { start, totals: day.totals, durations: () => day.durations(), runs: null };
}

function hourPiece(reader: BucketReader, start: number): Piece {
  const hour = reader.hour(start);
  const runs = hour?.runs ?? [];
  return { start, totals: hour?.totals ?? empty.totals, durations: () => hour?.durations ?? [], runs };
}

/** The runs of [start, end) within one hour. */
function runsPiece(reader: BucketReader, start: number, end: number): Piece {
  const runs = (reader.hour(floorHour(start))?.runs ?? []).filter((r) => r.queuedAt >= start && r.queuedAt < end);
  const { totals: t, durations } = summarize(runs);
  return { start, totals: t, durations: () => durations, runs };
}

/** What the runs queued in [start, end) sum to, as pieces in time order: whole days, whole hours, runs at the edges. */
function window(reader: BucketReader, start: number, end: number): Piece[] {
  const parts = segments(start, end);
  const out: Piece[] = [];
  for (const [a, b] of parts.days) for (let d = a; d < b; d += dayMs) out.push(dayPiece(reader, d));
  for (const [a, b] of parts.hours) for (let h = a; h < b; h += hourMs) out.push(hourPiece(reader, h));
  for (const [a, b] of parts.runs) out.push(runsPiece(reader, a, b));
  return out.sort((a, b) => a.start - b.start);
}

/** A bucket's jobs by id, kept with the bucket (which the cache may keep for many requests). */
const jobIndexes = new WeakMap<BucketTotals, Map<string, JobTotals>>();
function jobIndex(t: BucketTotals): Map<string, JobTotals> {
  let index = jobIndexes.get(t);
  if (!index) jobIndexes.set(t, (index = new Map(t.jobs.map((j) => [j[0], j]))));
  return index;
}

function totals(pieces: readonly Piece[]): Totals {
  const t = addTotals(
    pieces.map((p) => p.totals),
    false,
  );
  const durations = pieces.map((p) => p.durations()).filter((d) => d.length > 0);
  const succeeded = t.counts.succeeded;
  const failed = t.counts.failed + t.counts.timedOut;
  return {
    runs: t.runs,
    succeeded,
    failed,
    successRate: succeeded + failed === 0 ? 0 : succeeded / (succeeded + failed),
    p50Ms: percentileByOffset(durations, 50),
    p95Ms: percentileByOffset(durations, 95),
    runCost: t.runCost,
    learningCost: t.learningCost,
    runTokens: t.runTokens,
    learningTokens: t.learningTokens,
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
