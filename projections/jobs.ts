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
        : runFields(run.event.data.jobId);
    const admitted = streams.jobRuns.decode(recorded);
    if (admitted) return admitted.event.type === 'RunDeleted' ? runFields(admitted.key) : [];
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
  return graduated ? [op, ...runFields(jobId)] : [op];
}

/**
 * A run changed: the job's run fields are recomputed from the runs read model (projected just before). Every event
 * that changes a run's number, status, mode or version, or the job's graduated version, issues it, so a replay runs
 * it once per page and job (`key`, docs/design.md, "Replay").
 */
function runFields(jobId: string): DocOp[] {
  return [
    {
      kind: 'derive',
      collection: jobsCollection,
      key: `jobs:run-fields:${jobId}`,
      async derive(docs) {
        const runs = docs.collection<RunDoc>(runsCollection);
        const [recent, runCount, job] = await Promise.all([
          runs.find({ jobId }, { sort: [['number', -1]], limit: 10 }),
          runs.count({ jobId }),
          docs.collection<JobDoc>(jobsCollection).findOne({ _id: jobId }),
        ]);
        const ended = await runs.find(
          {
            jobId,
            mode: 'scripted',
            status: { $in: ['succeeded', 'failed', 'timed_out'] },
            playbookVersion: { $gte: job?.graduatedVersion ?? 0 },
          },
          { sort: [['number', -1]], limit: 2 },
        );
        const recentRuns: LastRun[] = recent.map((r) => ({
          id: r._id,
          number: r.number,
          status: r.status,
          queuedAt: r.queuedAt,
        }));
        const fields: Record<string, DocValue> = {
          runCount,
          recentRuns: recentRuns.length === 0 ? null : stored(recentRuns),
          lastRun: stored(recentRuns[0] ?? null),
          lastMode: recent[0]?.mode ?? null,
          demoted: isDemoted(ended, job?.graduatedVersion ?? null),
        };
        return [{ kind: 'update', collection: jobsCollection, filter: { _id: jobId }, update: { $set: fields } }];
      },
    },
  ];
}
