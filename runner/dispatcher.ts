import { hostname } from 'node:os';
import type { Subscription } from 'rxjs';
import { DomainError } from '../domain/decider.js';
import { runDecider, runStreamId } from '../domain/run.js';
import { stopMessages } from '../domain/run-stop.js';
import { runsCollection, type RunDoc } from '../projections/runs.js';
import type { CommandBus } from '../app/commands.js';
import { newId } from '../app/ids.js';
import type { Runs } from '../app/runs.js';
import type { Doc, DocumentStore } from '../store/document-store.js';
import type { EventStore } from '../store/event-store.js';
import type { RunExecutor } from '../app/run/executor.js';
import type { SandboxBackend } from '../adapters/sandbox/types.js';

interface RunnerDoc extends Doc {
  host: string;
  pid: number;
  heartbeatAt: number;
}

/** The error of a run whose runner is gone (a stop for the reason `interrupted`). */
export const interruptedMessage = stopMessages.interrupted;
const heartbeatMs = 15_000;
const staleMs = 60_000;

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export interface DispatcherLogger {
  error(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

/**
 * Claims queued runs and executes them, at most `maxConcurrent` at once. Claiming is an expected-revision append to
 * the run's stream, so two runners never take the same run. A heartbeat document per runner lets any runner end
 * the live runs of a dead one as interrupted; they are never resumed.
 */
export class Dispatcher {
  readonly runnerId = newId();
  private readonly active = new Map<string, { abort: AbortController; done: Promise<void>; watch: Subscription }>();
  private timers: NodeJS.Timeout[] = [];
  private nudges: Subscription | null = null;
  private polling: Promise<void> | null = null;
  private stopped = false;

  constructor(
    private readonly bus: CommandBus,
    private readonly events: EventStore,
    private readonly docs: DocumentStore,
    private readonly runs: Runs,
    private readonly executor: RunExecutor,
    private readonly backend: SandboxBackend,
    private readonly log: DispatcherLogger,
    private readonly maxConcurrent = 3,
    private readonly clock: () => number = Date.now,
  ) {}

  private get runners() {
    return this.docs.collection<RunnerDoc>('runners');
  }

  async start(): Promise<void> {
    await this.heartbeat();
    await this.reconcile();
    this.nudges = this.runs.startable.subscribe(() => this.poll());
    this.timers.push(setInterval(() => this.poll(), 500));
    this.timers.push(
      setInterval(
        () => void this.heartbeat().catch((err: unknown) => this.log.error({ err }, 'heartbeat failed')),
        heartbeatMs,
      ),
    );
    this.timers.push(
      setInterval(
        () => void this.reconcile().catch((err: unknown) => this.log.error({ err }, 'reconcile failed')),
        staleMs,
      ),
    );
    this.timers.push(
      setInterval(
        () => void this.reap().catch((err: unknown) => this.log.error({ err }, 'sandbox reaping failed')),
        10 * 60_000,
      ),
    );
    void this.reap().catch((err: unknown) => this.log.error({ err }, 'sandbox reaping failed'));
    this.poll();
  }

  /** Stops claiming, cancels what runs here and waits for those runs to finish. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.nudges?.unsubscribe();
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    await this.polling;
    for (const a of this.active.values()) a.abort.abort();
    await Promise.all([...this.active.values()].map((a) => a.done));
    await this.runners.deleteMany({ _id: this.runnerId });
  }

  get activeCount(): number {
    return this.active.size;
  }

  /** A nudge: its promise never rejects and is kept in `polling` for stop() to wait on. */
  poll(): void {
    this.polling ??= this.claimAndStart()
      .catch((err: unknown) => this.log.error({ err }, 'dispatch failed'))
      .finally(() => {
        this.polling = null;
      });
  }

  private async claimAndStart(): Promise<void> {
    while (!this.stopped && this.active.size < this.maxConcurrent) {
      const waiting = await this.docs
        .collection<RunDoc>(runsCollection)
        .find(
          { status: 'queued', submitted: true },
          { sort: [['queuedAt', 1]], limit: this.maxConcurrent - this.active.size + 5 },
        );
      const candidates = waiting.filter((r) => !this.active.has(r._id));
      if (candidates.length === 0) return;
      let claimedAny = false;
      for (const run of candidates) {
        if (this.stopped || this.active.size >= this.maxConcurrent) return;
        if (await this.claim(run)) claimedAny = true;
      }
      if (!claimedAny) return;
    }
  }

  private async claim(run: RunDoc): Promise<boolean> {
    try {
      const ctx = {
        workspaceId: run.workspaceId,
        actor: { type: 'system' as const, id: this.runnerId },
        requestId: null,
        correlationId: run._id,
      };
      const claimed = await this.bus.execute(
        runStreamId(run._id),
        runDecider,
        { type: 'ClaimRun', runnerId: this.runnerId, now: this.clock() },
        ctx,
      );
      const abort = new AbortController();
      // A cancel may come from any process: it arrives as an event on the run's stream.
      const watch = this.events.subscribeStream(runStreamId(run._id), { fromRevision: 0 }).subscribe((e) => {
        if (e.type === 'RunCancelRequested') abort.abort();
      });
      // The executor ends its own failures; what escapes it (the run's first read) must not take the process down.
      const done = this.executor
        .execute(run._id, abort.signal)
        .catch((err: unknown) => this.log.error({ err, runId: run._id }, 'run failed before it started'))
        .finally(() => {
          watch.unsubscribe();
          this.active.delete(run._id);
          this.poll();
        });
      this.active.set(run._id, { abort, done, watch });
      void claimed;
      return true;
    } catch (err) {
      if (err instanceof DomainError && err.code === 'conflict') return false; // another runner won, or it was cancelled
      throw err;
    }
  }

  private async heartbeat(): Promise<void> {
    await this.runners.updateOne(
      { _id: this.runnerId },
      { $set: { host: hostname(), pid: process.pid, heartbeatAt: this.clock() } },
      { upsert: true },
    );
  }

  /**
   * Destroys sandboxes nothing needs: no run after 15 minutes, a finished run, or past their expiry.
   * A lookup that fails destroys nothing.
   */
  async reap(): Promise<number> {
    const now = this.clock();
    let destroyed = 0;
    for (const sb of await this.backend.list()) {
      if (sb.labels.runId && this.active.has(sb.labels.runId)) continue;
      const run = sb.labels.runId
        ? await this.docs.collection<RunDoc>(runsCollection).findOne({ _id: sb.labels.runId })
        : null;
      const orphan = run === null && now - sb.createdAt > 15 * 60_000;
      const over = run !== null && !['queued', 'provisioning', 'running', 'verifying'].includes(run.status);
      // A live run elsewhere keeps its sandbox until the sandbox expires.
      if (orphan || over || sb.expiresAt < now) {
        await this.backend.destroy(sb.id);
        destroyed++;
      }
    }
    return destroyed;
  }

  /** A runner is gone when it has no heartbeat document, its process on this host is dead, or it is silent for a minute. */
  async runnerGone(runnerId: string): Promise<boolean> {
    if (runnerId === this.runnerId) return false;
    const runner = await this.runners.findOne({ _id: runnerId });
    // Same host: a pid that is gone, or that is now this process (a restarted container is pid 1 again).
    const sameHostDead =
      runner !== null && runner.host === hostname() && (runner.pid === process.pid || !processAlive(runner.pid));
    return !runner || sameHostDead || this.clock() - runner.heartbeatAt > staleMs;
  }

  /** Ends live runs whose runner is gone: a dead process on this host at once, any other after a minute of silence. */
  async reconcile(): Promise<number> {
    const live = await this.docs
      .collection<RunDoc>(runsCollection)
      .find({ status: { $in: ['provisioning', 'running', 'verifying'] } });
    let ended = 0;
    for (const run of live) {
      if (!run.runnerId || run.runnerId === this.runnerId) continue;
      if (!(await this.runnerGone(run.runnerId))) continue;
      this.log.info({ runId: run._id, runnerId: run.runnerId }, 'ending a run whose runner stopped');
      await this.runs.interrupt(run.jobId, run._id, interruptedMessage);
      ended++;
    }
    return ended;
  }
}
