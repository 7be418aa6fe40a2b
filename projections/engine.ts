import type { Subscription } from 'rxjs';
import type { Doc, DocumentStore } from '../store/document-store.js';
import type { EventStore, Position, RecordedEvent } from '../store/event-store.js';
import { upcast } from '../domain/upcast.js';
import type { DocOp, Projector } from './projector.js';

interface CheckpointDoc extends Doc {
  position: string | null;
  version: number;
}

const checkpointCollection = 'projection_checkpoints';
const flushDelayMs = 50;

export interface EngineLogger {
  error(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

/**
 * Feeds every projector from one subscription to the global log: catch-up from the oldest checkpoint, then live.
 * Each projector keeps its own checkpoint, so one can be rebuilt while the others stay where they are.
 */
export class ProjectionEngine {
  private readonly checkpoints = new Map<string, Position | null>();
  private processed: Position | null = null;
  private subscription: Subscription | null = null;
  private queue: RecordedEvent[] = [];
  private draining = false;
  private dirty = false;
  private flushTimer: NodeJS.Timeout | null = null;
  private waiters: Array<{ position: Position; resolve: (ok: boolean) => void; timer: NodeJS.Timeout }> = [];
  private failure: Error | null = null;
  private readonly changeListeners: Array<(collections: Set<string>) => void> = [];

  constructor(
    private readonly events: EventStore,
    private readonly docs: DocumentStore,
    readonly projectors: Projector[],
    private readonly log: EngineLogger,
  ) {}

  get running(): boolean {
    return this.subscription !== null;
  }

  /** Called after each event with the collections it changed, before any waiter for it resolves. */
  onChange(listener: (collections: Set<string>) => void): void {
    this.changeListeners.push(listener);
  }

  async start(): Promise<void> {
    const stored = this.docs.collection<CheckpointDoc>(checkpointCollection);
    for (const p of this.projectors) {
      for (const index of p.indexes) {
        await this.docs.collection(index.collection).createIndex(index.keys, { unique: index.unique ?? false });
      }
      const cp = await stored.findOne({ _id: p.name });
      if (cp && cp.version !== p.version) {
        this.log.info({ projector: p.name, from: cp.version, to: p.version }, 'projector changed, rebuilding its read model');
        await this.reset(p);
        this.checkpoints.set(p.name, null);
      } else {
        this.checkpoints.set(p.name, (cp?.position as Position | null | undefined) ?? null);
      }
    }
    const from = this.oldestCheckpoint();
    this.processed = from;
    this.subscription = this.events.subscribeAll({ after: from }).subscribe({
      next: (e) => {
        this.queue.push(e);
        void this.drain();
      },
      error: (err: Error) => {
        this.failure = err;
        this.log.error({ err }, 'projection subscription failed');
      },
    });
  }

  async stop(): Promise<void> {
    this.subscription?.unsubscribe();
    this.subscription = null;
    while (this.draining) await new Promise((r) => setTimeout(r, 5));
    await this.flush();
    for (const w of this.waiters) {
      clearTimeout(w.timer);
      w.resolve(false);
    }
    this.waiters = [];
  }

  /** Drops the read models of the named projectors (all when empty) and replays them from the start of the log. */
  async rebuild(names: string[] = []): Promise<string[]> {
    const chosen = names.length === 0 ? this.projectors : this.projectors.filter((p) => names.includes(p.name));
    const unknown = names.filter((n) => !this.projectors.some((p) => p.name === n));
    if (unknown.length > 0) throw new Error(`unknown projector: ${unknown.join(', ')} (known: ${this.projectors.map((p) => p.name).join(', ')})`);
    const wasRunning = this.running;
    if (wasRunning) await this.stop();
    for (const p of chosen) {
      await this.reset(p);
      this.checkpoints.set(p.name, null);
    }
    const dropped = new Set(chosen.flatMap((p) => p.collections));
    for (const l of this.changeListeners) l(dropped);
    await this.flushAll();
    if (wasRunning) await this.start();
    return chosen.map((p) => p.name);
  }

  /** Runs until the log's current head is projected; for offline rebuilds from the CLI. */
  async catchUp(timeoutMs = 600_000): Promise<void> {
    const head = await this.events.headPosition();
    if (head && !(await this.waitFor(head, timeoutMs))) throw new Error('projection did not catch up in time');
  }

  /**
   * Read-your-writes: resolves true once every projector has passed `position`, false after `timeoutMs`.
   * Without a local engine (an api-only process) it polls the stored checkpoints.
   */
  async waitFor(position: Position | null, timeoutMs = 500): Promise<boolean> {
    if (position === null) return true;
    if (this.failure) throw this.failure;
    if (!this.running) return this.pollStored(position, timeoutMs);
    if (this.processed && this.events.comparePositions(this.processed, position) >= 0) return true;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w.timer !== timer);
        resolve(false);
      }, timeoutMs);
      this.waiters.push({ position, resolve, timer });
    });
  }

  private async pollStored(position: Position, timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    const stored = this.docs.collection<CheckpointDoc>(checkpointCollection);
    for (;;) {
      const cps = await stored.find({ _id: { $in: this.projectors.map((p) => p.name) } });
      const passed =
        cps.length === this.projectors.length &&
        cps.every((c) => c.position !== null && this.events.comparePositions(c.position as Position, position) >= 0);
      if (passed) return true;
      if (Date.now() >= deadline) return false;
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  private oldestCheckpoint(): Position | null {
    let oldest: Position | null = null;
    let first = true;
    for (const cp of this.checkpoints.values()) {
      if (cp === null) return null;
      if (first || this.events.comparePositions(cp, oldest!) < 0) oldest = cp;
      first = false;
    }
    return oldest;
  }

  private async drain(): Promise<void> {
    if (this.draining) return;
    this.draining = true;
    try {
      while (this.queue.length > 0 && this.subscription) {
        const event = this.queue.shift()!;
        await this.apply(event);
      }
    } catch (err) {
      this.failure = err as Error;
      this.log.error({ err }, 'projection failed; the read model stops here until the cause is fixed');
      this.subscription?.unsubscribe();
      this.subscription = null;
    } finally {
      this.draining = false;
    }
  }

  private async apply(raw: RecordedEvent): Promise<void> {
    const event = upcast(raw);
    const changed = new Set<string>();
    for (const p of this.projectors) {
      const cp = this.checkpoints.get(p.name) ?? null;
      if (cp !== null && this.events.comparePositions(event.position, cp) <= 0) continue;
      for (const op of p.project(event)) {
        await this.applyOp(op);
        changed.add(op.collection);
      }
      this.checkpoints.set(p.name, event.position);
    }
    if (changed.size > 0) for (const l of this.changeListeners) l(changed);
    this.processed = event.position;
    this.scheduleFlush();
    if (this.waiters.length > 0) {
      this.waiters = this.waiters.filter((w) => {
        if (this.events.comparePositions(event.position, w.position) < 0) return true;
        clearTimeout(w.timer);
        w.resolve(true);
        return false;
      });
    }
  }

  private async applyOp(op: DocOp): Promise<void> {
    const c = this.docs.collection(op.collection);
    if (op.kind === 'derive') {
      for (const derived of await op.derive(this.docs)) await this.applyOp(derived);
    } else if (op.kind === 'delete') await c.deleteMany(op.filter);
    else if (op.many) await c.updateMany(op.filter, op.update, { upsert: op.upsert ?? false });
    else await c.updateOne(op.filter, op.update, { upsert: op.upsert ?? false });
  }

  /** Checkpoints are written at most every 50 ms: replaying a few idempotent events after a crash is cheaper. */
  private scheduleFlush(): void {
    this.dirty = true;
    if (this.flushTimer) return;
    this.flushTimer = setTimeout(() => {
      this.flushTimer = null;
      void this.flush().catch((err: unknown) => this.log.error({ err }, 'could not save projection checkpoints'));
    }, flushDelayMs);
  }

  private async flush(): Promise<void> {
    if (this.flushTimer) {
      clearTimeout(this.flushTimer);
      this.flushTimer = null;
    }
    if (!this.dirty) return;
    this.dirty = false;
    await this.flushAll();
  }

  private async flushAll(): Promise<void> {
    const stored = this.docs.collection<CheckpointDoc>(checkpointCollection);
    for (const p of this.projectors) {
      const position = this.checkpoints.get(p.name) ?? null;
      await stored.updateOne({ _id: p.name }, { $set: { position, version: p.version } }, { upsert: true });
    }
  }

  private async reset(p: Projector): Promise<void> {
    for (const name of p.collections) await this.docs.collection(name).drop();
    for (const index of p.indexes) {
      await this.docs.collection(index.collection).createIndex(index.keys, { unique: index.unique ?? false });
    }
  }
}
