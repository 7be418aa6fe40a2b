import type { Schemas } from './api.js';

/** What the dashboard reads: `GET /api/stats/overview` (docs/design.md, "Stats"). */
export type Overview = Schemas['OverviewOutputBody'];
export type OverviewRange = Overview['range'];

export const overviewRanges: ReadonlyArray<{ value: OverviewRange; label: string; period: string }> = [
  { value: '24h', label: '24 hours', period: 'the previous 24 hours' },
  { value: '7d', label: '7 days', period: 'the previous 7 days' },
  { value: '30d', label: '30 days', period: 'the previous 30 days' },
  { value: '90d', label: '90 days', period: 'the previous 90 days' },
];
export const defaultRange: OverviewRange = '7d';

/** The range the URL names, or the default for anything else (a hand-edited or stale link still opens the page). */
export function rangeOf(raw: string | null): OverviewRange {
  return overviewRanges.find((r) => r.value === raw)?.value ?? defaultRange;
}

/** Whether a rise is good news (success rate), bad news (cost, duration) or neither (the number of runs). */
export type Better = 'higher' | 'lower' | 'neither';

export interface Change {
  /** What is shown: "+25%", "−3 pts", "no change", "new". */
  text: string;
  /** The same for a screen reader and a tooltip: "up 25% from 4 in the previous 7 days". */
  long: string;
  tone: 'good' | 'bad' | 'neutral';
  direction: 'up' | 'down' | 'flat';
}

/**
 * The change of a figure against the previous period. Counts, costs and durations change in percent of the previous
 * value; a rate (0..1) changes in percentage points, since "+50%" of a 60% success rate would read as 90%.
 */
export function changeOf(
  current: number,
  previous: number,
  opts: { better: Better; kind: 'amount' | 'rate'; period: string; show: (v: number) => string },
): Change {
  const tone = (up: boolean): Change['tone'] =>
    opts.better === 'neither' ? 'neutral' : (opts.better === 'higher') === up ? 'good' : 'bad';
  const from = `${opts.show(previous)} in ${opts.period}`;
  if (current === previous)
    return { text: 'no change', long: `the same as ${from}`, tone: 'neutral', direction: 'flat' };
  const up = current > previous;
  if (opts.kind === 'rate') {
    const pts = Math.round(Math.abs(current - previous) * 100);
    if (pts === 0) return { text: 'no change', long: `about the same as ${from}`, tone: 'neutral', direction: 'flat' };
    return {
      text: `${up ? '+' : '−'}${pts} pts`,
      long: `${up ? 'up' : 'down'} ${pts} points from ${from}`,
      tone: tone(up),
      direction: up ? 'up' : 'down',
    };
  }
  if (previous === 0) return { text: 'new', long: `none in ${opts.period}`, tone: tone(true), direction: 'up' };
  const pct = Math.round((Math.abs(current - previous) / previous) * 100);
  if (pct === 0) return { text: 'no change', long: `about the same as ${from}`, tone: 'neutral', direction: 'flat' };
  return {
    text: `${up ? '+' : '−'}${pct}%`,
    long: `${up ? 'up' : 'down'} ${pct}% from ${from}`,
    tone: tone(up),
    direction: up ? 'up' : 'down',
  };
}

export interface JobCostTotal {
  jobId: string;
  jobName: string;
  cost: number;
  tokens: number;
}

/** The range's cost per job (the route answers it per bucket), most expensive first, then by name. */
export function costPerJob(rows: Overview['costByJob']): JobCostTotal[] {
  const byJob = new Map<string, JobCostTotal>();
  for (const r of rows) {
    const j = byJob.get(r.jobId) ?? { jobId: r.jobId, jobName: r.jobName, cost: 0, tokens: 0 };
    j.cost += r.cost;
    j.tokens += r.tokens;
    byJob.set(r.jobId, j);
  }
  return [...byJob.values()].sort((a, b) => b.cost - a.cost || a.jobName.localeCompare(b.jobName));
}

// Day buckets are UTC days (the route's), so they are named in UTC: a local zone would shift them onto the day before.
const dayLabel = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', timeZone: 'UTC' });
const dayLong = new Intl.DateTimeFormat(undefined, {
  weekday: 'short',
  month: 'short',
  day: 'numeric',
  timeZone: 'UTC',
});
const hourLabel = new Intl.DateTimeFormat(undefined, { hour: 'numeric', minute: '2-digit' });
const hourLong = new Intl.DateTimeFormat(undefined, {
  month: 'short',
  day: 'numeric',
  hour: 'numeric',
  minute: '2-digit',
});

/** A bucket's start as a short axis label, or a long one for tooltips and the table. */
export function bucketLabel(start: number, bucket: Overview['bucket'], long = false): string {
  if (bucket === 'hour') return (long ? hourLong : hourLabel).format(start);
  return (long ? dayLong : dayLabel).format(start);
}

/** The statuses a bucket counts, bottom of the stack first, with how the legend names them. */
export const bucketStatuses = [
  { key: 'succeeded', label: 'Succeeded' },
  { key: 'failed', label: 'Failed' },
  { key: 'timedOut', label: 'Timed out' },
  { key: 'cancelled', label: 'Cancelled' },
  { key: 'skipped', label: 'Skipped' },
  { key: 'other', label: 'Queued or running' },
] as const satisfies ReadonlyArray<{ key: keyof Overview['perDay'][number]; label: string }>;

export function bucketTotal(b: Overview['perDay'][number]): number {
  return bucketStatuses.reduce((sum, s) => sum + b[s.key], 0);
}

/** "a drop of 42%" as a whole percent; the route answers a fraction (docs/design.md, "Stats"). */
export function percent(fraction: number): string {
  return `${Math.round(fraction * 100)}%`;
}
