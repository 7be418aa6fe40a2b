import type { Mode, RunStatus } from './job-types.js';
import type { Trigger } from './run.js';

/**
 * What a notification says, as notification streams store it (docs/events.md); `schemas/notification.ts` proves the
 * API (the settings page's test answer) carries the same shape.
 */

/** The events a workspace can subscribe to. */
export type NotifyEvent = 'run.failed' | 'run.fell_back' | 'job.demoted';
/** What a notification is about: one of those, or the settings page's test. */
export type NotificationEvent = NotifyEvent | 'test';

/**
 * The JSON body every notification posts: `text` for Slack (`&<>` escaped), `content` for Discord (plain);
 * `allowed_mentions` keeps Discord from pinging anyone a job name or an error happens to name. A test has no job and
 * no run.
 */
export interface NotificationBody {
  event: NotificationEvent;
  text: string;
  content: string;
  job: { id: string; name: string } | null;
  run: {
    id: string;
    number: number;
    status: RunStatus;
    mode: Mode;
    trigger: Trigger;
    fellBack: boolean;
    error: string | null;
    url: string;
  } | null;
  timestamp: string;
  allowed_mentions: { parse: string[] };
}
