import type { Mode, RunStatus } from './job-types.js';
import type { NotificationBody, NotifyEvent } from './notification-types.js';
import type { Trigger } from './run.js';

/**
 * Run notifications (docs/design.md, "Notifications"): which events a finished run raises, the message and body they
 * post, and what a webhook's answer means for the next attempt. Pure: the host reads settings and runs, signs and
 * dials.
 */

/** The product name the message, the User-Agent and the headers carry. */
export const productName = 'svc';
export const eventHeader = 'X-Svc-Event';
export const signatureHeader = 'X-Svc-Signature';

export const maxNotificationAttempts = 5;
/** Deliveries one runner makes at once. */
export const notificationConcurrency = 2;
export const notificationTimeoutMs = 10_000;
/** Total size of `text` (and of `content`) in UTF-8 bytes: Discord's limit, well inside Slack's. */
export const messageByteLimit = 2000;
/** Pause after attempt 1, 2, 3 and 4 failed in a way worth retrying; attempt 5 is the last. */
export const retryDelaysMs: readonly number[] = [2_000, 15_000, 60_000, 5 * 60_000];

/** What the trigger decision needs to know about a finished run. */
export interface FinishedRunFacts {
  status: RunStatus;
  fellBack: boolean;
  /** Whether the job is demoted now that this run has ended (read only when the run fell back). */
  demotedAfter: boolean;
}

export interface NotifySettings {
  notifyWebhookUrl: string | null;
  notifyOn: readonly NotifyEvent[];
}

/** The events a finished run raises, in a fixed order; none without a URL, and only those listed in notifyOn. */
export function triggersFor(run: FinishedRunFacts, settings: NotifySettings): NotifyEvent[] {
  if (!settings.notifyWebhookUrl) return [];
  const raised: NotifyEvent[] = [];
  if (run.status === 'failed' || run.status === 'timed_out') raised.push('run.failed');
  if (run.fellBack) {
    raised.push('run.fell_back');
    // Demotion follows from fallbacks only (docs/learning.md, "Demotion"), so it is looked at only after one.
    if (run.demotedAfter) raised.push('job.demoted');
  }
  return raised.filter((e) => settings.notifyOn.includes(e));
}

/** The run as a notification describes it. */
export interface NotifiedRun {
  id: string;
  workspaceId: string;
  jobId: string;
  jobName: string;
  number: number;
  status: RunStatus;
  mode: Mode;
  trigger: Trigger;
  fellBack: boolean;
  error: string | null;
  /** Why main fell short, when the run fell back. */
  fallbackReason: string | null;
  finishedAt: number;
}

export const runUrl = (baseUrl: string, workspaceId: string, runId: string) =>
  `${baseUrl.replace(/\/+$/, '')}/runs/${encodeURIComponent(runId)}?workspace=${encodeURIComponent(workspaceId)}`;

/** The first line of the message: `svc: <job> run #N`, then what happened to the run or the job. */
export function headline(event: NotifyEvent, run: NotifiedRun): string {
  const who = `${productName}: ${run.jobName} run #${run.number}`;
  switch (event) {
    case 'run.failed':
      return `${who} ${run.status === 'timed_out' ? 'timed out' : 'failed'}${run.error ? `: ${run.error}` : ''}`;
    case 'run.fell_back':
      return `${who} fell back to the agent: its main script fell short${run.fallbackReason ? ` (${run.fallbackReason})` : ''}`;
    case 'job.demoted':
      return `${productName}: ${run.jobName} is demoted after run #${run.number}: its last two scripted runs fell back, so it runs with the agent until a new main script graduates`;
  }
}

export const testHeadline = `${productName}: test notification. Notifications of this workspace reach this webhook.`;

/** Slack's mrkdwn escaping: only these three characters are control characters there. */
export const slackEscape = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

const bytes = (text: string) => new TextEncoder().encode(text).length;

/**
 * `shape(head) + tail` cut to `limit` UTF-8 bytes by shortening `head` (ending it with an ellipsis), so the run URL
 * on the last line always survives. Cutting before `shape` keeps an escape such as `&amp;` whole.
 */
export function fitMessage(head: string, tail: string, limit: number, shape: (s: string) => string = (s) => s): string {
  if (bytes(shape(head) + tail) <= limit) return shape(head) + tail;
  const chars = [...head];
  let lo = 0;
  let hi = chars.length - 1;
  // The longest prefix that fits, by bisection: the size grows with the prefix.
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (bytes(shape(chars.slice(0, mid).join('') + '…') + tail) <= limit) lo = mid;
    else hi = mid - 1;
  }
  const fitted = shape(chars.slice(0, lo).join('') + '…') + tail;
  if (bytes(fitted) <= limit) return fitted;
  // Only a tail longer than the limit itself (an absurd public URL) gets here: cut the whole text by characters.
  const all = [...fitted];
  while (all.length > 0 && bytes(all.join('')) > limit) all.pop();
  return all.join('');
}

function message(head: string, url: string | null): { text: string; content: string } {
  const tail = url ? `\n${url}` : '';
  return {
    text: fitMessage(head, tail, messageByteLimit, slackEscape),
    content: fitMessage(head, tail, messageByteLimit),
  };
}

const rfc3339 = (ms: number) => new Date(ms).toISOString();

/** The body a trigger posts; `redact` removes secret values from everything a run wrote. */
export function notificationBody(
  event: NotifyEvent,
  run: NotifiedRun,
  baseUrl: string,
  redact: (s: string) => string = (s) => s,
): NotificationBody {
  const safe: NotifiedRun = {
    ...run,
    jobName: redact(run.jobName),
    error: run.error === null ? null : redact(run.error),
    fallbackReason: run.fallbackReason === null ? null : redact(run.fallbackReason),
  };
  const url = runUrl(baseUrl, run.workspaceId, run.id);
  return {
    event,
    ...message(headline(event, safe), url),
    job: { id: run.jobId, name: safe.jobName },
    run: {
      id: run.id,
      number: run.number,
      status: run.status,
      mode: run.mode,
      trigger: run.trigger,
      fellBack: run.fellBack,
      error: safe.error,
      url,
    },
    timestamp: rfc3339(run.finishedAt),
    allowed_mentions: { parse: [] },
  };
}

export function testNotificationBody(now: number): NotificationBody {
  return {
    event: 'test',
    ...message(testHeadline, null),
    job: null,
    run: null,
    timestamp: rfc3339(now),
    allowed_mentions: { parse: [] },
  };
}

/** How one attempt ended, as the host saw it. */
export type AttemptResult =
  | { kind: 'answered'; status: number; detail: string }
  /** No answer: refused connection, DNS failure, timeout, reset. */
  | { kind: 'network'; error: string }
  /** Nothing was sent and sending again cannot help: no URL, an unreadable secret, an address the guard refuses. */
  | { kind: 'unsendable'; error: string };

export type Verdict = { delivered: true; status: number } | { delivered: false; error: string; retry: boolean };

/** 2xx delivers; 5xx, 429 and network errors are worth another try; anything else never will be. */
export function verdict(result: AttemptResult): Verdict {
  if (result.kind === 'unsendable') return { delivered: false, error: result.error, retry: false };
  if (result.kind === 'network') return { delivered: false, error: result.error, retry: true };
  const { status, detail } = result;
  if (status >= 200 && status < 300) return { delivered: true, status };
  const error = `the webhook answered HTTP ${status}${detail ? `: ${detail}` : ''}`;
  return { delivered: false, error, retry: status >= 500 || status === 429 };
}

/** When attempt `attempt` (from 1) may be followed by another, and when; null when it was the last. */
export function nextAttemptAt(attempt: number, retry: boolean, now: number): number | null {
  if (!retry || attempt >= maxNotificationAttempts) return null;
  return now + retryDelaysMs[Math.min(attempt, retryDelaysMs.length) - 1]!;
}
