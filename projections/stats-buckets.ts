import { createHash } from 'node:crypto';
import type { BucketRun, BucketTotals, CountKey } from '../domain/stats.js';
import type { Doc, DocValue } from '../store/document-store.js';

/**
 * The stored shapes of the statistics read model's buckets and their compact encodings (docs/design.md, "Stats"):
 * what the stats projector writes and the overview reads.
 */

/** One run of an hour document: [runId, queuedAt, number, jobId, jobName, counted, cost, learningCost, tokens,
 * learningTokens, msTotal]. An array, not an object: an hour's runs are parsed whenever the hour is read. */
export type HourRun = [
  runId: string,
  queuedAt: number,
  number: number,
  jobId: string,
  jobName: string,
  counted: CountKey,
  cost: number,
  learningCost: number,
  tokens: number,
  learningTokens: number,
  msTotal: number | null,
];

/** One document per workspace and 10 minutes of an hour with runs (`sliceMs`): their runs in queue order. */
export interface StatsHourDoc extends Doc {
  workspaceId: string;
  /** Start of the hour (Unix ms, UTC). */
  start: number;
  /** Names the content: a digest of `runs`. */
  rev: string;
  runs: DocValue;
}

/** Beside each slice of an hour's runs: what they sum to, so a day is summed without reading its lists. */
export interface StatsHourSumDoc extends Doc {
  workspaceId: string;
  start: number;
  /** The slice's `rev`. */
  rev: string;
  totals: DocValue;
  /** The msTotal values of its non-skipped runs, ascending (`encodeDurations`). */
  durations: string;
}

/** One document per workspace and UTC day with runs: what its hours sum to. */
export interface StatsDayDoc extends Doc {
  workspaceId: string;
  start: number;
  /** Names the content: a digest of the hours' revisions, which it is computed from. */
  rev: string;
  /** [hour start, that hour document's `rev`] of the day's hours with runs. */
  hours: DocValue;
  totals: DocValue;
  /** The msTotal values of its non-skipped runs, ascending (`encodeDurations`). */
  durations: string;
}

/**
 * One document per workspace and block of `revsBlockDays` days: `d<day start>` is that day document's `rev`. A
 * reader learns which days changed from a few of these instead of reading the days.
 */
export interface StatsRevsDoc extends Doc {
  workspaceId: string;
}

export const revsBlockDays = 32;

export const hourRun = (r: BucketRun): HourRun => [
  r.runId,
  r.queuedAt,
  r.number,
  r.jobId,
  r.jobName,
  r.counted,
  r.cost,
  r.learningCost,
  r.tokens,
  r.learningTokens,
  r.msTotal,
];

export const fromHourRun = (t: HourRun): BucketRun => ({
  runId: t[0],
  queuedAt: t[1],
  number: t[2],
  jobId: t[3],
  jobName: t[4],
  counted: t[5],
  cost: t[6],
  learningCost: t[7],
  tokens: t[8],
  learningTokens: t[9],
  msTotal: t[10],
});

export const hourRuns = (doc: StatsHourDoc): HourRun[] => doc.runs as unknown as HourRun[];
export const dayTotals = (doc: StatsDayDoc): BucketTotals => doc.totals as unknown as BucketTotals;
export const dayHours = (doc: StatsDayDoc): Array<[number, string]> => doc.hours as unknown as Array<[number, string]>;

/** A short digest that names a bucket's content: equal content, equal revision, in every process and replay. */
export const revOf = (content: string): string => createHash('sha1').update(content).digest('base64url').slice(0, 20);

/** An hour's revision: the digest of its slices' [start, revision] pairs, in time order. */
export const hourRevOf = (slices: ReadonlyArray<[number, string]>): string => revOf(JSON.stringify(slices));

const isCount = (v: number) => Number.isSafeInteger(v) && v >= 0;

/**
 * An ascending list of durations as a string: `v` and the base64 of the differences between neighbours as
 * variable-length integers (7 bits a byte), about two bytes a run instead of a JSON number each; `j` and JSON for
 * values that are not whole milliseconds (none are written today). Exact either way.
 */
export function encodeDurations(sorted: readonly number[]): string {
  if (!sorted.every(isCount)) return `j${JSON.stringify(sorted)}`;
  const bytes: number[] = [];
  let previous = 0;
  for (const v of sorted) {
    let d = v - previous;
    previous = v;
    while (d >= 128) {
      bytes.push((d % 128) + 128);
      d = Math.floor(d / 128);
    }
    bytes.push(d);
  }
  return `v${Buffer.from(bytes).toString('base64')}`;
}

export function decodeDurations(encoded: string): Float64Array {
  if (encoded.startsWith('j')) return Float64Array.from(JSON.parse(encoded.slice(1)) as number[]);
  const bytes = Buffer.from(encoded.slice(1), 'base64');
  let n = 0;
  for (const b of bytes) if (b < 128) n++;
  const out = new Float64Array(n);
  let value = 0;
  let d = 0;
  let scale = 1;
  let i = 0;
  for (const b of bytes) {
    if (b >= 128) {
      d += (b - 128) * scale;
      scale *= 128;
      continue;
    }
    value += d + b * scale;
    out[i++] = value;
    d = 0;
    scale = 1;
  }
  return out;
}
