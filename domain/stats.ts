import type { RunFigures } from './run-figures.js';

/**
 * The statistics rules in one pure place (docs/design.md, "Stats"): what a bucket of runs sums to, how buckets
 * add up, the exact percentile by offset, the overview's periods, and the "getting cheaper / leaner" rules.
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

export type CountKey = keyof StatusCounts;

/** One succeeded run, as the cheaper/leaner rules read it: [queuedAt, number, cost, tokens]. */
export type SuccessPoint = [queuedAt: number, number: number, cost: number, tokens: number];

/** What a bucket needs to know of one run. */
export interface BucketRun {
  runId: string;
  jobId: string;
  jobName: string;
  queuedAt: number;
  number: number;
  /** The status as a bucket counts it: every live status is `other`. */
  counted: CountKey;
  /** micro-USD of the run itself. */
  cost: number;
  /** Reflection and verification. */
  learningCost: number;
  tokens: number;
  learningTokens: number;
  msTotal: number | null;
}

/** A job's share of a bucket: [jobId, jobName (as its latest run in the bucket was queued), cost, tokens, succeeded]. */
export type JobTotals = [jobId: string, jobName: string, cost: number, tokens: number, succeeded: number];

/** What a set of runs sums to, without its durations. */
export interface BucketTotals {
  counts: StatusCounts;
  /** Σ(cost + reflection + verify) over every run, skipped included. */
  cost: number;
  /** Σ(tokens + learning tokens), skipped included. */
  tokens: number;
  /** The totals (skipped runs left out). */
  runs: number;
  runCost: number;
  learningCost: number;
  runTokens: number;
  learningTokens: number;
  /** Per job, in the order of its first run in the bucket. */
  jobs: JobTotals[];
}

export const emptyCounts = (): StatusCounts => ({
  succeeded: 0,
  failed: 0,
  cancelled: 0,
  timedOut: 0,
  skipped: 0,
  other: 0,
});

export const emptyTotals = (): BucketTotals => ({
  counts: emptyCounts(),
  cost: 0,
  tokens: 0,
  runs: 0,
  runCost: 0,
  learningCost: 0,
  runTokens: 0,
  learningTokens: 0,
  jobs: [],
});

export const countKey = (status: RunFigures['status']): CountKey =>
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

/** A run's figures as a bucket reads them. */
export const bucketRun = (f: RunFigures): BucketRun => ({
  runId: f.runId,
  jobId: f.jobId,
  jobName: f.jobName,
  queuedAt: f.queuedAt,
  number: f.number,
  counted: countKey(f.status),
  cost: f.cost,
  learningCost: f.reflectionCost + f.verifyCost,
  tokens: f.tokens,
  learningTokens: f.learningTokens,
  msTotal: f.msTotal,
});

/** Queue order: queue time, then number, then id (a bucket's runs and the rules' "first" and "latest"). */
export const byQueue = (a: BucketRun, b: BucketRun): number =>
  a.queuedAt - b.queuedAt || a.number - b.number || (a.runId < b.runId ? -1 : a.runId > b.runId ? 1 : 0);

/** Sums runs into one bucket; `durations` are the msTotal values of the non-skipped runs that have one, ascending. */
export function summarize(runs: Iterable<BucketRun>): { totals: BucketTotals; durations: number[] } {
  const t = emptyTotals();
  const jobs = new Map<string, JobTotals>();
  const durations: number[] = [];
  for (const r of runs) {
    t.counts[r.counted]++;
    t.cost += r.cost + r.learningCost;
    t.tokens += r.tokens + r.learningTokens;
    let job = jobs.get(r.jobId);
    if (!job) jobs.set(r.jobId, (job = [r.jobId, r.jobName, 0, 0, 0]));
    job[1] = r.jobName;
    job[2] += r.cost + r.learningCost;
    job[3] += r.tokens + r.learningTokens;
    if (r.counted === 'succeeded') job[4]++;
    if (r.counted === 'skipped') continue;
    t.runs++;
    t.runCost += r.cost;
    t.learningCost += r.learningCost;
    t.runTokens += r.tokens;
    t.learningTokens += r.learningTokens;
    if (r.msTotal !== null) durations.push(r.msTotal);
  }
  t.jobs = [...jobs.values()];
  return { totals: t, durations: durations.sort((a, b) => a - b) };
}

/**
 * What buckets sum to together, per job too unless `jobs` is false (a job's name: the one its latest bucket gives,
 * buckets in time order).
 */
export function addTotals(list: Iterable<BucketTotals>, withJobs = true): BucketTotals {
  const out = emptyTotals();
  const jobs = new Map<string, JobTotals>();
  for (const t of list) {
    const c = out.counts;
    c.succeeded += t.counts.succeeded;
    c.failed += t.counts.failed;
    c.cancelled += t.counts.cancelled;
    c.timedOut += t.counts.timedOut;
    c.skipped += t.counts.skipped;
    c.other += t.counts.other;
    out.cost += t.cost;
    out.tokens += t.tokens;
    out.runs += t.runs;
    out.runCost += t.runCost;
    out.learningCost += t.learningCost;
    out.runTokens += t.runTokens;
    out.learningTokens += t.learningTokens;
    if (!withJobs) continue;
    for (const job of t.jobs) {
      const j = jobs.get(job[0]);
      if (!j) {
        jobs.set(job[0], [job[0], job[1], job[2], job[3], job[4]]);
        continue;
      }
      j[1] = job[1];
      j[2] += job[2];
      j[3] += job[3];
      j[4] += job[4];
    }
  }
  out.jobs = [...jobs.values()];
  return out;
}

/** How many values of an ascending list are ≤ v. */
function countAtMost(list: ArrayLike<number>, v: number): number {
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
export function valueAtOffset(lists: readonly ArrayLike<number>[], offset: number): number {
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
export function percentileByOffset(lists: readonly ArrayLike<number>[], percent: number): number {
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
/** The rules compare the first this many succeeded runs with the latest this many. */
const edge = 3;

/** What the rules read of one job's succeeded runs in the window. */
export interface JobPoints {
  jobName: string;
  succeeded: number;
  /** Its first three succeeded runs, in queue order. */
  first: SuccessPoint[];
  /** Its latest three, in queue order. */
  last: SuccessPoint[];
}

/** Per job, the first and the latest three succeeded runs among `runs`, which come in queue order. */
export function edgePoints(runs: Iterable<BucketRun>): Map<string, Pick<JobPoints, 'first' | 'last'>> {
  const out = new Map<string, Pick<JobPoints, 'first' | 'last'>>();
  for (const r of runs) {
    if (r.counted !== 'succeeded') continue;
    let j = out.get(r.jobId);
    if (!j) out.set(r.jobId, (j = { first: [], last: [] }));
    const point: SuccessPoint = [r.queuedAt, r.number, r.cost, r.tokens];
    if (j.first.length < edge) j.first.push(point);
    j.last.push(point);
    if (j.last.length > edge) j.last.shift();
  }
  return out;
}

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
function drops(jobs: Record<string, JobPoints>, pick: 2 | 3): Drop[] {
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

export function gettingCheaper(jobs: Record<string, JobPoints>): CheaperJob[] {
  return drops(jobs, 2).map((d) => ({
    jobId: d.jobId,
    jobName: d.jobName,
    firstCost: d.first,
    recentCost: d.recent,
    dropPct: d.drop,
    runs: d.runs,
  }));
}

export function gettingLeaner(jobs: Record<string, JobPoints>): LeanerJob[] {
  return drops(jobs, 3).map((d) => ({
    jobId: d.jobId,
    jobName: d.jobName,
    firstTokens: d.first,
    recentTokens: d.recent,
    tokenDropPct: d.drop,
    runs: d.runs,
  }));
}
