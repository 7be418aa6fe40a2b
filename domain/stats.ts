import type { RunFigures } from './run-figures.js';

/**
 * The statistics rules in one pure place (docs/design.md, "Stats"): what a bucket of runs sums to, how buckets
 * merge, the exact percentile by offset, the overview's periods, and the "getting cheaper / leaner" rules.
 */

export const hourMs = 60 * 60 * 1000;
export const dayMs = 24 * hourMs;

export interface StatusCounts {
  succeeded: number;
  failed: number;
  cancelled: number;
  timedOut: number;
  skipped: number;
  /** Live runs: queued, provisioning, running, verifying. */
  other: number;
}

/** One succeeded run, as the cheaper/leaner rules read it: [queuedAt, number, cost, tokens]. */
export type SuccessPoint = [queuedAt: number, number: number, cost: number, tokens: number];

/** A job's share of a bucket. `first`/`last`: its earliest and latest three succeeded runs in the bucket. */
export interface JobSlice {
  jobName: string;
  /** Σ(cost + reflection + verify) over every run, skipped included. */
  cost: number;
  /** Σ(tokens + learning tokens). */
  tokens: number;
  succeeded: number;
  first: SuccessPoint[];
  last: SuccessPoint[];
}

/** What a set of runs sums to; a bucket of the read model holds one, and buckets merge into one. */
export interface StatsAgg {
  counts: StatusCounts;
  /** Σ(cost + reflection + verify) over every run, skipped included. */
  cost: number;
  tokens: number;
  /** The totals (skipped runs left out). */
  runs: number;
  runCost: number;
  learningCost: number;
  runTokens: number;
  learningTokens: number;
  /** msTotal of the non-skipped runs that have one, ascending. */
  durations: number[];
  jobs: Record<string, JobSlice>;
}

export const emptyCounts = (): StatusCounts => ({
  succeeded: 0,
  failed: 0,
  cancelled: 0,
  timedOut: 0,
  skipped: 0,
  other: 0,
});

export const emptyAgg = (): StatsAgg => ({
  counts: emptyCounts(),
  cost: 0,
  tokens: 0,
  runs: 0,
  runCost: 0,
  learningCost: 0,
  runTokens: 0,
  learningTokens: 0,
  durations: [],
  jobs: {},
});

const countKey = (status: RunFigures['status']): keyof StatusCounts =>
  status === 'succeeded'
    ? 'succeeded'
    : status === 'failed'
      ? 'failed'
      : status === 'cancelled'
        ? 'cancelled'
        : status === 'timed_out'
          ? 'timedOut'
          : status === 'skipped'
            ? 'skipped'
            : 'other';

const byQueue = (a: SuccessPoint, b: SuccessPoint) => a[0] - b[0] || a[1] - b[1];
const edge = 3;

/** Sums runs into one bucket. */
export function aggregate(runs: readonly RunFigures[]): StatsAgg {
  const agg = emptyAgg();
  const durations: number[] = [];
  for (const r of runs) {
    const learning = r.reflectionCost + r.verifyCost;
    agg.counts[countKey(r.status)]++;
    agg.cost += r.cost + learning;
    agg.tokens += r.tokens + r.learningTokens;
    const job = (agg.jobs[r.jobId] ??= { jobName: r.jobName, cost: 0, tokens: 0, succeeded: 0, first: [], last: [] });
    job.cost += r.cost + learning;
    job.tokens += r.tokens + r.learningTokens;
    if (r.status === 'succeeded') {
      job.succeeded++;
      job.first.push([r.queuedAt, r.number, r.cost, r.tokens]);
    }
    if (r.status === 'skipped') continue;
    agg.runs++;
    agg.runCost += r.cost;
    agg.learningCost += learning;
    agg.runTokens += r.tokens;
    agg.learningTokens += r.learningTokens;
    if (r.msTotal !== null) durations.push(r.msTotal);
  }
  for (const job of Object.values(agg.jobs)) {
    const all = job.first.sort(byQueue);
    job.first = all.slice(0, edge);
    job.last = all.slice(-edge);
  }
  agg.durations = durations.sort((a, b) => a - b);
  return agg;
}

/** Merges buckets; the durations stay one sorted list per bucket (see `valueAtOffset`). */
export function merge(aggs: readonly StatsAgg[]): { agg: Omit<StatsAgg, 'durations'>; durations: number[][] } {
  const out = emptyAgg();
  const durations: number[][] = [];
  for (const a of aggs) {
    for (const k of Object.keys(out.counts) as Array<keyof StatusCounts>) out.counts[k] += a.counts[k];
    out.cost += a.cost;
    out.tokens += a.tokens;
    out.runs += a.runs;
    out.runCost += a.runCost;
    out.learningCost += a.learningCost;
    out.runTokens += a.runTokens;
    out.learningTokens += a.learningTokens;
    if (a.durations.length > 0) durations.push(a.durations);
    for (const [jobId, s] of Object.entries(a.jobs)) {
      const j = out.jobs[jobId];
      if (!j) {
        out.jobs[jobId] = { ...s, first: [...s.first], last: [...s.last] };
        continue;
      }
      j.cost += s.cost;
      j.tokens += s.tokens;
      j.succeeded += s.succeeded;
      j.first = [...j.first, ...s.first].sort(byQueue).slice(0, edge);
      j.last = [...j.last, ...s.last].sort(byQueue).slice(-edge);
    }
  }
  const { durations: _empty, ...agg } = out;
  return { agg, durations };
}

/** How many values of an ascending list are ≤ v. */
function countAtMost(list: readonly number[], v: number): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (list[mid]! <= v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * The value at `offset` (0-based) of all the lists' values in ascending order, without merging them: a binary
 * search over integer values, counting with a binary search in each list. Exact, and about
 * lists × log(list) × log(range) steps: a few thousand for 90 day buckets of 100,000 runs.
 */
export function valueAtOffset(lists: readonly (readonly number[])[], offset: number): number {
  let lo = Infinity;
  let hi = -Infinity;
  for (const l of lists) {
    if (l.length === 0) continue;
    lo = Math.min(lo, l[0]!);
    hi = Math.max(hi, l[l.length - 1]!);
  }
  if (lo === Infinity) return 0;
  // The smallest integer v with more than `offset` values ≤ v is the value at that offset.
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2);
    let n = 0;
    for (const l of lists) n += countAtMost(l, mid);
    if (n > offset) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/** The percentile by offset ⌊(n−1)·q⌋ of the ascending values, q in whole percent (integer arithmetic, no rounding). */
export function percentileByOffset(lists: readonly (readonly number[])[], percent: number): number {
  let n = 0;
  for (const l of lists) n += l.length;
  if (n === 0) return 0;
  return valueAtOffset(lists, Math.floor(((n - 1) * percent) / 100));
}

export type OverviewRange = '24h' | '7d' | '30d' | '90d';

export interface Period {
  bucket: 'hour' | 'day';
  bucketMs: number;
  /** Start of the first bucket. */
  from: number;
  /** End of the bucket holding `now` (exclusive). */
  to: number;
  /** The previous period, cut at the same point: [from − span, now − span). */
  previousFrom: number;
  previousTo: number;
}

const floorTo = (t: number, unit: number) => Math.floor(t / unit) * unit;
const ceilTo = (t: number, unit: number) => Math.ceil(t / unit) * unit;

/** Whole buckets: 24 hours ending with the current hour, or N UTC days including today. */
export function overviewPeriod(range: OverviewRange, now: number): Period {
  const bucketMs = range === '24h' ? hourMs : dayMs;
  const count = range === '24h' ? 24 : range === '7d' ? 7 : range === '30d' ? 30 : 90;
  const to = floorTo(now, bucketMs) + bucketMs;
  const from = to - count * bucketMs;
  const span = count * bucketMs;
  return {
    bucket: range === '24h' ? 'hour' : 'day',
    bucketMs,
    from,
    to,
    previousFrom: from - span,
    previousTo: now - span,
  };
}

/** An interval [start, end) as the read model can answer it: whole days, whole hours, and runs at the edges. */
export interface Segments {
  days: Array<[number, number]>;
  hours: Array<[number, number]>;
  runs: Array<[number, number]>;
}

/** Cuts [start, end) into the coarsest buckets that fit, so a query reads few documents and few single runs. */
export function segments(start: number, end: number): Segments {
  const out: Segments = { days: [], hours: [], runs: [] };
  if (end <= start) return out;
  const push = (list: Array<[number, number]>, a: number, b: number) => {
    if (b > a) list.push([a, b]);
  };
  const byHours = (a: number, b: number) => {
    const h0 = ceilTo(a, hourMs);
    const h1 = floorTo(b, hourMs);
    if (h0 >= h1) return push(out.runs, a, b);
    push(out.runs, a, h0);
    push(out.hours, h0, h1);
    push(out.runs, h1, b);
  };
  const d0 = ceilTo(start, dayMs);
  const d1 = floorTo(end, dayMs);
  if (d0 >= d1) {
    byHours(start, end);
    return out;
  }
  byHours(start, d0);
  push(out.days, d0, d1);
  byHours(d1, end);
  return out;
}

export interface CheaperJob {
  jobId: string;
  jobName: string;
  firstCost: number;
  recentCost: number;
  dropPct: number;
  runs: number;
}

export interface LeanerJob {
  jobId: string;
  jobName: string;
  firstTokens: number;
  recentTokens: number;
  tokenDropPct: number;
  runs: number;
}

/** Jobs need this many succeeded runs in the window to be judged. */
export const minSucceededRuns = 6;
const topJobs = 5;

interface Drop {
  jobId: string;
  jobName: string;
  first: number;
  recent: number;
  drop: number;
  runs: number;
}

/**
 * The first three against the latest three succeeded runs of each job: at least six runs, a first sum above 0 and a
 * latest sum below it; averages are the sums divided by 3 (integer), the drop is 1 − recent/first of those averages
 * (of the sums when the first average rounds to 0). Highest drop first, ties by job name then id, top 5.
 */
function drops(jobs: Record<string, JobSlice>, pick: 2 | 3): Drop[] {
  const out: Drop[] = [];
  for (const [jobId, j] of Object.entries(jobs)) {
    if (j.succeeded < minSucceededRuns) continue;
    const firstSum = j.first.reduce((s, p) => s + p[pick], 0);
    const recentSum = j.last.reduce((s, p) => s + p[pick], 0);
    if (!(firstSum > 0 && recentSum < firstSum)) continue;
    const first = Math.floor(firstSum / edge);
    const recent = Math.floor(recentSum / edge);
    const drop = first > 0 ? 1 - recent / first : 1 - recentSum / firstSum;
    out.push({ jobId, jobName: j.jobName, first, recent, drop, runs: j.succeeded });
  }
  out.sort((a, b) => b.drop - a.drop || a.jobName.localeCompare(b.jobName) || a.jobId.localeCompare(b.jobId));
  return out.slice(0, topJobs);
}

export function gettingCheaper(jobs: Record<string, JobSlice>): CheaperJob[] {
  return drops(jobs, 2).map((d) => ({
    jobId: d.jobId,
    jobName: d.jobName,
    firstCost: d.first,
    recentCost: d.recent,
    dropPct: d.drop,
    runs: d.runs,
  }));
}

export function gettingLeaner(jobs: Record<string, JobSlice>): LeanerJob[] {
  return drops(jobs, 3).map((d) => ({
    jobId: d.jobId,
    jobName: d.jobName,
    firstTokens: d.first,
    recentTokens: d.recent,
    tokenDropPct: d.drop,
    runs: d.runs,
  }));
}
