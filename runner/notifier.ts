import { PassLoop } from '../app/pass-loop.js';
import { DomainError } from '../domain/decider.js';
import {
  nextAttemptAt,
  notificationBody,
  notificationConcurrency,
  triggersFor,
  verdict,
  type AttemptResult,
  type NotifiedRun,
  type NotifySettings,
} from '../domain/notification.js';
import { notificationDecider, notificationStreamId, type QueuedNotification } from '../domain/notification-stream.js';
import { redactor } from '../domain/redact.js';
import { jobsCollection, type JobDoc } from '../projections/jobs.js';
import {
  notificationChecksCollection,
  notificationsCollection,
  type NotificationCheckDoc,
  type NotificationDoc,
} from '../projections/notifications.js';
import { runsCollection, type RunDoc } from '../projections/runs.js';
import type { NotificationBody } from '../schemas/notification.js';
import type { CommandBus, CommandContext } from '../app/commands.js';
import type { DocumentStore } from '../store/document-store.js';

export interface NotifierPorts {
  bus: CommandBus;
  docs: DocumentStore;
  runnerId: string;
  /** Whether the runner that claimed an attempt is gone (then its attempt is ended here and tried again). */
  runnerGone(runnerId: string): Promise<boolean>;
  settings(workspaceId: string): Promise<NotifySettings>;
  secretValues(workspaceId: string): Promise<string[]>;
  /** One delivery attempt (app/notifications.ts). */
  send(workspaceId: string, body: NotificationBody): Promise<AttemptResult>;
  /** Where people open a run: SVC_PUBLIC_URL, else the address the API listens on. */
  baseUrl(): string;
  log: { error(obj: object, msg: string): void; info(obj: object, msg: string): void };
  clock?: () => number;
  pollMs?: number;
}

/**
 * Runs that finished longer ago than this are not checked any more: a notification hours late is noise, and the
 * first start after an upgrade would otherwise announce every old failure at once.
 */
const checkWindowMs = 60 * 60_000;

/**
 * The notifier (docs/design.md, "Notifications"), one per runner. It checks finished runs for triggers and queues what they raise on
 * the run's notification stream, then delivers due notifications, `notificationConcurrency` at a time. Every step is
 * an expected-revision append, so runners share the work without sending anything twice, and a crash loses nothing:
 * an unchecked run is checked again, and an attempt whose runner stopped is ended and retried.
 */
export class Notifier {
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  private readonly loop = new PassLoop(
    () => this.pass(),
    (err) => this.ports.log.error({ err }, 'notification pass failed'),
  );
  private readonly sending = new Map<string, Promise<void>>();
  private readonly clock: () => number;

  constructor(private readonly ports: NotifierPorts) {
    this.clock = ports.clock ?? Date.now;
  }

  start(): void {
    this.timer = setInterval(() => this.poke(), this.ports.pollMs ?? 1000);
    this.poke();
  }

  /** New read-model changes: a check or a notification may be waiting (wired to the projection engine). */
  changed(collections: Set<string>): void {
    if (collections.has(notificationChecksCollection) || collections.has(notificationsCollection)) this.poke();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.loop.stop();
    await Promise.all(this.sending.values());
  }

  poke(): void {
    this.loop.poke();
  }

  private async pass(): Promise<void> {
    const now = this.clock();
    const checks = await this.ports.docs
      .collection<NotificationCheckDoc>(notificationChecksCollection)
      .find({ checked: false, finishedAt: { $gte: now - checkWindowMs } }, { sort: [['finishedAt', 1]], limit: 20 });
    for (const check of checks) {
      if (this.stopped) return;
      await this.check(check._id).catch((err: unknown) =>
        this.ports.log.error({ err, runId: check._id }, 'could not check a run for notifications'),
      );
    }
    await this.recoverStale();
    await this.deliverDue();
  }

  private context(workspaceId: string, runId: string): CommandContext {
    return { workspaceId, actor: { type: 'system', id: this.ports.runnerId }, requestId: null, correlationId: runId };
  }

  /** Decides the run's triggers from the settings of now and queues them with their bodies; a run is checked once. */
  private async check(runId: string): Promise<void> {
    const run = await this.ports.docs.collection<RunDoc>(runsCollection).findOne({ _id: runId });
    if (!run || run.finishedAt === null) return;
    const ws = run.workspaceId;
    const settings = await this.ports.settings(ws);
    // Demotion is computed by the jobs read model from this run's end, already projected when the check appeared.
    const job = run.fellBack
      ? await this.ports.docs.collection<JobDoc>(jobsCollection).findOne({ _id: run.jobId })
      : null;
    const events = triggersFor(
      { status: run.status, fellBack: run.fellBack, demotedAfter: job?.demoted === true },
      settings,
    );
    let notifications: QueuedNotification[] = [];
    if (events.length > 0) {
      const check = await this.ports.docs
        .collection<NotificationCheckDoc>(notificationChecksCollection)
        .findOne({ _id: runId });
      const facts: NotifiedRun = {
        id: run._id,
        workspaceId: ws,
        jobId: run.jobId,
        jobName: run.jobName,
        number: run.number,
        status: run.status,
        mode: run.mode,
        trigger: run.trigger,
        fellBack: run.fellBack,
        error: run.error,
        fallbackReason: check?.fallbackReason ?? null,
        finishedAt: run.finishedAt,
      };
      // Runs store their texts redacted already; this also covers secrets added since and the job's own name.
      const redact = redactor(await this.ports.secretValues(ws).catch(() => []));
      notifications = events.map((event) => ({
        event,
        body: notificationBody(event, facts, this.ports.baseUrl(), redact),
      }));
    }
    await this.ports.bus.execute(
      notificationStreamId(runId),
      notificationDecider,
      { type: 'QueueNotifications', runId, workspaceId: ws, jobId: run.jobId, notifications, now: this.clock() },
      this.context(ws, runId),
    );
  }

  /** Attempts claimed by a runner that stopped are ended as failed, so they are tried again (or given up). */
  private async recoverStale(): Promise<void> {
    const claimed = await this.ports.docs
      .collection<NotificationDoc>(notificationsCollection)
      .find({ status: 'sending' }, { limit: 20 });
    for (const doc of claimed) {
      if (doc.runnerId === this.ports.runnerId || this.sending.has(doc._id)) continue;
      if (doc.runnerId !== null && !(await this.ports.runnerGone(doc.runnerId))) continue;
      const now = this.clock();
      await this.end(doc, {
        delivered: false,
        error: 'the runner sending it stopped before an answer came',
        retryAt: nextAttemptAt(doc.attempts, true, now),
      });
    }
  }

  private async deliverDue(): Promise<void> {
    const free = notificationConcurrency - this.sending.size;
    if (free <= 0 || this.stopped) return;
    const due = await this.ports.docs
      .collection<NotificationDoc>(notificationsCollection)
      .find({ status: 'pending', retryAt: { $lte: this.clock() } }, { sort: [['retryAt', 1]], limit: free + 5 });
    for (const doc of due) {
      if (this.stopped || this.sending.size >= notificationConcurrency) return;
      if (this.sending.has(doc._id)) continue;
      const attempt = await this.claim(doc);
      if (attempt === null) continue;
      const done = this.deliver(doc, attempt)
        .catch((err: unknown) =>
          this.ports.log.error(
            { err, runId: doc.runId, event: doc.event },
            'notification delivery failed unexpectedly',
          ),
        )
        .finally(() => {
          this.sending.delete(doc._id);
          this.poke();
        });
      this.sending.set(doc._id, done);
    }
  }

  /** The attempt number this runner now holds, or null when another runner was first. */
  private async claim(doc: NotificationDoc): Promise<number | null> {
    try {
      const r = await this.ports.bus.execute(
        notificationStreamId(doc.runId),
        notificationDecider,
        { type: 'StartAttempt', runId: doc.runId, event: doc.event, runnerId: this.ports.runnerId, now: this.clock() },
        this.context(doc.workspaceId, doc.runId),
      );
      return r.state.items[doc.event]?.attempts ?? null;
    } catch (err) {
      if (err instanceof DomainError && err.code === 'conflict') return null;
      throw err;
    }
  }

  private async deliver(doc: NotificationDoc, attempt: number): Promise<void> {
    const result = await this.ports.send(doc.workspaceId, doc.body);
    const v = verdict(result);
    const now = this.clock();
    if (v.delivered) return this.end({ ...doc, attempts: attempt }, { delivered: true, status: v.status });
    const retryAt = nextAttemptAt(attempt, v.retry, now);
    const where = { runId: doc.runId, event: doc.event, attempt, error: v.error };
    if (retryAt === null)
      this.ports.log.error(
        where,
        v.retry ? 'notification given up after its last attempt' : 'notification not accepted; not retried',
      );
    else this.ports.log.info({ ...where, retryAt }, 'notification will be retried');
    await this.end({ ...doc, attempts: attempt }, { delivered: false, error: v.error, retryAt });
  }

  private async end(
    doc: NotificationDoc,
    outcome: { delivered: true; status: number } | { delivered: false; error: string; retryAt: number | null },
  ): Promise<void> {
    try {
      await this.ports.bus.execute(
        notificationStreamId(doc.runId),
        notificationDecider,
        { type: 'EndAttempt', runId: doc.runId, event: doc.event, attempt: doc.attempts, outcome, now: this.clock() },
        this.context(doc.workspaceId, doc.runId),
      );
    } catch (err) {
      // Another runner ended it first (it took this attempt for a stopped one's): its outcome stands.
      if (!(err instanceof DomainError && err.code === 'conflict')) throw err;
    }
  }
}
