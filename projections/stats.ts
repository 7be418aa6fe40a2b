import { streams } from '../domain/streams.js';
import { nextFigures, type RunFigures } from '../domain/run-figures.js';
import { addTotals, bucketRun, dayMs, hourMs, summarize, type BucketTotals } from '../domain/stats.js';
import { stored, storedFields } from './doc-value.js';
import {
  decodeDurations,
  encodeDurations,
  fromHourRun,
  hourRevOf,
  hourRun,
  hourRuns,
  revOf,
  revsBlockDays,
  type StatsDayDoc,
  type StatsHourDoc,
  type StatsHourSumDoc,
  type HourRun,
  type StatsRevsDoc,
} from './stats-buckets.js';
import type { Doc, DocValue } from '../store/document-store.js';
import type { RecordedEvent } from '../store/event-store.js';
import type { DocOp, Projector } from './projector.js';

/** One document per run with its figures; kept when the run is deleted, so statistics keep counting it. */
export const statsRunsCollection = 'stats_runs';
/**
 * The hours' runs (`StatsHourDoc`), one document per workspace and slice of `sliceMs` that has runs: a run event
 * rewrites its slice, not its whole hour (docs/design.md, "Stats").
 */
export const statsHoursCollection = 'stats_hours';
/** The span of one document of an hour's runs: six to an hour. */
export const sliceMs = 10 * 60 * 1000;
/** One document per workspace and UTC day that has runs: what its hours sum to (`StatsDayDoc`). */
export const statsDaysCollection = 'stats_days';
/** The revisions of the day documents, a few documents per workspace (`StatsRevsDoc`). */
export const statsRevsCollection = 'stats_revs';
/** One document per slice of an hour: what its runs sum to (`StatsHourSumDoc`), which the day is summed from. */
export const statsHourSumsCollection = 'stats_hour_sums';

export interface StatsRunDoc extends Doc, Omit<RunFigures, 'runId'> {
  /** Set when the run was deleted: its figures came from the `RunDeleted` fact. */
  deleted: boolean;
}

/**
 * The statistics read model (docs/design.md, "Stats"): each run event sets the run's figures, and the events that
 * change what a bucket sums to (queued, skipped, finished, reflected, deleted) put the run into its hour's list and
 * recompute the day from its 24 hours. Recomputing instead of incrementing makes a replayed event harmless, and the
 * work per event stays bounded by one day's runs.
 */
export const statsProjector: Projector = {
  name: 'stats',
  // 2: learning tokens (the verifier's and the reflections'). 3: hours hold their runs, days their totals and
  // encoded durations, revisions per day. 4: hours' runs in slices of 10 minutes, with their sums, days summed from
  // those.
  version: 4,
  // A run's events, and its admission stream's deletion of it.
  categories: [streams.run, streams.jobRuns],
  collections: [
    statsRunsCollection,
    statsHoursCollection,
    statsDaysCollection,
    statsRevsCollection,
    statsHourSumsCollection,
  ],
  // `_id` last: the document store indexes a last key for sorting (`x IS NULL, x`), which a range cannot use. Only
  // the API reads these (whether a workspace has runs, a job's history): the projector reads by `_id` alone.
  indexes: [
    {
      collection: statsRunsCollection,
      keys: [
        ['workspaceId', 1],
        ['queuedAt', 1],
        ['_id', 1],
      ],
      afterReplay: true,
    },
    {
      collection: statsRunsCollection,
      keys: [
        ['jobId', 1],
        ['queuedAt', 1],
        ['_id', 1],
      ],
      afterReplay: true,
    },
  ],
  project(recorded: RecordedEvent): DocOp[] {
    const admission = streams.jobRuns.decode(recorded);
    if (admission) {
      if (admission.event.type !== 'RunDeleted') return [];
      const { runId, ...figures } = admission.event.data.figures;
      return [upsert(runId, Object.assign(storedFields(figures), { deleted: true })), rebucket(runId)];
    }
    const decoded = streams.run.decode(recorded);
    if (!decoded) return [];
    const { event } = decoded;
    const runId = event.data.runId;
    switch (event.type) {
      case 'RunQueued':
      case 'RunSkipped': {
        const { runId: _r, ...figures } = nextFigures(null, event)!;
        return [upsert(runId, Object.assign(storedFields(figures), { deleted: false })), rebucket(runId)];
      }
      // Live statuses all count as "other": the buckets do not change.
      case 'RunClaimed':
        return [set(runId, { status: 'provisioning' })];
      case 'RunStarted':
      case 'RunFellBack':
        return [set(runId, { status: 'running' })];
      case 'RunVerifying':
        return [set(runId, { status: 'verifying' })];
      case 'RunFinished': {
        const o = event.data;
        return [
          set(runId, {
            status: o.status,
            cost: o.cost,
            verifyCost: o.verifyCost,
            verifyTokens: o.verifyTokens,
            // Reflection only follows a finished run: none has spent anything yet.
            learningTokens: o.verifyTokens,
            tokens: o.tokIn + o.tokOut,
            msTotal: o.msTotal,
            turns: o.turns,
          }),
          rebucket(runId),
        ];
      }
      case 'RunReflected':
        return [
          set(runId, { reflectionCost: event.data.totalCost }),
          learningTokens(runId, event.data.totalTokens),
          rebucket(runId),
        ];
      default:
        return [];
    }
  },
};

function upsert(runId: string, fields: Record<string, DocValue>): DocOp {
  return {
    kind: 'update',
    collection: statsRunsCollection,
    filter: { _id: runId },
    update: { $set: fields },
    upsert: true,
  };
}

function set(runId: string, fields: Record<string, DocValue>): DocOp {
  return { kind: 'update', collection: statsRunsCollection, filter: { _id: runId }, update: { $set: fields } };
}

/** The verifier's tokens, kept on the run's figures, and every reflection's so far. */
function learningTokens(runId: string, reflectionTokens: number): DocOp {
  return {
    kind: 'derive',
    collection: statsRunsCollection,
    async derive(docs) {
      const run = await docs.collection<StatsRunDoc>(statsRunsCollection).findOne({ _id: runId });
      return run ? [set(runId, { learningTokens: run.verifyTokens + reflectionTokens })] : [];
    },
  };
}

/**
 * The bucket documents of a run's hour and day, recomputed from what they hold: the run's entry in its slice of the
 * hour's list and the slice's sum, then the day from its slices' sums (`dayTotals`). A replay runs it once per page
 * and run (`key`): the run events that do not issue it change only a live status, which a list holds as `other`
 * whatever it is, and the last one run for a slice is the one the live feed ran last (docs/design.md, "Replay").
 * Everything is read by `_id`, which a replay's page answers from memory.
 */
function rebucket(runId: string): DocOp {
  return {
    kind: 'derive',
    collection: statsHoursCollection,
    key: `stats:buckets:${runId}`,
    async derive(docs) {
      const run = await docs.collection<StatsRunDoc>(statsRunsCollection).findOne({ _id: runId });
      if (!run) return [];
      const { workspaceId } = run;
      const slice = Math.floor(run.queuedAt / sliceMs) * sliceMs;
      const id = bucketId(workspaceId, slice);
      const own = await docs.collection<StatsHourDoc>(statsHoursCollection).findOne({ _id: id });
      const list = withEntry(own ? hourRuns(own) : [], hourRun(bucketRun({ ...run, runId })));
      const rev = revOf(JSON.stringify(list));
      const { totals, durations } = summarize(list.map(fromHourRun));
      return [
        replace(statsHoursCollection, id, { workspaceId, start: slice, rev, runs: stored(list) }),
        replace(statsHourSumsCollection, id, {
          workspaceId,
          start: slice,
          rev,
          totals: stored(totals),
          durations: encodeDurations(durations),
        }),
        dayTotals(workspaceId, Math.floor(run.queuedAt / dayMs) * dayMs),
      ];
    },
  };
}

/** Queue order (`byQueue`) on a list's entries. */
const entryOrder = (a: HourRun, b: HourRun): number =>
  a[1] - b[1] || a[2] - b[2] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0);

/**
 * A slice's list in queue order with `entry` in place of the run's old one: a new run, the common case, goes in by a
 * binary search (mostly at the end), where converting and sorting the whole list again cost most of a run event
 * (docs/performance.md, "A busy day's statistics").
 */
function withEntry(list: readonly HourRun[], entry: HourRun): HourRun[] {
  const out = list.filter((r) => r[0] !== entry[0]);
  let lo = 0;
  let hi = out.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (entryOrder(out[mid]!, entry) < 0) lo = mid + 1;
    else hi = mid;
  }
  out.splice(lo, 0, entry);
  return out;
}

/**
 * A day's document from its slices' sums, then its revision; an hour's revision is the digest of its slices'. Keyed
 * by the day: a replay runs it once per page and day, after the runs' slices of the page (docs/design.md, "Replay"),
 * where the live feed runs it after each slice. The sums, not the lists: reading every list of a busy day again for
 * each of its run events made the cost of a run grow with the day's runs.
 */
function dayTotals(workspaceId: string, day: number): DocOp {
  return {
    kind: 'derive',
    collection: statsDaysCollection,
    key: `stats:day:${workspaceId}:${day}`,
    async derive(docs) {
      const slices = (
        await docs
          .collection<StatsHourSumDoc>(statsHourSumsCollection)
          .find({ _id: { $in: bucketIds(workspaceId, day, day + dayMs, sliceMs) } })
      ).sort((a, b) => a.start - b.start);
      const totals = addTotals(slices.map((h) => h.totals as unknown as BucketTotals));
      const durations = mergeSorted(slices.map((h) => decodeDurations(h.durations)));
      const revs = hourRevs(slices);
      const dayRev = revOf(JSON.stringify(revs));
      const dayDoc: Record<keyof Omit<StatsDayDoc, '_id'>, DocValue> = {
        workspaceId,
        start: day,
        rev: dayRev,
        hours: stored(revs),
        totals: stored(totals),
        durations: encodeDurations(durations),
      };
      return [
        replace(statsDaysCollection, bucketId(workspaceId, day), dayDoc),
        {
          kind: 'update',
          collection: statsRevsCollection,
          filter: { _id: revsId(workspaceId, day) },
          update: { $set: { workspaceId, [revsField(day)]: dayRev } },
          upsert: true,
        },
      ];
    },
  };
}

/** [hour start, revision] of the hours with runs, in order: an hour's revision is the digest of its slices'. */
function hourRevs(slices: readonly StatsHourSumDoc[]): Array<[number, string]> {
  const byHour = new Map<number, Array<[number, string]>>();
  for (const s of slices) {
    const hour = Math.floor(s.start / hourMs) * hourMs;
    let list = byHour.get(hour);
    if (!list) byHour.set(hour, (list = []));
    list.push([s.start, s.rev]);
  }
  return [...byHour].map(([hour, list]): [number, string] => [hour, hourRevOf(list)]);
}

/** The ids of an hour's slices of runs, in order. */
export const hourSliceIds = (workspaceId: string, hour: number): string[] =>
  bucketIds(workspaceId, hour, hour + hourMs, sliceMs);

/** Ascending lists as one ascending list, merged in pairs: n·log k steps (sorting them together took 1.7× as long). */
function mergeSorted(lists: readonly ArrayLike<number>[]): number[] {
  let round: ArrayLike<number>[] = [...lists];
  if (round.length === 0) return [];
  while (round.length > 1) {
    const next: ArrayLike<number>[] = [];
    for (let k = 0; k < round.length; k += 2)
      next.push(k + 1 < round.length ? merge(round[k]!, round[k + 1]!) : round[k]!);
    round = next;
  }
  return Array.from(round[0]!);
}

function merge(a: ArrayLike<number>, b: ArrayLike<number>): number[] {
  const out = new Array<number>(a.length + b.length);
  let i = 0;
  let j = 0;
  let o = 0;
  while (i < a.length && j < b.length) out[o++] = a[i]! <= b[j]! ? a[i++]! : b[j++]!;
  while (i < a.length) out[o++] = a[i++]!;
  while (j < b.length) out[o++] = b[j++]!;
  return out;
}

export const bucketId = (workspaceId: string, start: number) => `${workspaceId}:${start}`;

/** The ids of the buckets of [from, to): buckets are read by primary key, never by a range over their documents. */
export function bucketIds(workspaceId: string, from: number, to: number, step: number): string[] {
  const ids: string[] = [];
  for (let start = from; start < to; start += step) ids.push(bucketId(workspaceId, start));
  return ids;
}

/** The revisions document holding a day's revision, and its field there. */
export const revsId = (workspaceId: string, day: number) =>
  `${workspaceId}:${Math.floor(day / (revsBlockDays * dayMs))}`;
export const revsField = (day: number) => `d${day}`;

/** The [day start, revision] pairs a revisions document holds. */
export function dayRevs(doc: StatsRevsDoc): Array<[number, string]> {
  const out: Array<[number, string]> = [];
  for (const [field, rev] of Object.entries(doc))
    if (field.startsWith('d') && typeof rev === 'string') out.push([Number(field.slice(1)), rev]);
  return out;
}

/** The revisions documents covering the days of [from, to). */
export function revsIds(workspaceId: string, from: number, to: number): string[] {
  const block = revsBlockDays * dayMs;
  const ids: string[] = [];
  for (let b = Math.floor(from / block); b * block < to; b++) ids.push(`${workspaceId}:${b}`);
  return ids;
}

function replace(collection: string, id: string, fields: Record<string, DocValue>): DocOp {
  return { kind: 'update', collection, filter: { _id: id }, update: { $set: fields }, upsert: true };
}
