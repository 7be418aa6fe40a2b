import type { Subscription } from 'rxjs';
import { byIdOnly, type Doc, type DocumentStore, type Update } from '../store/document-store.js';
import type { AllFilter, EventStore, Position, RecordedEvent } from '../store/event-store.js';
import { categoryOf } from '../domain/stream.js';
import { upcast } from '../domain/upcast.js';
import { WriteBackDocuments } from '../store/write-back-documents.js';
import type { DocOp, MemoReads, Projector, ReplayMemo } from './projector.js';

interface CheckpointDoc extends Doc {
  position: string | null;
  version: number;
  /** Set while the projector fails, so processes without the projector role can report it too. */
  lastError?: string | null;
  retries?: number;
}

const checkpointCollection = 'projection_checkpoints';
const flushDelayMs = 50;
/** A failed projector is retried after 100 ms, doubling up to 30 s (docs/design.md, "Failure handling"). */
const firstRetryMs = 100;
const maxRetryMs = 30_000;
/** Events read, applied and committed together by a replay (`ProjectionEngine.replay`). */
const replayBatch = 1000;
/** Events read per step when a recovering projector catches up on what it missed. */
const catchUpBatch = 500;
/** Events the drain loop applies in one transaction, between turns of the event loop. */
const batchMax = 200;
/** How many recent events' streams are remembered to tell whether a write concerns a failed read model. */
const recentEventsKept = 4096;
/** Streams remembered per failed projector; past this every write counts as one it may miss. */
const missedStreamsKept = 10_000;
const errorChars = 500;
/** What a replay's derives keep at most (`ReplayMemo`): a job's run fields take about a kilobyte. */
const replayMemoEntries = 50_000;

/**
 * Documents a collection of the replay's write-back cache keeps from one page to the next, those written or read last
 * (docs/design.md, "Replay"): a job's document and its day's statistics are changed by most pages, and reading them
 * again from the store each page cost about 5% of a rebuild.
 */
const replayHeldDocuments = 2_000;

type DeriveOp = DocOp & { kind: 'derive' };

export interface EngineLogger {
  error(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

/**
 * How far a replay is: events of the log passed so far (those no projector maps included), of `total` when the store
 * tells cheaply about how many follow a position (`EventStore.countAfter`); without it, events applied so far.
 */
export interface ReplayProgress {
  done: number;
  total: number | null;
  elapsedMs: number;
}

/** What `GET /api/system/info` reports per projector. */
export interface ProjectionStatus {
  name: string;
  /** The last event applied, opaque; null before the first. */
  position: string | null;
  healthy: boolean;
  lastError: string | null;
  /** Retries since the current failure began; 0 when healthy. */
  retries: number;
}

/**
 * A write was stored, but a read model it shows up in is failing: answering from that read model now would show a
 * state without the write. The API answers 503 with the projector's name.
 */
export class ProjectionUnavailable extends Error {
  readonly code = 'projection_unavailable';
  constructor(
    readonly projectors: string[],
    message = `The change was saved, but the ${projectors.join(', ')} read model${projectors.length === 1 ? ' is' : 's are'} failing and cannot show it yet; it is retried on its own (see GET /api/system/info)`,
  ) {
    super(message);
  }
}

/**
 * How long a write's answer waits for the read models to show it. Far above a healthy engine's lag (milliseconds);
 * reached during a projector takeover or on a machine that cannot keep up (docs/design.md, "Failure handling").
 */
export const readYourWritesMs = 5_000;

interface Lane {
  projector: Projector;
  /** The stream categories the projector maps (`Projector.categories`); null for every event. */
  offered: ReadonlySet<string> | null;
  checkpoint: Position | null;
  healthy: boolean;
  lastError: string | null;
  retries: number;
  retryTimer: NodeJS.Timeout | null;
  retryDue: boolean;
  /** Streams of events this projector had to skip while failed; null once there were too many to keep. */
  missed: Set<string> | null;
}

/**
 * Feeds every projector from one subscription to the global log: catch-up from the oldest checkpoint, then live.
 * Each projector keeps its own checkpoint, so one can be rebuilt while the others stay where they are, and one that
 * fails stops alone: it is retried with backoff and catches up from its checkpoint, while the others go on.
 */
export class ProjectionEngine {
  private readonly lanes = new Map<string, Lane>();
  private processed: Position | null = null;
  /** The last position handed to the queue; a resubscription skips what is already queued. */
  private enqueued: Position | null = null;
  private subscription: Subscription | null = null;
  private resubscribeTimer: NodeJS.Timeout | null = null;
  private subscriptionFailures = 0;
  private queue: RecordedEvent[] = [];
  private draining: Promise<void> | null = null;
  private dirty = false;
  private flushTimer: NodeJS.Timeout | null = null;
  private waiters: Array<{ position: Position; resolve: (ok: boolean) => void; timer: NodeJS.Timeout }> = [];
  private readonly recent = new Map<Position, string>();
  private readonly changeListeners: Array<(collections: Set<string>) => void> = [];
  /** Whether this process may still write read models (a projector lease); checked before each event. */
  private mayWrite: () => boolean = () => true;

  constructor(
    private readonly events: EventStore,
    private readonly docs: DocumentStore,
    readonly projectors: Projector[],
    private readonly log: EngineLogger,
  ) {
    for (const p of projectors) this.lanes.set(p.name, freshLane(p));
  }

  get running(): boolean {
    return this.subscription !== null || this.resubscribeTimer !== null;
  }

  /**
   * Stops applying events as soon as `check` answers false, even between the lease's renewals, so a process that
   * lost its lease writes at most the event in hand (docs/design.md, "Projector lease").
   */
  guardWrites(check: () => boolean): void {
    this.mayWrite = check;
  }

  /** Called after each event with the collections it changed, before any waiter for it resolves. */
  onChange(listener: (collections: Set<string>) => void): void {
    this.changeListeners.push(listener);
  }

  async start(): Promise<void> {
    await this.loadLanes();
    const from = this.oldestCheckpoint();
    this.processed = from;
    this.enqueued = from;
    this.queue = [];
    // Another process may have written the read models while this one did not run: nothing cached before holds.
    const all = new Set(this.projectors.flatMap((p) => p.collections));
    for (const l of this.changeListeners) l(all);
    this.subscribe();
  }

  /**
   * Indexes and stored checkpoints; a projector whose version changed starts over from an empty read model. For a
   * replay (`forReplay`), a read model that starts empty gets only the indexes its projectors read; the replay builds
   * the others at its end.
   */
  private async loadLanes(forReplay = false): Promise<void> {
    const stored = this.docs.collection<CheckpointDoc>(checkpointCollection);
    for (const p of this.projectors) {
      const cp = await stored.findOne({ _id: p.name });
      const lane = freshLane(p);
      this.lanes.set(p.name, lane);
      if (cp && cp.version !== p.version) {
        this.log.info(
          { projector: p.name, from: cp.version, to: p.version },
          'projector changed, rebuilding its read model',
        );
        await this.reset(p, forReplay);
      } else {
        lane.checkpoint = (cp?.position as Position | null | undefined) ?? null;
        await this.createIndexes(p, forReplay && lane.checkpoint === null);
      }
    }
  }

  /** A projector's indexes; `deferred` leaves out those built after a replay (`IndexSpec.afterReplay`). */
  private async createIndexes(p: Projector, deferred: boolean): Promise<void> {
    for (const index of p.indexes) {
      if (deferred && index.afterReplay) continue;
      await this.docs.collection(index.collection).createIndex(index.keys, { unique: index.unique ?? false });
    }
  }

  private subscribe(): void {
    this.resubscribeTimer = null;
    this.subscription = this.events.subscribeAll({ after: this.enqueued }).subscribe({
      next: (e) => {
        if (this.enqueued !== null && this.events.comparePositions(e.position, this.enqueued) <= 0) return;
        this.enqueued = e.position;
        this.subscriptionFailures = 0;
        this.queue.push(e);
        this.kick();
      },
      // The log itself failed (a closed or broken store): subscribe again with backoff from what is queued.
      error: (err: Error) => {
        this.subscription = null;
        this.subscriptionFailures++;
        const delay = backoff(this.subscriptionFailures);
        this.log.error({ err, retryInMs: delay }, 'projection subscription failed; subscribing again');
        this.resubscribeTimer = setTimeout(() => this.subscribe(), delay);
      },
    });
  }

  async stop(): Promise<void> {
    this.subscription?.unsubscribe();
    this.subscription = null;
    if (this.resubscribeTimer) clearTimeout(this.resubscribeTimer);
    this.resubscribeTimer = null;
    for (const lane of this.lanes.values()) {
      if (lane.retryTimer) clearTimeout(lane.retryTimer);
      lane.retryTimer = null;
    }
    await this.draining;
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
    if (unknown.length > 0)
      throw new Error(
        `unknown projector: ${unknown.join(', ')} (known: ${this.projectors.map((p) => p.name).join(', ')})`,
      );
    const wasRunning = this.running;
    if (wasRunning) await this.stop();
    // The others keep their stored checkpoints, which are written back below with the chosen ones' reset.
    else await this.loadLanes();
    // Their indexes but those a replay reads come back with the next replay or start (docs/design.md, "Replay").
    // One transaction with the checkpoints: a rebuild stopped half-way leaves no emptied read model behind a
    // checkpoint that says it is complete, and the read models' pages are committed once, not once per statement.
    await this.inOne(async () => {
      for (const p of chosen) {
        await this.reset(p, true);
        this.lanes.set(p.name, freshLane(p));
      }
      await this.flushAll();
    });
    const dropped = new Set(chosen.flatMap((p) => p.collections));
    for (const l of this.changeListeners) l(dropped);
    if (wasRunning) await this.start();
    return chosen.map((p) => p.name);
  }

  /**
   * Brings every projector to the end of the log while the engine is stopped (a rebuild, a verification): the log is
   * read in pages of `replayBatch` events, and each page's writes and the checkpoints after it are one transaction
   * of the document store, where the live feed commits what arrives in one turn. Events of the same page are applied
   * in the same order, one projector after the other, so the read models are the ones the live feed gives
   * (docs/design.md, "Replay"). Stops with nothing of the page in hand written when `guardWrites` answers false.
   */
  async replay(onProgress?: (progress: ReplayProgress) => void): Promise<void> {
    if (this.running) throw new Error('replay needs a stopped engine');
    await this.loadLanes(true);
    let after = this.oldestCheckpoint();
    const remaining = this.events.countAfter?.bind(this.events);
    const total = remaining ? await remaining(after) : null;
    const started = Date.now();
    const changed = new Set<string>();
    const inOne = <T>(work: () => Promise<T>): Promise<T> => (this.docs.batch ? this.docs.batch(work) : work());
    const held = writeBackCollections(this.projectors);
    const page = new WriteBackDocuments(this.docs, held);
    // Every write of the replay goes through the page: in a read model it fills from empty, a document it has not
    // written is missing, and need not be looked up (most of what a rebuild writes is new).
    const empty = await page.trackFromEmpty(held);
    // A derive's memo stands for a read model from empty only when every projector starts with the log.
    const fromStart = [...this.lanes.values()].every((l) => l.checkpoint === null);
    const memo = new BoundedMemo(replayMemoEntries, fromStart ? empty : new Set());
    // Only the categories some projector maps are read: the others (run timelines, most of a log) are passed unread.
    const filter = replayFilter(this.projectors);
    let applied = 0;
    for (;;) {
      // The head first: every event up to it that the filter keeps is in this page or the ones after it.
      const head = await this.events.headPosition();
      const events = await this.events.readAll({ after, limit: replayBatch, ...(filter ? { filter } : {}) });
      const last = events.length > 0 ? events[events.length - 1]!.position : null;
      // A page short of a whole one ends the log: every lane is then passed up to the head, the events after the
      // page's last that no projector maps included.
      const end = events.length < replayBatch ? this.later(last, head) : null;
      if (events.length === 0 && (end === null || (after !== null && this.events.comparePositions(end, after) <= 0)))
        break;
      const before = [...this.lanes.values()].map((l) => [l, l.checkpoint, l.healthy, l.lastError] as const);
      const undo = () => {
        for (const [lane, checkpoint, healthy, lastError] of before)
          Object.assign(lane, { checkpoint, healthy, lastError });
        page.discard();
        memo.clear();
      };
      try {
        await inOne(() => this.replayPage(events, changed, page, memo, true, end));
      } catch (err) {
        // The page's writes were rolled back: so are the checkpoints this process holds, and what the page held.
        undo();
        if (!(err instanceof ExactReplayNeeded)) throw err;
        // A projector failed in the page: it is applied again event by event, so the failing one stops exactly where
        // the live feed would have stopped it.
        try {
          await inOne(() => this.replayPage(events, changed, page, memo, false, end));
        } catch (again) {
          undo();
          throw again;
        }
      }
      page.settle(replayHeldDocuments);
      after = end ?? last;
      applied += events.length;
      const done = total !== null && remaining ? total - (await remaining(after)) : applied;
      onProgress?.({ done, total, elapsedMs: Date.now() - started });
      if (end !== null) break;
      // A page is one long chain of resolved promises: timers (the lease's renewal) run only between pages.
      await new Promise((resolve) => setImmediate(resolve));
    }
    // The indexes left out during the replay, in one transaction: one commit instead of one per index.
    await inOne(async () => {
      for (const p of this.projectors) await this.createIndexes(p, false);
    });
    if (changed.size > 0) for (const l of this.changeListeners) l(changed);
    const failing = this.status().filter((s) => !s.healthy);
    if (failing.length > 0)
      throw new Error(`projection failed: ${failing.map((s) => `${s.name}: ${s.lastError}`).join('; ')}`);
  }

  /**
   * One page of a replay, through the page's write-back cache. With `defer`, keyed derives run once each at the end
   * of the page; a projector failing in the page, or a deferred derive failing, asks for the page again without
   * (`ExactReplayNeeded`), so that a failing projector stops exactly where the live feed would have stopped it.
   */
  private async replayPage(
    events: RecordedEvent[],
    changed: Set<string>,
    page: WriteBackDocuments,
    memo: BoundedMemo,
    defer: boolean,
    end: Position | null,
  ): Promise<void> {
    const deferred = defer ? new Map<string, DeriveOp>() : null;
    const lanes = [...this.lanes.values()];
    const healthy = lanes.filter((l) => l.healthy);
    for (const raw of events) {
      if (!this.mayWrite()) throw new Error('the projector lease was lost; the replay stopped');
      await this.replayOne(raw, lanes, changed, page, memo, deferred);
    }
    if (deferred) {
      if (healthy.some((l) => !l.healthy)) throw new ExactReplayNeeded();
      try {
        await this.runDeferred(deferred, page, memo);
      } catch {
        throw new ExactReplayNeeded();
      }
    }
    // The log's end: what follows the page's last event up to it, no projector maps.
    if (end !== null)
      for (const lane of this.lanes.values())
        if (lane.healthy && (lane.checkpoint === null || this.events.comparePositions(lane.checkpoint, end) < 0))
          lane.checkpoint = end;
    await page.flush();
    await this.flushAll();
  }

  /**
   * A page's deferred derives, in the order of their last issue. Keyed derives they return (a day's statistics, from
   * each run's hour) are deferred in turn and run once each after them, in the order of their first issue: that is
   * when the live feed first wrote what they write, so even the order of new fields is the same.
   */
  private async runDeferred(first: Map<string, DeriveOp>, page: WriteBackDocuments, memo: BoundedMemo): Promise<void> {
    let round = first;
    while (round.size > 0) {
      const next = new Map<string, DeriveOp>();
      for (const op of round.values())
        for (const derived of await op.derive(page, memo)) {
          if (derived.kind === 'derive' && derived.key !== undefined) {
            await derived.observe?.(page, memo);
            next.set(derived.key, derived);
          } else if (!appliedHeld(derived, page)) await this.applyOp(derived, page, memo);
        }
      round = next;
    }
  }

  /** One event of a replay: a projector that fails stops there (its error is stored with its checkpoint). */
  private async replayOne(
    raw: RecordedEvent,
    lanes: readonly Lane[],
    changed: Set<string>,
    docs: DocumentStore,
    memo: BoundedMemo,
    deferred: Map<string, DeriveOp> | null,
  ): Promise<void> {
    const category = categoryOf(raw.streamId);
    let event: RecordedEvent | null = null;
    // The page's lanes as an array: a map's iterator is an object per event and lane.
    for (const lane of lanes) {
      if (!lane.healthy) continue;
      if (lane.checkpoint !== null && this.events.comparePositions(raw.position, lane.checkpoint) <= 0) continue;
      if (lane.offered !== null && !lane.offered.has(category)) {
        lane.checkpoint = raw.position;
        continue;
      }
      event ??= upcast(raw);
      try {
        for (const op of lane.projector.project(event)) {
          changed.add(op.collection);
          if (deferred && op.kind === 'derive' && op.key !== undefined) {
            // What the derive keeps follows every change; the derive itself runs once, at the end of the page, in
            // the order of last issue, as the live feed last ran it.
            await op.observe?.(docs, memo);
            deferred.delete(op.key);
            deferred.set(op.key, op);
          } else if (!appliedHeld(op, docs)) await this.applyOp(op, docs, memo);
        }
        lane.checkpoint = event.position;
      } catch (err) {
        lane.healthy = false;
        lane.lastError = errorText(err);
        this.log.error(
          { err, projector: lane.projector.name, position: event.position, eventType: event.type },
          'projector failed during the replay; the others go on',
        );
      }
    }
  }

  /** Runs until the log's current head is projected; for offline rebuilds from the CLI. */
  async catchUp(timeoutMs = 600_000): Promise<void> {
    const head = await this.events.headPosition();
    if (head && !(await this.waitFor(head, timeoutMs))) throw new Error('projection did not catch up in time');
    const failing = this.status().filter((s) => !s.healthy);
    if (failing.length > 0)
      throw new Error(`projection failed: ${failing.map((s) => `${s.name}: ${s.lastError}`).join('; ')}`);
  }

  /** Every projector's position and health, as this process knows it. */
  status(): ProjectionStatus[] {
    return this.projectors.map((p) => {
      const lane = this.lanes.get(p.name)!;
      return {
        name: p.name,
        position: lane.checkpoint,
        healthy: lane.healthy,
        lastError: lane.lastError,
        retries: lane.retries,
      };
    });
  }

  /** The status as stored by whichever process runs the projectors (for an api-only process). */
  async storedStatus(): Promise<ProjectionStatus[]> {
    if (this.running) return this.status();
    const cps = await this.docs
      .collection<CheckpointDoc>(checkpointCollection)
      .find({ _id: { $in: this.projectors.map((p) => p.name) } });
    const byName = new Map(cps.map((c) => [c._id, c]));
    return this.projectors.map((p) => {
      const c = byName.get(p.name);
      const lastError = c?.lastError ?? null;
      return {
        name: p.name,
        position: c?.position ?? null,
        healthy: lastError === null,
        lastError,
        retries: c?.retries ?? 0,
      };
    });
  }

  /**
   * Read-your-writes: resolves true once every healthy projector has passed `position`, false after `timeoutMs`.
   * A failing projector does not hold writes back; only when the write at `position` is one it had to skip does this
   * throw `ProjectionUnavailable`, because the caller would read a state without its own write
   * (docs/design.md, "Failure handling"). Without a local engine (an api-only process) it polls stored checkpoints.
   */
  async waitFor(position: Position | null, timeoutMs = 500): Promise<boolean> {
    if (position === null) return true;
    if (!this.running) return this.pollStored(position, timeoutMs);
    const reached =
      this.processed !== null && this.events.comparePositions(this.processed, position) >= 0
        ? true
        : await new Promise<boolean>((resolve) => {
            const timer = setTimeout(() => {
              this.waiters = this.waiters.filter((w) => w.timer !== timer);
              resolve(false);
            }, timeoutMs);
            this.waiters.push({ position, resolve, timer });
          });
    const missing = this.missingAt(position);
    if (missing.length > 0) throw new ProjectionUnavailable(missing);
    return reached;
  }

  /**
   * What a write's answer waits on before it reads its own write back: never a stale read presented as the truth
   * (a 404 for a job just created), but a 503 that says the change was saved.
   */
  async readYourWrites(position: Position | null): Promise<void> {
    if (!(await this.waitFor(position, readYourWritesMs)))
      throw new ProjectionUnavailable(
        [],
        `The change was saved, but the read models have not caught up with it within ${readYourWritesMs / 1000} s; read it again shortly instead of repeating the change`,
      );
  }

  /** Failing projectors that skipped an event of the stream written at `position`. */
  private missingAt(position: Position): string[] {
    const stream = this.recent.get(position);
    const out: string[] = [];
    for (const lane of this.lanes.values()) {
      if (lane.healthy) continue;
      if (lane.checkpoint !== null && this.events.comparePositions(lane.checkpoint, position) >= 0) continue;
      if (lane.missed === null || (stream !== undefined && lane.missed.has(stream))) out.push(lane.projector.name);
    }
    return out;
  }

  private async pollStored(position: Position, timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    const stored = this.docs.collection<CheckpointDoc>(checkpointCollection);
    for (;;) {
      const cps = await stored.find({ _id: { $in: this.projectors.map((p) => p.name) } });
      // A failing projector (as its runner reports it) does not hold writes back here either.
      const behind = (c: CheckpointDoc) =>
        c.position === null || this.events.comparePositions(c.position as Position, position) < 0;
      const passed =
        cps.length === this.projectors.length && cps.every((c) => (c.lastError ?? null) !== null || !behind(c));
      if (passed) {
        const missing: string[] = [];
        for (const c of cps)
          if ((c.lastError ?? null) !== null && behind(c) && (await this.skipsWrite(c, position))) missing.push(c._id);
        if (missing.length > 0) throw new ProjectionUnavailable(missing);
        return true;
      }
      if (Date.now() >= deadline) return false;
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  /**
   * For a process without the engine: whether a failing projector (stopped at its stored checkpoint) would show the
   * write at `position`, judged like `missingAt` from the events it has not applied. Past `catchUpBatch` events of
   * lag it cannot tell cheaply and lets the write through.
   */
  private async skipsWrite(c: CheckpointDoc, position: Position): Promise<boolean> {
    const p = this.projectors.find((x) => x.name === c._id);
    if (!p) return false;
    const pending = (
      await this.events.readAll({ after: (c.position as Position | null) ?? null, limit: catchUpBatch })
    ).filter((e) => this.events.comparePositions(e.position, position) <= 0);
    const written = pending.find((e) => this.events.comparePositions(e.position, position) === 0);
    if (!written) return false;
    const lane = this.lanes.get(p.name);
    return pending.some((e) => {
      if (e.streamId !== written.streamId || (lane && !offers(lane, e))) return false;
      try {
        return p.project(upcast(e)).length > 0;
      } catch {
        return true;
      }
    });
  }

  /** The later of two positions, either of which may be missing. */
  private later(a: Position | null, b: Position | null): Position | null {
    if (a === null) return b;
    if (b === null) return a;
    return this.events.comparePositions(a, b) >= 0 ? a : b;
  }

  private oldestCheckpoint(): Position | null {
    let oldest: Position | null = null;
    let first = true;
    for (const lane of this.lanes.values()) {
      const cp = lane.checkpoint;
      if (cp === null) return null;
      if (first || this.events.comparePositions(cp, oldest!) < 0) oldest = cp;
      first = false;
    }
    return oldest;
  }

  /** Starts the one drain loop unless it runs; events and retries are applied by it alone, one at a time. */
  private kick(): void {
    this.draining ??= this.drain()
      .catch((err: unknown) => this.log.error({ err }, 'projection loop failed'))
      .finally(() => {
        this.draining = null;
        // Work that arrived as the loop ended; a stopped engine leaves it for its next start.
        if (this.running && (this.queue.length > 0 || this.retryPending())) this.kick();
      });
  }

  private retryPending(): boolean {
    for (const lane of this.lanes.values()) if (lane.retryDue) return true;
    return false;
  }

  /** Runs `work` in one transaction of the document store where it has them (SQLite), else as it is. */
  private inOne<T>(work: () => Promise<T>): Promise<T> {
    return this.docs.batch ? this.docs.batch(work) : work();
  }

  private async drain(): Promise<void> {
    // The subscription hands over what it read in one go (a group commit of the event store is one read): letting it
    // finish first makes those events one batch below.
    await Promise.resolve();
    for (;;) {
      // Retries go first: a recovered projector then follows live events with the others.
      for (const lane of this.lanes.values()) {
        if (!lane.retryDue || !this.running || !this.mayWrite()) continue;
        lane.retryDue = false;
        await this.recover(lane);
      }
      if (this.queue.length === 0 || !this.running || !this.mayWrite()) return;
      await this.applyBatch(this.queue.splice(0, batchMax));
      // The store answers synchronously, so a long backlog would run as one chain of microtasks: no timer (the lease's
      // renewal, a request's timeout) and no socket would be served until it ends. Between batches the loop lets the
      // event loop turn.
      if (this.queue.length > 0) await new Promise((resolve) => setImmediate(resolve));
    }
  }

  /**
   * Applies queued events as one transaction of the document store (docs/design.md, "Events and read models"): one
   * commit for every projector's changes of every event of the batch, instead of one per change. Waiters are
   * answered once it is committed. A projector that throws fails alone, as ever; a transaction the store refuses
   * or cannot commit leaves every projector with events of the batch to apply failing from where it was before it, to
   * catch up through its retries, so nothing of the batch is lost, and no write of it is answered as shown.
   */
  private async applyBatch(batch: RecordedEvent[]): Promise<void> {
    const before = [...this.lanes.values()].map((l) => [l, l.checkpoint, l.healthy] as const);
    const changed = new Set<string>();
    let applied = 0;
    try {
      await this.inOne(async () => {
        for (const raw of batch) {
          // A lost lease stops the batch at the event in hand; what was applied while it was held is committed.
          if (!this.running || !this.mayWrite()) break;
          await this.apply(raw, changed);
          applied++;
        }
      });
    } catch (err) {
      // Nothing of the batch was kept: every projector that had any of it to apply starts failing from where it was
      // before, and its retries read those events back from the log (up to `processed`, set below).
      const end = batch[batch.length - 1]!.position;
      for (const [lane, checkpoint, healthy] of before) {
        if (checkpoint !== null && this.events.comparePositions(checkpoint, end) >= 0) continue;
        // Which streams the rolled back events touched is not kept: every write counts as one it may miss.
        lane.missed = null;
        if (!healthy) continue;
        lane.checkpoint = checkpoint;
        if (lane.retryTimer) clearTimeout(lane.retryTimer);
        this.fail(lane, null, err);
      }
      if (changed.size > 0) for (const l of this.changeListeners) l(changed);
      applied = batch.length;
    }
    // Events not applied (the lease was lost, the engine stopped) stay queued, first in line.
    if (applied < batch.length) this.queue.unshift(...batch.slice(applied));
    if (applied === 0) return;
    const last = batch[applied - 1]!.position;
    this.processed = last;
    this.scheduleFlush();
    if (this.waiters.length > 0) {
      this.waiters = this.waiters.filter((w) => {
        if (this.events.comparePositions(last, w.position) < 0) return true;
        clearTimeout(w.timer);
        w.resolve(true);
        return false;
      });
    }
  }

  /** One event to every projector, inside the batch's transaction; `changed` gathers the collections written. */
  private async apply(raw: RecordedEvent, changed: Set<string>): Promise<void> {
    const event = upcast(raw);
    const category = categoryOf(event.streamId);
    const mine = new Set<string>();
    for (const lane of this.lanes.values()) {
      if (lane.checkpoint !== null && this.events.comparePositions(event.position, lane.checkpoint) <= 0) continue;
      if (lane.offered !== null && !lane.offered.has(category)) {
        // Not an event it maps: passed as applied, or left for its recovery to pass.
        if (lane.healthy) lane.checkpoint = event.position;
        continue;
      }
      if (!lane.healthy) {
        this.noteMissed(lane, event);
        continue;
      }
      try {
        await this.applyTo(lane.projector, event, mine);
        lane.checkpoint = event.position;
      } catch (err) {
        this.fail(lane, event, err);
        this.noteMissed(lane, event);
      }
    }
    this.recent.set(event.position, event.streamId);
    if (this.recent.size > recentEventsKept) this.recent.delete(this.recent.keys().next().value!);
    if (mine.size > 0) {
      for (const c of mine) changed.add(c);
      for (const l of this.changeListeners) l(mine);
    }
  }

  private async applyTo(p: Projector, event: RecordedEvent, changed: Set<string>): Promise<void> {
    for (const op of p.project(event)) {
      await this.applyOp(op, this.docs);
      changed.add(op.collection);
    }
  }

  /** Remembers that a failing projector skipped an event it would have changed its read model for. */
  private noteMissed(lane: Lane, event: RecordedEvent): void {
    if (lane.missed === null || !offers(lane, event)) return;
    let concerns = true;
    try {
      concerns = lane.projector.project(event).length > 0;
    } catch {
      // A projector that cannot even map the event is counted as concerned by it.
    }
    if (!concerns) return;
    lane.missed.add(event.streamId);
    if (lane.missed.size > missedStreamsKept) lane.missed = null;
  }

  private fail(lane: Lane, event: Pick<RecordedEvent, 'position' | 'type' | 'streamId'> | null, err: unknown): void {
    const first = lane.healthy;
    lane.healthy = false;
    lane.lastError = errorText(err);
    if (!first) lane.retries++;
    const delay = backoff(lane.retries + 1);
    this.log.error(
      {
        err,
        projector: lane.projector.name,
        position: event?.position ?? lane.checkpoint,
        eventType: event?.type ?? null,
        streamId: event?.streamId ?? null,
        retries: lane.retries,
        retryInMs: delay,
      },
      first ? 'projector failed; the others go on, it is retried with backoff' : 'projector failed again',
    );
    this.dirty = true;
    this.scheduleFlush();
    // Unref'd: a retry alone must not keep a finishing CLI command alive.
    lane.retryTimer = setTimeout(() => {
      lane.retryTimer = null;
      lane.retryDue = true;
      this.kick();
    }, delay).unref();
  }

  /** Replays what the projector missed from its own checkpoint up to where the others are, then rejoins them. */
  private async recover(lane: Lane): Promise<void> {
    const changed = new Set<string>();
    let current: RecordedEvent | null = null;
    try {
      while (
        this.processed !== null &&
        (lane.checkpoint === null || this.events.comparePositions(lane.checkpoint, this.processed) < 0)
      ) {
        const batch = await this.events.readAll({ after: lane.checkpoint, limit: catchUpBatch });
        const from = lane.checkpoint;
        for (const raw of batch) {
          if (this.events.comparePositions(raw.position, this.processed) > 0) break;
          if (offers(lane, raw)) {
            current = upcast(raw);
            await this.applyTo(lane.projector, current, changed);
            current = null;
          }
          lane.checkpoint = raw.position;
        }
        if (lane.checkpoint === from) break;
        await new Promise((resolve) => setImmediate(resolve)); // a turn of the event loop per page, as in drain()
      }
    } catch (err) {
      if (changed.size > 0) for (const l of this.changeListeners) l(changed);
      this.fail(lane, current, err);
      return;
    }
    if (changed.size > 0) for (const l of this.changeListeners) l(changed);
    this.log.info(
      { projector: lane.projector.name, retries: lane.retries, position: lane.checkpoint },
      'projector recovered',
    );
    lane.healthy = true;
    lane.lastError = null;
    lane.retries = 0;
    lane.missed = new Set();
    this.dirty = true;
    this.scheduleFlush();
  }

  /** One operation; `memo` in a replay only (`ReplayMemo`), whose derives are observed and then run at once. */
  private async applyOp(op: DocOp, docs: DocumentStore, memo?: BoundedMemo): Promise<void> {
    const c = docs.collection(op.collection);
    if (op.kind === 'derive') {
      if (memo) await op.observe?.(docs, memo);
      for (const derived of await op.derive(docs, memo)) await this.applyOp(derived, docs, memo);
      return;
    }
    // A write by another filter than `_id` (an erasure, a job's runs renamed) changes documents no derive observed.
    if (memo && (op.kind === 'delete' || op.many) && !byIdOnly(op.filter))
      memo.forget(op.collection, op.kind === 'delete' ? null : op.update, op.kind !== 'delete' && op.upsert === true);
    if (op.kind === 'delete') await c.deleteMany(op.filter);
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
    await this.inOne(() => this.flushAll());
  }

  private async flushAll(): Promise<void> {
    const stored = this.docs.collection<CheckpointDoc>(checkpointCollection);
    for (const p of this.projectors) {
      const lane = this.lanes.get(p.name)!;
      await stored.updateOne(
        { _id: p.name },
        { $set: { position: lane.checkpoint, version: p.version, lastError: lane.lastError, retries: lane.retries } },
        { upsert: true },
      );
    }
  }

  /** Empties a projector's read model; `deferred` leaves out the indexes built after a replay. */
  private async reset(p: Projector, deferred = false): Promise<void> {
    for (const name of p.collections) {
      const c = this.docs.collection(name);
      // Indexes first: emptying a collection under its fifteen indexes costs more than the rest of a small rebuild.
      if (deferred) await c.dropIndexes();
      await c.drop();
    }
    await this.createIndexes(p, deferred);
  }
}

/**
 * The collections a replay page holds in its write-back cache: all the projectors', but those with a unique index
 * besides `_id`, whose duplicates must be refused at the write that makes them.
 */
function writeBackCollections(projectors: Projector[]): Set<string> {
  const unique = new Set(projectors.flatMap((p) => p.indexes.filter((i) => i.unique).map((i) => i.collection)));
  return new Set(projectors.flatMap((p) => p.collections).filter((c) => !unique.has(c)));
}

/** The top-level fields an update writes. */
function updatedFields(update: Update): Set<string> {
  const out = new Set<string>();
  for (const part of [update.$set, update.$unset, update.$inc, update.$push, update.$setOnInsert])
    for (const path in part ?? {}) out.add(path.split('.')[0]!);
  return out;
}

/**
 * A replay's write of one document by `_id` made at once by the page's cache, when it holds the document or knows it
 * missing: most writes of a replay, each of which would otherwise cost `applyOp` a promise and a turn of the microtask
 * queue (docs/performance.md, "Replay"). Such a write leaves the memo as `applyOp` does: only writes by other filters
 * make it forget.
 */
function appliedHeld(op: DocOp, docs: DocumentStore): boolean {
  if (op.kind === 'derive' || !(docs instanceof WriteBackDocuments) || !byIdOnly(op.filter)) return false;
  const id = op.filter._id as string;
  return op.kind === 'delete'
    ? docs.applyHeld(op.collection, id, null, false)
    : docs.applyHeld(op.collection, id, op.update, op.upsert === true);
}

/** A replay's `ReplayMemo`: at most `limit` entries, the least recently set forgotten first. */
class BoundedMemo implements ReplayMemo {
  private readonly entries = new Map<string, { value: unknown; reads: MemoReads }>();
  /** Nothing forgotten yet (`ReplayMemo.fromEmpty`). */
  private whole = true;

  constructor(
    private readonly limit: number,
    private readonly empty: ReadonlySet<string>,
  ) {}

  fromEmpty(collection: string): boolean {
    return this.whole && this.empty.has(collection);
  }

  get(key: string): unknown {
    return this.entries.get(key)?.value;
  }

  set(key: string, value: unknown, reads: MemoReads): void {
    this.entries.delete(key);
    this.entries.set(key, { value, reads });
    if (this.entries.size > this.limit) {
      this.entries.delete(this.entries.keys().next().value!);
      this.whole = false;
    }
  }

  delete(key: string): void {
    this.whole &&= !this.entries.has(key);
    this.entries.delete(key);
  }

  /**
   * After a write to documents of `collection` no `observe` saw: forgets every entry that reads a field `update`
   * changes (every field: a deletion). An upsert may make documents no entry knows of.
   */
  forget(collection: string, update: Update | null, inserts: boolean): void {
    if (inserts) this.whole = false;
    const changed = update === null ? null : updatedFields(update);
    for (const [key, entry] of this.entries) {
      const read = entry.reads[collection];
      if (!read || (changed !== null && !read.some((f) => changed.has(f.split('.')[0]!)))) continue;
      this.entries.delete(key);
      this.whole = false;
    }
  }

  clear(): void {
    this.whole &&= this.entries.size === 0;
    this.entries.clear();
  }
}

/** A replay page has to be applied again event by event (`ProjectionEngine.replayPage`). */
class ExactReplayNeeded extends Error {
  constructor() {
    super('a projector failed in the page; it is applied again without deferred derives');
  }
}

function freshLane(projector: Projector): Lane {
  return {
    projector,
    offered: projector.categories ? new Set(projector.categories.map((c) => c.category)) : null,
    checkpoint: null,
    healthy: true,
    lastError: null,
    retries: 0,
    retryTimer: null,
    retryDue: false,
    missed: new Set(),
  };
}

/** Whether the lane's projector maps events of this event's stream category. */
function offers(lane: Lane, event: Pick<RecordedEvent, 'streamId'>): boolean {
  return lane.offered === null || lane.offered.has(categoryOf(event.streamId));
}

/**
 * What a replay reads of the log: the stream categories some projector maps, or everything when one of them does not
 * name its own (docs/design.md, "Replay").
 */
export function replayFilter(projectors: Projector[]): AllFilter | undefined {
  const categories = new Set<string>();
  for (const p of projectors) {
    if (!p.categories) return undefined;
    for (const c of p.categories) categories.add(c.category);
  }
  return { streamPrefixes: [...categories].sort().map((c) => `${c}-`) };
}

function backoff(attempt: number): number {
  return Math.min(maxRetryMs, firstRetryMs * 2 ** Math.max(0, attempt - 1));
}

function errorText(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return text.length > errorChars ? `${text.slice(0, errorChars)}…` : text;
}
