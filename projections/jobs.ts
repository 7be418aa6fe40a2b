import { isDemoted } from '../domain/graduation.js';
import type { JobConfig } from '../domain/job.js';
import { describeCron, nextOccurrence } from '../domain/cron.js';
import { streams } from '../domain/streams.js';
import type { Doc, DocValue } from '../store/document-store.js';
import type { RecordedEvent } from '../store/event-store.js';
import type { DocOp, Projector } from './projector.js';
import type { JobDto, LastRun } from '../schemas/job.js';
import { stored } from './doc-value.js';
import { runsCollection, type RunDoc } from './runs.js';
import { isEmptyPlaybook, type PlaybookEvent } from '../domain/playbook.js';

export const jobsCollection = 'jobs';

/**
 * One document per job serves both the list (JobListDto) and the detail (JobDto). The run-related fields start
 * empty and are filled by the run projector later; they live here so a list page is one query.
 */
export interface JobDoc extends Doc, Omit<JobDto, 'id' | 'nextMode'> {
  workspaceId: string;
  archived: boolean;
  /** Lowercased name: sorting by name is case-insensitive, as people expect. */
  sortName: string;
  scheduleHuman: string | null;
  lastMode: JobDto['modePin'];
  runCount: number;
  recentRuns: LastRun[] | null;
  /** Summary of the playbook that decides nextMode (docs/learning.md, "Modes"); the learning issue fills it. */
  playbookEmpty: boolean;
  playbookHasMain: boolean;
  /** Never part of a DTO: the hooks route compares against it. */
  webhookTokenHash?: string | null;
}

function configFields(config: Partial<JobConfig>): Record<string, DocValue> {
  const out: Record<string, DocValue> = {};
  for (const [key, value] of Object.entries(config)) if (value !== undefined) out[key] = value as DocValue;
  if (config.name !== undefined) out.sortName = config.name.toLowerCase();
  if (config.cron !== undefined) out.scheduleHuman = config.cron === null ? null : describeCron(config.cron);
  return out;
}

export const jobsProjector: Projector = {
  name: 'jobs',
  version: 5,
  collections: [jobsCollection],
  // For the API's lists only: the projector reads jobs by `_id`, so a replay builds them at its end.
  indexes: [
    {
      collection: jobsCollection,
      keys: [
        ['workspaceId', 1],
        ['archived', 1],
        ['sortName', 1],
      ],
      afterReplay: true,
    },
    {
      collection: jobsCollection,
      keys: [
        ['workspaceId', 1],
        ['archived', 1],
        ['createdAt', 1],
      ],
      afterReplay: true,
    },
    {
      collection: jobsCollection,
      keys: [
        ['workspaceId', 1],
        ['archived', 1],
        ['updatedAt', 1],
      ],
      afterReplay: true,
    },
    {
      collection: jobsCollection,
      keys: [
        ['workspaceId', 1],
        ['archived', 1],
        ['nextRunAt', 1],
      ],
      afterReplay: true,
    },
    {
      collection: jobsCollection,
      keys: [
        ['workspaceId', 1],
        ['archived', 1],
        ['runCount', 1],
      ],
      afterReplay: true,
    },
    // The scheduler's due jobs of every workspace (runner/scheduler.ts). `_id` last keeps `nextRunAt` a plain
    // indexed value, so `nextRunAt <= now` is a range read of the due entries only; as the sort key it would be
    // indexed as `x IS NULL, x`, which a range cannot use, and every tick read every job (200 ms at 50,000 jobs).
    {
      collection: jobsCollection,
      keys: [
        ['archived', 1],
        ['enabled', 1],
        ['nextRunAt', 1],
        ['_id', 1],
      ],
      afterReplay: true,
    },
  ],
  categories: [streams.run, streams.jobRuns, streams.schedule, streams.playbook, streams.job],
  project(recorded: RecordedEvent): DocOp[] {
    const run = streams.run.decode(recorded);
    if (run)
      return run.event.type === 'RunCancelRequested' ||
        run.event.type === 'RunSubmitted' ||
        run.event.type === 'RunPurged'
        ? []
        : runFields(run.event.data.jobId, run.event.data.runId);
    const admitted = streams.jobRuns.decode(recorded);
    if (admitted) return admitted.event.type === 'RunDeleted' ? runFields(admitted.key, admitted.event.data.runId) : [];
    const fired = streams.schedule.decode(recorded);
    if (fired) {
      const { jobId, occurrence, firedAt } = fired.event.data;
      // A late firing (the service was down) is not replayed: the next occurrence counts from when it fired.
      return [nextRunAt(jobId, Math.max(occurrence, firedAt))];
    }
    const saved = streams.playbook.decode(recorded);
    if (saved) return playbookFields(saved.event);
    const decoded = streams.job.decode(recorded);
    if (!decoded) return [];
    const { key: _id, event } = decoded;
    const set = (fields: Record<string, DocValue>): DocOp[] => [
      { kind: 'update', collection: jobsCollection, filter: { _id }, update: { $set: fields } },
    ];
    switch (event.type) {
      case 'JobCreated': {
        const { config, createdAt, workspaceId } = event.data;
        // Assigned onto the config's fields rather than spread into a literal with them: a spread followed by this
        // many fields costs V8 a new map per field (docs/performance.md, "Job creations through the API: CPU per
        // creation"). The fields come out in the same order.
        const doc: Record<string, DocValue> = Object.assign(configFields(config), {
          workspaceId,
          archived: false,
          createdAt,
          updatedAt: createdAt,
          nextRunAt: null,
          playbookVersion: 0,
          hasWebhookToken: false,
          lastRun: null,
          lastMode: null,
          runCount: 0,
          recentRuns: null,
          demoted: false,
          graduatedVersion: null,
          playbookEmpty: true,
          playbookHasMain: false,
        });
        const created: DocOp = {
          kind: 'update',
          collection: jobsCollection,
          filter: { _id },
          update: { $set: doc },
          upsert: true,
        };
        // Without an enabled schedule, the `nextRunAt: null` just set is what the derive would write: reading the
        // job back for it cost every creation a read and an update (docs/performance.md, "Job creations through the
        // API: CPU per creation").
        return config.cron && config.enabled ? [created, nextRunAt(_id, createdAt)] : [created];
      }
      case 'JobUpdated': {
        const ops = set({ ...configFields(event.data.changes), updatedAt: event.data.updatedAt });
        const { cron, timezone } = event.data.changes;
        return cron !== undefined || timezone !== undefined ? [...ops, nextRunAt(_id, event.data.updatedAt)] : ops;
      }
      case 'JobEnabled':
        return [...set({ enabled: true, updatedAt: event.data.updatedAt }), nextRunAt(_id, event.data.updatedAt)];
      case 'JobDisabled':
        return set({ enabled: false, nextRunAt: null, updatedAt: event.data.updatedAt });
      case 'JobArchived':
        return set({
          archived: true,
          enabled: false,
          nextRunAt: null,
          updatedAt: event.data.archivedAt,
          webhookTokenHash: null,
        });
      case 'JobWebhookTokenSet':
        return set({ hasWebhookToken: true, webhookTokenHash: event.data.tokenHash });
      default:
        return [];
    }
  },
};

/** The next occurrence after `after` of an enabled job's schedule, from the job's current cron and timezone. */
function nextRunAt(jobId: string, after: number): DocOp {
  return {
    kind: 'derive',
    collection: jobsCollection,
    async derive(docs) {
      const job = await docs.collection<JobDoc>(jobsCollection).findOne({ _id: jobId });
      if (!job) return [];
      const next =
        job.cron && job.enabled && !job.archived ? nextOccurrence(job.cron, job.timezone ?? 'UTC', after) : null;
      return [
        { kind: 'update', collection: jobsCollection, filter: { _id: jobId }, update: { $set: { nextRunAt: next } } },
      ];
    },
  };
}

/**
 * A playbook version was saved: the job's version, and what nextMode and the graduated version read of it
 * (docs/learning.md, "Modes" and "Graduation").
 */
function playbookFields(event: PlaybookEvent): DocOp[] {
  const { jobId, version, content, graduated } = event.data;
  const fields: Record<string, DocValue> = {
    playbookVersion: version,
    playbookEmpty: isEmptyPlaybook(content),
    playbookHasMain: content.main !== null,
  };
  // A graduation starts the demotion count again: no scripted run is at or after the new version yet. The run
  // fields read the graduated version, so they are derived again too (what a replay's deferred derive relies on).
  if (graduated) Object.assign(fields, { graduatedVersion: version, demoted: false });
  const op: DocOp = { kind: 'update', collection: jobsCollection, filter: { _id: jobId }, update: { $set: fields } };
  return graduated ? [op, ...runFields(jobId, null)] : [op];
}

/** What a job's run fields are computed from: a run's figures, as the runs read model holds them. */
interface RunEntry {
  id: string;
  number: number;
  status: RunDoc['status'];
  queuedAt: number;
  mode: RunDoc['mode'];
  fellBack: boolean;
  playbookVersion: number;
}

/**
 * What the run fields' derive reads, kept through a replay (`ReplayMemo`, docs/design.md, "Replay"): the job's ten
 * latest runs, its run count, and its two latest scripted runs that ended at or after `since`, its graduated
 * version. A few hundred bytes a job.
 */
interface RunFieldsMemo {
  since: number;
  count: number;
  /** By number, latest first. */
  recent: RunEntry[];
  ended: RunEntry[];
}

/** What a job's run fields read of its runs: a replay's memo of them holds no other field. */
const runFieldsReads = {
  [runsCollection]: ['_id', 'jobId', 'number', 'status', 'queuedAt', 'mode', 'fellBack', 'playbookVersion'],
};

const recentKept = 10;
const endedKept = 2;
const endedStatuses = new Set(['succeeded', 'failed', 'timed_out']);

const entryOf = (r: RunDoc): RunEntry => ({
  id: r._id,
  number: r.number,
  status: r.status,
  queuedAt: r.queuedAt,
  mode: r.mode,
  fellBack: r.fellBack,
  playbookVersion: r.playbookVersion,
});

/**
 * `list` (latest first, at most `kept`) with `e` in its place by number, when it belongs there. False when the
 * memo cannot tell what the read model holds: a run older than the oldest held (new, or an old one changed?) or a
 * number held under another run.
 */
function place(list: RunEntry[], e: RunEntry, kept: number): boolean {
  if (list.some((r) => r.number === e.number && r.id !== e.id)) return false;
  const at = list.findIndex((r) => r.number < e.number);
  if (at === -1 && list.length >= kept) return false;
  list.splice(at === -1 ? list.length : at, 0, e);
  if (list.length > kept) list.pop();
  return true;
}

/** The memo after a run changed, as the runs read model now holds it; false when it cannot be told (`place`). */
function noteRun(memo: RunFieldsMemo, run: RunDoc): boolean {
  const e = entryOf(run);
  const i = memo.recent.findIndex((r) => r.id === e.id);
  if (i >= 0) {
    if (memo.recent[i]!.number !== e.number) return false;
    memo.recent[i] = e;
  } else {
    // Not among the latest ten: with fewer held, or newer than the tenth, a run the read model did not hold.
    if (!place(memo.recent, e, recentKept)) return false;
    memo.count++;
  }
  const ended = e.mode === 'scripted' && e.playbookVersion >= memo.since && endedStatuses.has(e.status);
  const j = memo.ended.findIndex((r) => r.id === e.id);
  if (j >= 0) {
    // One that left the two latest ended ones: the third is not held.
    if (!ended || memo.ended[j]!.number !== e.number) return false;
    memo.ended[j] = e;
  } else if (ended && (memo.ended.length < endedKept || e.number > memo.ended[memo.ended.length - 1]!.number))
    return place(memo.ended, e, endedKept);
  return true;
}

/** The memo of a job without runs, at its graduated version. */
const noRuns = (since: number): RunFieldsMemo => ({ since, count: 0, recent: [], ended: [] });

/**
 * A run changed (`runId`) or the job graduated (null): the job's run fields are recomputed from the runs read model
 * (projected just before). Every event that changes a run's number, status, mode or version, or the job's graduated
 * version, issues it, so a replay runs it once per page and job (`key`, docs/design.md, "Replay"), and computes it
 * from what the memo keeps of the job's runs, observed run by run, instead of three queries.
 */
function runFields(jobId: string, runId: string | null): DocOp[] {
  const key = `jobs:run-fields:${jobId}`;
  return [
    {
      kind: 'derive',
      collection: jobsCollection,
      key,
      async observe(docs, memo) {
        if (runId === null) return;
        let held = memo.get(key) as RunFieldsMemo | undefined;
        if (!held) {
          // A job whose runs the replay has seen from the first: its first run starts its memo.
          if (!memo.fromEmpty(runsCollection)) return;
          const job = await docs.collection<JobDoc>(jobsCollection).findOne({ _id: jobId });
          held = noRuns(job?.graduatedVersion ?? 0);
          memo.set(key, held, runFieldsReads);
        }
        const run = await docs.collection<RunDoc>(runsCollection).findOne({ _id: runId });
        // A deleted run may have been among those held, and the next one is not.
        if (!run || !noteRun(held, run)) memo.delete(key);
      },
      async derive(docs, memo) {
        const job = await docs.collection<JobDoc>(jobsCollection).findOne({ _id: jobId });
        const since = job?.graduatedVersion ?? 0;
        let held = memo?.get(key) as RunFieldsMemo | undefined;
        if (!held && memo?.fromEmpty(runsCollection)) held = noRuns(since);
        if (!held || held.since !== since) {
          const runs = docs.collection<RunDoc>(runsCollection);
          const [recent, count, ended] = await Promise.all([
            runs.find({ jobId }, { sort: [['number', -1]], limit: recentKept }),
            runs.count({ jobId }),
            runs.find(
              {
                jobId,
                mode: 'scripted',
                status: { $in: [...endedStatuses] },
                playbookVersion: { $gte: since },
              },
              { sort: [['number', -1]], limit: endedKept },
            ),
          ]);
          held = { since, count, recent: recent.map(entryOf), ended: ended.map(entryOf) };
          memo?.set(key, held, runFieldsReads);
        }
        const recentRuns: LastRun[] = held.recent.map((r) => ({
          id: r.id,
          number: r.number,
          status: r.status,
          queuedAt: r.queuedAt,
        }));
        const fields: Record<string, DocValue> = {
          runCount: held.count,
          recentRuns: recentRuns.length === 0 ? null : stored(recentRuns),
          lastRun: stored(recentRuns[0] ?? null),
          lastMode: held.recent[0]?.mode ?? null,
          demoted: isDemoted(held.ended, job?.graduatedVersion ?? null),
        };
        return [{ kind: 'update', collection: jobsCollection, filter: { _id: jobId }, update: { $set: fields } }];
      },
    },
  ];
}
