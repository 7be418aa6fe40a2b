import { DomainError, type Decider, type DomainEvent } from './decider.js';
import type { NotificationBody, NotifyEvent } from './notification-types.js';
import { streamCategory } from './stream.js';

/**
 * The notifications of one finished run, as durable work (docs/design.md, "Notifications"): one stream per run, so "is
 * this run checked" and "was this event queued" are decided once with an expected-revision append, whichever runner
 * asks. Each attempt is claimed before it is made and ended after, so a crash between the two is seen and retried.
 */
export const notificationStream = streamCategory<NotificationStreamEvent>('notifications');
export const notificationStreamId = notificationStream.id;

export interface QueuedNotification {
  event: NotifyEvent;
  body: NotificationBody;
}

export type NotificationStreamEvent =
  | DomainEvent<
      'NotificationQueued',
      {
        runId: string;
        workspaceId: string;
        jobId: string;
        event: NotifyEvent;
        body: NotificationBody;
        queuedAt: number;
      }
    >
  /** The trigger check of the run is done; `events` are what it queued (possibly none). */
  | DomainEvent<
      'RunNotificationsChecked',
      { runId: string; workspaceId: string; events: NotifyEvent[]; checkedAt: number }
    >
  | DomainEvent<
      'NotificationAttemptStarted',
      { runId: string; event: NotifyEvent; attempt: number; runnerId: string; startedAt: number }
    >
  | DomainEvent<
      'NotificationDelivered',
      { runId: string; event: NotifyEvent; attempt: number; status: number; deliveredAt: number }
    >
  /** `retryAt` null: given up, for good (a permanent answer, or the last attempt). */
  | DomainEvent<
      'NotificationAttemptFailed',
      { runId: string; event: NotifyEvent; attempt: number; error: string; retryAt: number | null; failedAt: number }
    >;

export type DeliveryStatus = 'pending' | 'sending' | 'delivered' | 'failed';

export interface NotificationItem {
  status: DeliveryStatus;
  attempts: number;
  runnerId: string | null;
  retryAt: number;
}

export interface NotificationState {
  checked: boolean;
  items: Partial<Record<NotifyEvent, NotificationItem>>;
}

export type NotificationCommand =
  | {
      type: 'QueueNotifications';
      runId: string;
      workspaceId: string;
      jobId: string;
      notifications: QueuedNotification[];
      now: number;
    }
  | { type: 'StartAttempt'; runId: string; event: NotifyEvent; runnerId: string; now: number }
  /** Also ends an attempt whose runner stopped midway, so the notification can be tried again. */
  | {
      type: 'EndAttempt';
      runId: string;
      event: NotifyEvent;
      attempt: number;
      outcome: { delivered: true; status: number } | { delivered: false; error: string; retryAt: number | null };
      now: number;
    };

const taken = () => new DomainError('conflict', 'This notification is not waiting to be sent');

export const notificationDecider: Decider<NotificationCommand, NotificationStreamEvent, NotificationState> = {
  initialState: { checked: false, items: {} },

  evolve(state, e) {
    const item = (event: NotifyEvent, change: Partial<NotificationItem>): NotificationState => ({
      ...state,
      items: {
        ...state.items,
        [event]: {
          ...(state.items[event] ?? { status: 'pending', attempts: 0, runnerId: null, retryAt: 0 }),
          ...change,
        },
      },
    });
    switch (e.type) {
      case 'NotificationQueued':
        return item(e.data.event, { status: 'pending', attempts: 0, runnerId: null, retryAt: e.data.queuedAt });
      case 'RunNotificationsChecked':
        return { ...state, checked: true };
      case 'NotificationAttemptStarted':
        return item(e.data.event, { status: 'sending', attempts: e.data.attempt, runnerId: e.data.runnerId });
      case 'NotificationDelivered':
        return item(e.data.event, { status: 'delivered', runnerId: null });
      case 'NotificationAttemptFailed':
        return item(
          e.data.event,
          e.data.retryAt === null
            ? { status: 'failed', runnerId: null }
            : { status: 'pending', runnerId: null, retryAt: e.data.retryAt },
        );
    }
  },

  decide(command, state) {
    switch (command.type) {
      case 'QueueNotifications': {
        // Deduplicated by run and event: a run is checked once, whoever checks it second finds nothing to do.
        if (state.checked) return [];
        const { runId, workspaceId, jobId, now } = command;
        const fresh = command.notifications.filter(
          (n, i, all) => state.items[n.event] === undefined && all.findIndex((m) => m.event === n.event) === i,
        );
        return [
          ...fresh.map((n): NotificationStreamEvent => ({
            type: 'NotificationQueued',
            data: { runId, workspaceId, jobId, event: n.event, body: n.body, queuedAt: now },
          })),
          {
            type: 'RunNotificationsChecked',
            data: { runId, workspaceId, events: fresh.map((n) => n.event), checkedAt: now },
          },
        ];
      }
      case 'StartAttempt': {
        const item = state.items[command.event];
        if (!item || item.status !== 'pending' || item.retryAt > command.now) throw taken();
        return [
          {
            type: 'NotificationAttemptStarted',
            data: {
              runId: command.runId,
              event: command.event,
              attempt: item.attempts + 1,
              runnerId: command.runnerId,
              startedAt: command.now,
            },
          },
        ];
      }
      case 'EndAttempt': {
        const item = state.items[command.event];
        if (!item || item.status !== 'sending' || item.attempts !== command.attempt) throw taken();
        const { runId, event, attempt, outcome, now } = command;
        return outcome.delivered
          ? [
              {
                type: 'NotificationDelivered',
                data: { runId, event, attempt, status: outcome.status, deliveredAt: now },
              },
            ]
          : [
              {
                type: 'NotificationAttemptFailed',
                data: { runId, event, attempt, error: outcome.error, retryAt: outcome.retryAt, failedAt: now },
              },
            ];
      }
    }
  },
};
