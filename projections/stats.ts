import { streams } from '../domain/streams.js';
import { nextFigures, type RunFigures } from '../domain/run-figures.js';
import { bucketRun, byQueue, dayMs, hourMs, summarize } from '../domain/stats.js';
import { stored, storedFields } from './doc-value.js';
import {
  encodeDurations,
  fromHourRun,
  hourRun,
  hourRuns,
  revOf,
  revsBlockDays,
  type StatsDayDoc,
  type StatsHourDoc,
  type StatsRevsDoc,
} from './stats-buckets.js';
import type { Doc, DocValue } from '../store/document-store.js';
import type { RecordedEvent } from '../store/event-store.js';
import type { DocOp, Projector } from './projector.js';

/** One document per run with its figures; kept when the run is deleted, so statistics keep counting it. */
export const statsRunsCollection = 'stats_runs';
/** One document per workspace and UTC hour that has runs: the hour's runs (`StatsHourDoc`). */
export const statsHoursCollection = 'stats_hours';
/** One document per workspace and UTC day that has runs: what its hours sum to (`StatsDayDoc`). */
export const statsDaysCollection = 'stats_days';
/** The revisions of the day documents, a few documents per workspace (`StatsRevsDoc`). */
export const statsRevsCollection = 'stats_revs';

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
  // encoded durations, revisions per day.
  version: 3,
  // A run's events, and its admission stream's deletion of it.
  categories: [streams.run, streams.jobRuns],
  collections: [statsRunsCollection, statsHoursCollection, statsDaysCollection, statsRevsCollection],
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
 * The bucket documents of a run's hour and day, recomputed from what they hold: the run's entry in its hour's list,
 * then the day from its hours' lists (`dayTotals`). A replay runs it once per page and run (`key`): the run events
 * that do not issue it change only a live status, which an hour's list holds as `other` whatever it is, and the last
 * one run for an hour is the one the live feed ran last (docs/design.md, "Replay"). Everything is read by `_id`,
 * which a replay's page answers from memory.
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
      const hour = Math.floor(run.queuedAt / hourMs) * hourMs;
      const own = await docs
        .collection<StatsHourDoc>(statsHoursCollection)
        .findOne({ _id: bucketId(workspaceId, hour) });
      const entry = bucketRun({ ...run, runId });
      const runs = [...(own ? hourRuns(own) : []).map(fromHourRun).filter((r) => r.runId !== runId), entry];
      const list = runs.sort(byQueue).map(hourRun);
      return [
        replace(statsHoursCollection, bucketId(workspaceId, hour), {
          workspaceId,
          start: hour,
          rev: revOf(JSON.stringify(list)),
          runs: stored(list),
        }),
        dayTotals(workspaceId, Math.floor(run.queuedAt / dayMs) * dayMs),
      ];
    },
  };
}

/**
 * A day's document from its hours' lists, then its revision. Keyed by the day: a replay runs it once per page and
 * day, after the runs' hours of the page (docs/design.md, "Replay"), where the live feed runs it after each hour.
 */
function dayTotals(workspaceId: string, day: number): DocOp {
  return {
    kind: 'derive',
    collection: statsDaysCollection,
    key: `stats:day:${workspaceId}:${day}`,
    async derive(docs) {
      const hours = await docs
        .collection<StatsHourDoc>(statsHoursCollection)
        .find({ _id: { $in: bucketIds(workspaceId, day, day + dayMs, hourMs) } });
      const dayList = hours
        .map((h) => ({ start: h.start, rev: h.rev, runs: hourRuns(h) }))
        .sort((a, b) => a.start - b.start);
      const { totals, durations } = summarize(
        (function* () {
          for (const h of dayList) for (const r of h.runs) yield fromHourRun(r);
        })(),
      );
      const revs = dayList.map((h): [number, string] => [h.start, h.rev]);
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
