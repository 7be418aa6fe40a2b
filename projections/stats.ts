import { streams } from '../domain/streams.js';
import { nextFigures, type RunFigures } from '../domain/run-figures.js';
import { aggregate, dayMs, hourMs, merge, type StatsAgg } from '../domain/stats.js';
import { stored, storedFields } from './doc-value.js';
import type { Doc, DocValue } from '../store/document-store.js';
import type { RecordedEvent } from '../store/event-store.js';
import type { DocOp, Projector } from './projector.js';

/** One document per run with its figures; kept when the run is deleted, so statistics keep counting it. */
export const statsRunsCollection = 'stats_runs';
/** One document per workspace and UTC hour that has runs: a `StatsAgg` of the runs queued in it. */
export const statsHoursCollection = 'stats_hours';
/** One document per workspace and UTC day, merged from its hours. */
export const statsDaysCollection = 'stats_days';

export interface StatsRunDoc extends Doc, Omit<RunFigures, 'runId'> {
  /** Set when the run was deleted: its figures came from the `RunDeleted` fact. */
  deleted: boolean;
}

export interface StatsBucketDoc extends Doc {
  workspaceId: string;
  /** Start of the hour or day (Unix ms, UTC). */
  start: number;
  agg: DocValue;
}

export const bucketAgg = (doc: StatsBucketDoc): StatsAgg => doc.agg as unknown as StatsAgg;

/**
 * The statistics read model (docs/design.md, "Stats"): each run event sets the run's figures, and the events that
 * change what a bucket sums to (queued, skipped, finished, reflected, deleted) recompute the run's hour from the
 * runs of that hour and the day from its 24 hours. Recomputing instead of incrementing makes a replayed event
 * harmless, and the work per event stays bounded by one hour's runs.
 */
export const statsProjector: Projector = {
  name: 'stats',
  // 2: learning tokens (the verifier's and the reflections').
  version: 2,
  collections: [statsRunsCollection, statsHoursCollection, statsDaysCollection],
  // `_id` last: the document store indexes a last key for sorting (`x IS NULL, x`), which a range cannot use.
  indexes: [
    {
      collection: statsRunsCollection,
      keys: [
        ['workspaceId', 1],
        ['queuedAt', 1],
        ['_id', 1],
      ],
    },
    {
      collection: statsRunsCollection,
      keys: [
        ['jobId', 1],
        ['queuedAt', 1],
        ['_id', 1],
      ],
      // Only the API reads it; the first one serves the buckets' recomputation, during a replay too.
      afterReplay: true,
    },
  ],
  project(recorded: RecordedEvent): DocOp[] {
    const admission = streams.jobRuns.decode(recorded);
    if (admission) {
      if (admission.event.type !== 'RunDeleted') return [];
      const { runId, ...figures } = admission.event.data.figures;
      return [upsert(runId, { ...storedFields(figures), deleted: true }), rebucket(runId)];
    }
    const decoded = streams.run.decode(recorded);
    if (!decoded) return [];
    const { event } = decoded;
    const runId = event.data.runId;
    switch (event.type) {
      case 'RunQueued':
      case 'RunSkipped': {
        const { runId: _r, ...figures } = nextFigures(null, event)!;
        return [upsert(runId, { ...storedFields(figures), deleted: false }), rebucket(runId)];
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
 * The bucket documents of a run's hour and day, recomputed from what they hold. A replay runs it once per page and
 * run (`key`): the run events that do not issue it change only a live status, which every bucket counts the same,
 * and the last one run for an hour or a day is the one the live feed ran last (docs/design.md, "Replay").
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
      const day = Math.floor(run.queuedAt / dayMs) * dayMs;
      const inHour = await docs
        .collection<StatsRunDoc>(statsRunsCollection)
        .find({ workspaceId, queuedAt: { $gte: hour, $lt: hour + hourMs } });
      const hourAgg = aggregate(inHour.map((r) => ({ ...r, runId: r._id })));
      const others = await docs.collection<StatsBucketDoc>(statsHoursCollection).find({
        _id: {
          $in: bucketIds(workspaceId, day, day + dayMs, hourMs).filter((id) => id !== bucketId(workspaceId, hour)),
        },
      });
      const merged = merge([hourAgg, ...others.map(bucketAgg)]);
      const dayAgg: StatsAgg = { ...merged.agg, durations: merged.durations.flat().sort((a, b) => a - b) };
      return [
        bucketOp(statsHoursCollection, workspaceId, hour, hourAgg),
        bucketOp(statsDaysCollection, workspaceId, day, dayAgg),
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

function bucketOp(collection: string, workspaceId: string, start: number, agg: StatsAgg): DocOp {
  return {
    kind: 'update',
    collection,
    filter: { _id: bucketId(workspaceId, start) },
    update: { $set: { workspaceId, start, agg: stored(agg) } },
    upsert: true,
  };
}
