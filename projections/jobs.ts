import type { JobConfig, JobEvent } from '../domain/job.js';
import { describeCron } from '../domain/cron.js';
import type { Doc, DocValue } from '../store/document-store.js';
import type { RecordedEvent } from '../store/event-store.js';
import type { DocOp, Projector } from './projector.js';
import type { JobDto, LastRun } from '../schemas/job.js';

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
  /** Summary of the playbook that decides nextMode (BEHAVIOUR §2.1); the learning issue fills it. */
  playbookEmpty: boolean;
  playbookHasMain: boolean;
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
  version: 1,
  collections: [jobsCollection],
  indexes: [
    { collection: jobsCollection, keys: [['workspaceId', 1], ['archived', 1], ['sortName', 1]] },
    { collection: jobsCollection, keys: [['workspaceId', 1], ['archived', 1], ['createdAt', 1]] },
    { collection: jobsCollection, keys: [['workspaceId', 1], ['archived', 1], ['updatedAt', 1]] },
    { collection: jobsCollection, keys: [['workspaceId', 1], ['archived', 1], ['nextRunAt', 1]] },
    { collection: jobsCollection, keys: [['workspaceId', 1], ['archived', 1], ['runCount', 1]] },
  ],
  project(recorded: RecordedEvent): DocOp[] {
    if (!recorded.streamId.startsWith('job-')) return [];
    const event = recorded as unknown as JobEvent;
    const _id = recorded.streamId.slice('job-'.length);
    const set = (fields: Record<string, DocValue>): DocOp[] => [
      { kind: 'update', collection: jobsCollection, filter: { _id }, update: { $set: fields } },
    ];
    switch (event.type) {
      case 'JobCreated': {
        const { config, createdAt, workspaceId } = event.data;
        const doc: Record<string, DocValue> = {
          ...configFields(config),
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
        };
        return [{ kind: 'update', collection: jobsCollection, filter: { _id }, update: { $set: doc }, upsert: true }];
      }
      case 'JobUpdated':
        return set({ ...configFields(event.data.changes), updatedAt: event.data.updatedAt });
      case 'JobEnabled':
        return set({ enabled: true, updatedAt: event.data.updatedAt });
      case 'JobDisabled':
        return set({ enabled: false, updatedAt: event.data.updatedAt });
      case 'JobArchived':
        return set({ archived: true, enabled: false, nextRunAt: null, updatedAt: event.data.archivedAt });
      default:
        return [];
    }
  },
};
