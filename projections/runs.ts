import { streams } from '../domain/streams.js';
import { stored, storedFields } from './doc-value.js';
import type { JobEvent } from '../domain/job.js';
import type { RunDto } from '../schemas/run.js';
import type { Doc, DocValue } from '../store/document-store.js';
import type { RecordedEvent } from '../store/event-store.js';
import type { DocOp, Projector } from './projector.js';

export const runsCollection = 'runs';

/** One document per run: the RunDto plus what lists filter and sort by. */
export interface RunDoc
  extends
    Doc,
    Omit<
      RunDto,
      'id' | 'input' | 'outputs' | 'reflectionError' | 'reflectionSummary' | 'reflectionOps' | 'reflectionVersion'
    > {
  input: DocValue;
  outputs: { [key: string]: DocValue };
  workspaceId: string;
  submitted: boolean;
  runnerId: string | null;
  cancelRequested: boolean;
  sandboxId: string | null;
  /** msTotal under the name the list sorts by. */
  duration: number | null;
  /** tokIn + tokOut. */
  tokens: number;
  sortJob: string;
  reflectionError?: string | null;
  reflectionSummary?: string | null;
  reflectionOps?: DocValue;
  reflectionVersion?: number | null;
  /** When the pending reflection was asked for: reflectors take the oldest first. */
  reflectionRequestedAt?: number | null;
  /** The runner working on the pending reflection, and how many times one started it. */
  reflectionRunnerId?: string | null;
  reflectionAttempts?: number;
  /** When retention removed the run's timeline and files (docs/design.md, "Retention"). */
  purgedAt?: number | null;
}

const listKeys = [
  'queuedAt',
  'startedAt',
  'finishedAt',
  'duration',
  'cost',
  'turns',
  'status',
  'sortJob',
  'number',
  'tokens',
];

export const runsProjector: Projector = {
  name: 'runs',
  version: 3,
  collections: [runsCollection],
  indexes: [
    // Read by the jobs projector's run fields and by the updates of a job's runs.
    {
      collection: runsCollection,
      keys: [
        ['jobId', 1],
        ['number', 1],
      ],
    },
    // The others serve the API's lists and the runners' queues, not a projector: a replay builds them at its end.
    {
      collection: runsCollection,
      keys: [
        ['status', 1],
        ['submitted', 1],
        ['queuedAt', 1],
      ],
      afterReplay: true,
    },
    {
      collection: runsCollection,
      keys: [
        ['reflection', 1],
        ['reflectionRequestedAt', 1],
      ],
      afterReplay: true,
    },
    // The overview's live runs and latest failures: one status at a time, in queue order (docs/design.md, "Stats").
    {
      collection: runsCollection,
      keys: [
        ['workspaceId', 1],
        ['status', 1],
        ['queuedAt', 1],
      ],
      afterReplay: true,
    },
    ...listKeys.map((k) => ({
      collection: runsCollection,
      keys: [
        ['workspaceId', 1],
        [k, 1],
      ] as Array<[string, 1 | -1]>,
      afterReplay: true,
    })),
  ],
  categories: [streams.job, streams.jobRuns, streams.run],
  project(recorded: RecordedEvent): DocOp[] {
    const job = streams.job.decode(recorded);
    if (job) return jobChanges(job.event, job.key);
    const admission = streams.jobRuns.decode(recorded);
    // A deleted run leaves the lists and the job's run fields (docs/design.md, "Run deletion").
    if (admission?.event.type === 'RunDeleted')
      return [{ kind: 'delete', collection: runsCollection, filter: { _id: admission.event.data.runId } }];
    const decoded = streams.run.decode(recorded);
    if (!decoded) return [];
    const { event } = decoded;
    const _id = event.data.runId;
    const set = (fields: Record<string, DocValue>): DocOp[] => [
      { kind: 'update', collection: runsCollection, filter: { _id }, update: { $set: fields } },
    ];
    switch (event.type) {
      case 'RunQueued':
      case 'RunSkipped': {
        const { runId: _runId, ...plan } = event.data;
        const skipped = event.type === 'RunSkipped';
        // Assigned onto the plan's fields rather than spread into a literal with them: V8 made a new map per field
        // after the spread, a fifth of a millisecond per run (docs/performance.md, "Replay"). Same fields, same order.
        const doc: Record<string, DocValue> = Object.assign(storedFields(plan), {
          input: (plan.input ?? {}) as DocValue,
          status: skipped ? 'skipped' : 'queued',
          submitted: !skipped && (event.data as { submitted?: boolean }).submitted === true,
          jobDeleted: false,
          sortJob: plan.jobName.toLowerCase(),
          summary: null,
          outputs: {},
          error: skipped ? (event.data as { error: string }).error : null,
          cost: 0,
          turns: 0,
          tokIn: 0,
          tokOut: 0,
          tokens: 0,
          startedAt: null,
          finishedAt: skipped ? (event.data as { finishedAt: number }).finishedAt : null,
          msTotal: null,
          duration: null,
          fellBack: false,
          reflection: 'skipped',
          reflectionCost: 0,
          reflectionError: null,
          reflectionSummary: null,
          reflectionOps: null,
          reflectionVersion: null,
          reflectionRequestedAt: null,
          reflectionRunnerId: null,
          reflectionAttempts: 0,
          verifyCost: 0,
          runnerId: null,
          cancelRequested: false,
          sandboxId: null,
        });
        return [{ kind: 'update', collection: runsCollection, filter: { _id }, update: { $set: doc }, upsert: true }];
      }
      case 'RunSubmitted':
        return set({ submitted: true });
      case 'RunClaimed':
        return set({ status: 'provisioning', runnerId: event.data.runnerId, startedAt: event.data.startedAt });
      case 'RunStarted':
        return set({ status: 'running', sandboxId: event.data.sandbox.id });
      case 'RunVerifying':
        return set({ status: 'verifying' });
      case 'RunFellBack':
        return set({ status: 'running', fellBack: true });
      case 'RunCancelRequested':
        return set({ cancelRequested: true });
      case 'RunFinished': {
        const { runId: _r, jobId: _j, outputs, ...o } = event.data;
        return set(
          Object.assign(storedFields(o), {
            outputs: outputs as DocValue,
            duration: o.msTotal,
            tokens: o.tokIn + o.tokOut,
            reflectionRequestedAt: o.reflection === 'pending' ? o.finishedAt : null,
          }),
        );
      }
      case 'RunReflectionRequested':
        return set({
          reflection: 'pending',
          reflectionRequestedAt: event.data.requestedAt,
          reflectionError: null,
          reflectionRunnerId: null,
          reflectionAttempts: 0,
        });
      case 'RunReflectionStarted':
        return set({ reflectionRunnerId: event.data.runnerId, reflectionAttempts: event.data.attempt });
      case 'RunReflected': {
        const r = event.data;
        return set({
          reflection: r.status,
          reflectionError: r.error,
          reflectionSummary: r.summary,
          reflectionOps: stored(r.ops),
          reflectionVersion: r.version,
          reflectionRequestedAt: null,
          reflectionCost: r.totalCost,
        });
      }
      case 'RunPurged':
        return set({ purgedAt: event.data.purgedAt });
      default:
        return [];
    }
  },
};

function jobChanges(event: JobEvent, jobId: string): DocOp[] {
  if (event.type === 'JobUpdated' && event.data.changes.name !== undefined) {
    const name = event.data.changes.name;
    return [
      {
        kind: 'update',
        collection: runsCollection,
        filter: { jobId },
        update: { $set: { jobName: name, sortJob: name.toLowerCase() } },
        many: true,
      },
    ];
  }
  if (event.type === 'JobArchived')
    return [
      {
        kind: 'update',
        collection: runsCollection,
        filter: { jobId },
        update: { $set: { jobDeleted: true } },
        many: true,
      },
    ];
  return [];
}
