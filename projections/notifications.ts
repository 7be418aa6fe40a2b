import { streams } from '../domain/streams.js';
import { stored } from './doc-value.js';
import type { DeliveryStatus } from '../domain/notification-stream.js';
import type { RunEvent } from '../domain/run.js';
import type { NotificationBody } from '../schemas/notification.js';
import type { NotifyEvent } from '../schemas/settings.js';
import type { Doc, DocValue } from '../store/document-store.js';
import type { RecordedEvent } from '../store/event-store.js';
import type { DocOp, Projector } from './projector.js';

/** Finished runs that may raise a notification and whose trigger check is not done yet (`checked`). */
export const notificationChecksCollection = 'notification_checks';
/** One document per queued notification: what the notifier polls for due deliveries. */
export const notificationsCollection = 'notifications';

export interface NotificationCheckDoc extends Doc {
  jobId: string;
  finishedAt: number;
  checked: boolean;
  /** Why main fell short, for the fell-back message. */
  fallbackReason?: string | null;
}

export interface NotificationDoc extends Doc {
  runId: string;
  workspaceId: string;
  jobId: string;
  event: NotifyEvent;
  status: DeliveryStatus;
  attempts: number;
  runnerId: string | null;
  /** When the next attempt is due (pending only). */
  retryAt: number;
  lastError: string | null;
  queuedAt: number;
  deliveredAt: number | null;
  /** What every attempt posts, fixed when the run was checked. */
  body: NotificationBody;
}

const docId = (runId: string, event: NotifyEvent) => `${runId}:${event}`;

/**
 * Run notifications as read models (docs/design.md, "Notifications"). A run that failed, timed out or fell back gets a
 * check document when it finishes; the notifier decides its triggers and appends them to the run's notification stream,
 * whose events then mark the check done and keep one delivery document per notification.
 */
export const notificationsProjector: Projector = {
  name: 'notifications',
  // 2: a deleted run's check goes with it.
  version: 2,
  collections: [notificationChecksCollection, notificationsCollection],
  indexes: [
    {
      collection: notificationChecksCollection,
      keys: [
        ['checked', 1],
        ['finishedAt', 1],
      ],
    },
    {
      collection: notificationsCollection,
      keys: [
        ['status', 1],
        ['retryAt', 1],
      ],
    },
  ],
  categories: [streams.run, streams.notification, streams.jobRuns],
  project(recorded: RecordedEvent): DocOp[] {
    const run = streams.run.decode(recorded);
    if (run) return runChanges(run.event);
    // A deleted run's check goes with its stream, which a replay no longer reads (docs/design.md, "Run deletion"):
    // kept, the live read model would hold a check the rebuilt one has not, for a run the notifier cannot read.
    const admission = streams.jobRuns.decode(recorded);
    if (admission)
      return admission.event.type === 'RunDeleted'
        ? [{ kind: 'delete', collection: notificationChecksCollection, filter: { _id: admission.event.data.runId } }]
        : [];
    const decoded = streams.notification.decode(recorded);
    if (!decoded) return [];
    const { event } = decoded;
    const set = (runId: string, e: NotifyEvent, fields: Record<string, DocValue>): DocOp[] => [
      {
        kind: 'update',
        collection: notificationsCollection,
        filter: { _id: docId(runId, e) },
        update: { $set: fields },
      },
    ];
    switch (event.type) {
      case 'NotificationQueued': {
        const d = event.data;
        const doc: Record<string, DocValue> = {
          runId: d.runId,
          workspaceId: d.workspaceId,
          jobId: d.jobId,
          event: d.event,
          status: 'pending',
          attempts: 0,
          runnerId: null,
          retryAt: d.queuedAt,
          lastError: null,
          queuedAt: d.queuedAt,
          deliveredAt: null,
          body: stored(d.body),
        };
        return [
          {
            kind: 'update',
            collection: notificationsCollection,
            filter: { _id: docId(d.runId, d.event) },
            update: { $set: doc },
            upsert: true,
          },
        ];
      }
      case 'RunNotificationsChecked':
        return [
          {
            kind: 'update',
            collection: notificationChecksCollection,
            filter: { _id: event.data.runId },
            update: { $set: { checked: true } },
          },
        ];
      case 'NotificationAttemptStarted':
        return set(event.data.runId, event.data.event, {
          status: 'sending',
          attempts: event.data.attempt,
          runnerId: event.data.runnerId,
        });
      case 'NotificationDelivered':
        return set(event.data.runId, event.data.event, {
          status: 'delivered',
          runnerId: null,
          deliveredAt: event.data.deliveredAt,
        });
      case 'NotificationAttemptFailed': {
        const { retryAt, error } = event.data;
        return set(
          event.data.runId,
          event.data.event,
          retryAt === null
            ? { status: 'failed', runnerId: null, lastError: error }
            : { status: 'pending', runnerId: null, lastError: error, retryAt },
        );
      }
      default:
        return [];
    }
  },
};

function runChanges(event: RunEvent): DocOp[] {
  const check = (fields: Record<string, DocValue>): DocOp[] => [
    {
      kind: 'update',
      collection: notificationChecksCollection,
      filter: { _id: event.data.runId },
      update: { $set: fields },
      upsert: true,
    },
  ];
  if (event.type === 'RunFellBack') return check({ jobId: event.data.jobId, fallbackReason: event.data.reason });
  if (event.type !== 'RunFinished') return [];
  const { status, fellBack, finishedAt, jobId } = event.data;
  // Only these can raise a notification; other runs never get a check document.
  if (status !== 'failed' && status !== 'timed_out' && !fellBack) return [];
  return check({ jobId, finishedAt, checked: false });
}
