import { randomUUID } from 'node:crypto';
import { filter, map, merge, Observable, type Subscription } from 'rxjs';
import { ignoreFailure } from '../domain/ignore-failure.js';
import type { Collection, Doc, DocumentStore } from '../store/document-store.js';
import type { LiveDelta } from './timeline.js';

/** Where the run stream's `delta` messages of one run come from (docs/design.md, "Live deltas across replicas"). */
export interface DeltaSource {
  forRun(runId: string): Observable<LiveDelta['delta']>;
  /**
   * Resolves once every watcher of the run has read what other processes had shared of it by now: a stream calls it
   * before it ends, so the run's last output is not left behind by its end.
   */
  caughtUp?(runId: string): Promise<void>;
}

/** Deltas of the runs this process executes only: a process that has every role, or describes the API offline. */
export function localDeltas(deltas: Observable<LiveDelta>): DeltaSource {
  return {
    forRun: (runId) =>
      deltas.pipe(
        filter((d) => d.runId === runId),
        map((d) => d.delta),
      ),
  };
}

export const liveDeltasCollection = 'live_deltas';

/** One batch of one run's deltas, as one process wrote it. */
interface DeltaBatch extends Doc {
  runId: string;
  /** The writing process: its own deltas reach its watchers directly and are not read back. */
  writer: string;
  /** Writer's clock (ms); with `seq`, the order of one writer's batches. */
  at: number;
  seq: number;
  deltas: Array<LiveDelta['delta']>;
}

export interface SharedDeltaOptions {
  /** How long deltas gather before one write (ms). */
  batchMs: number;
  /** How often a watched run is asked for new batches (ms). */
  pollMs: number;
  /** Batches older than this are removed (ms): deltas are for whoever watches now. */
  keepMs: number;
  /** Characters of one run's batch; past them, other replicas see a note instead of the rest. */
  batchChars: number;
  /** A watcher gets batches written from this long before it subscribed (ms). */
  graceMs: number;
}
export const sharedDeltaDefaults: SharedDeltaOptions = {
  batchMs: 100,
  pollMs: 150,
  keepMs: 60_000,
  batchChars: 128 * 1024,
  graceMs: 1000,
};

/** What other replicas see in place of output that came faster than the cap. */
export const cutNote = '\n[… live output too fast to share with other replicas; the timeline keeps the result …]\n';

interface Logger {
  warn(obj: object, msg: string): void;
  debug(obj: object, msg: string): void;
}

/**
 * Live deltas for every api replica: the deltas of runs this process executes are written in batches to a
 * collection of a document store all replicas share (`live.db` beside the data directory's stores, or MongoDB), and a
 * watcher of a run executed elsewhere polls that run's batches while it watches. Deltas of this process's own runs
 * go to its watchers directly, without the round trip.
 */
export class SharedDeltas implements DeltaSource {
  private readonly writer = randomUUID();
  private readonly pending = new Map<string, { deltas: Array<LiveDelta['delta']>; chars: number; cut: boolean }>();
  private seq = 0;
  private flushTimer: NodeJS.Timeout | null = null;
  private pruneTimer: NodeJS.Timeout | null = null;
  private writing: Promise<void> = Promise.resolve();
  private readonly subscription: Subscription;
  private indexed: Promise<void> | null = null;
  /** The polls of the runs watched here, for `caughtUp`. */
  private readonly watched = new Map<string, Set<() => Promise<void>>>();

  constructor(
    private readonly store: DocumentStore,
    private readonly local: Observable<LiveDelta>,
    private readonly log: Logger,
    private readonly options: SharedDeltaOptions = sharedDeltaDefaults,
    private readonly clock: () => number = Date.now,
  ) {
    this.subscription = local.subscribe((d) => this.publish(d));
    this.pruneTimer = setInterval(
      () => {
        this.prune().catch(ignoreFailure('old live output is removed again at the next prune', log));
      },
      Math.max(1000, options.keepMs / 6),
    );
    this.pruneTimer.unref();
  }

  private get batches(): Collection<DeltaBatch> {
    return this.store.collection<DeltaBatch>(liveDeltasCollection);
  }

  private ready(): Promise<void> {
    this.indexed ??= this.batches
      .createIndex([
        ['runId', 1],
        ['at', 1],
      ])
      .then(() => this.batches.createIndex([['at', 1]]));
    return this.indexed;
  }

  private publish(d: LiveDelta): void {
    const batch = this.pending.get(d.runId) ?? { deltas: [], chars: 0, cut: false };
    this.pending.set(d.runId, batch);
    // A sandbox flooding its output must not flood the shared store: past the cap the batch says so and drops the
    // rest; the timeline keeps the command's whole result.
    if (batch.chars + d.delta.text.length > this.options.batchChars) {
      if (!batch.cut) batch.deltas.push({ ...d.delta, text: cutNote });
      batch.cut = true;
    } else {
      batch.deltas.push(d.delta);
      batch.chars += d.delta.text.length;
    }
    this.flushTimer ??= setTimeout(() => {
      this.flush().catch(ignoreFailure('flush never rejects: its failures are logged where they happen', this.log));
    }, this.options.batchMs);
  }

  /**
   * Writes what gathered now, not at the end of its 100 ms: the runner calls it before a run's end is recorded, so a
   * replica that sees the end finds the run's last output shared. Never rejects.
   */
  shareNow(): Promise<void> {
    return this.flush();
  }

  /** Writes what gathered; writes never overlap, so one writer's batches land in order. Never rejects. */
  private flush(): Promise<void> {
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = null;
    const taken = [...this.pending];
    this.pending.clear();
    if (taken.length === 0) return this.writing;
    this.writing = this.writing
      .then(async () => {
        await this.ready();
        const at = this.clock();
        for (const [runId, { deltas }] of taken) {
          const seq = ++this.seq;
          await this.batches
            .insertOne({ _id: `${this.writer}:${seq}`, runId, writer: this.writer, at, seq, deltas })
            .catch((err: unknown) =>
              // Live output is a convenience: the timeline keeps the record, and the next batch is written as usual.
              this.log.warn({ err, runId }, 'could not share live output with other replicas'),
            );
        }
      })
      .catch((err: unknown) => this.log.warn({ err }, 'could not share live output with other replicas'));
    return this.writing;
  }

  private async prune(): Promise<void> {
    await this.ready();
    // Every writer's: a runner that died leaves batches nobody else would remove.
    await this.batches.deleteMany({ at: { $lt: this.clock() - this.options.keepMs } });
  }

  /**
   * This process's deltas of the run at once, and other processes' batches written from a second before now on,
   * polled while someone watches. A batch is delivered once: each writer's batches are followed by their `seq`.
   */
  forRun(runId: string): Observable<LiveDelta['delta']> {
    const own = this.local.pipe(
      filter((d) => d.runId === runId),
      map((d) => d.delta),
    );
    const others = new Observable<LiveDelta['delta']>((subscriber) => {
      const seen = new Map<string, number>();
      // From a little before the subscription: covers the first poll's round trip and small clock differences.
      let since = this.clock() - this.options.graceMs;
      let stopped = false;
      let timer: NodeJS.Timeout | null = null;
      const poll = async () => {
        await this.ready();
        const found = await this.batches.find(
          { runId, at: { $gte: since } },
          {
            sort: [
              ['at', 1],
              ['seq', 1],
            ],
          },
        );
        for (const b of found) {
          if (b.writer === this.writer || b.seq <= (seen.get(b.writer) ?? 0)) continue;
          seen.set(b.writer, b.seq);
          for (const delta of b.deltas) subscriber.next(delta);
        }
        // Batches of the same ms as the latest are read again next time and skipped by their seq.
        const latest = found.at(-1)?.at;
        if (latest !== undefined && latest > since) since = latest;
      };
      const polls = this.watched.get(runId) ?? new Set<() => Promise<void>>();
      this.watched.set(runId, polls);
      polls.add(poll);
      const loop = () => {
        if (stopped) return;
        poll()
          .catch((err: unknown) => this.log.debug({ err, runId }, 'could not read live output of other replicas'))
          .finally(() => {
            if (!stopped) timer = setTimeout(loop, this.options.pollMs);
          });
      };
      loop();
      return () => {
        stopped = true;
        if (timer) clearTimeout(timer);
        polls.delete(poll);
        if (polls.size === 0 && this.watched.get(runId) === polls) this.watched.delete(runId);
      };
    });
    return merge(own, others);
  }

  async caughtUp(runId: string): Promise<void> {
    // A poll that fails leaves the stream to end without what it would have read, as a failed timed poll does.
    const polls = [...(this.watched.get(runId) ?? [])].map((poll) =>
      poll().catch((err: unknown) => this.log.debug({ err, runId }, 'could not read live output of other replicas')),
    );
    await Promise.all(polls);
  }

  async close(): Promise<void> {
    this.subscription.unsubscribe();
    if (this.pruneTimer) clearInterval(this.pruneTimer);
    await this.flush();
  }
}
