import { Observable, type Subscription } from 'rxjs';
import type {
  EventStore,
  Position,
  RecordedEvent,
  SubscribeAllOptions,
  SubscribeStreamOptions,
} from './event-store.js';
import { ForwardingEventStore } from './forwarding-event-store.js';

/** A lost subscription is opened again after 100 ms, doubling up to 30 s (docs/design.md, "Failure handling"). */
const firstRetryMs = 100;
const maxRetryMs = 30_000;
/** A connection that lasted this long was healthy: its loss starts the backoff over. */
const healthyAfterMs = 10_000;
const errorChars = 500;

export interface SubscriptionLogger {
  warn(obj: object, msg: string): void;
}

/** What `GET /api/system/info` can tell of this process's subscriptions to the log. */
export interface SubscriptionHealth {
  /** Subscriptions open now (each live SSE stream, the projection feed, a runner's cancel watch). */
  open: number;
  /** Of those, how many lost their connection and wait to open it again. */
  retrying: number;
  /** How many times a subscription was opened again since the process started. */
  resumed: number;
  /** The last loss, null before the first. */
  lastError: string | null;
}

/**
 * An event store whose subscriptions outlive a lost connection: an adapter's subscription that errors, or ends while
 * the store is open (EventStoreDB ends one when its connection drops), is opened again with backoff from the last
 * event it delivered, and events at or before that one are dropped, so a subscriber sees every event once and in
 * order, as the port promises. Only closing the store ends them. Every other call goes straight to the adapter.
 * The composition root wraps every adapter in it, so no consumer (projection engine, runner, SSE streams) needs a
 * retry of its own (docs/design.md, "Failure handling").
 */
export class ResilientEventStore extends ForwardingEventStore {
  private closing = false;
  /** Subscriptions waiting to open again: ended at once when the store closes. */
  private readonly waiting = new Set<() => void>();
  private openCount = 0;
  private resumedCount = 0;
  private lastError: string | null = null;

  constructor(
    inner: EventStore,
    private readonly log: SubscriptionLogger,
  ) {
    super(inner);
  }

  health(): SubscriptionHealth {
    return {
      open: this.openCount,
      retrying: this.waiting.size,
      resumed: this.resumedCount,
      lastError: this.lastError,
    };
  }

  override subscribeStream(streamId: string, options: SubscribeStreamOptions = {}): Observable<RecordedEvent> {
    return this.resuming<number>(
      `stream ${streamId}`,
      options.fromRevision ?? 0,
      (fromRevision) => this.inner.subscribeStream(streamId, { fromRevision }),
      (e, next) => (e.revision >= next ? e.revision + 1 : undefined),
    );
  }

  override subscribeAll(options: SubscribeAllOptions = {}): Observable<RecordedEvent> {
    return this.resuming<Position | null>(
      'all',
      options.after ?? null,
      (after) => this.inner.subscribeAll({ ...options, after }),
      (e, after) => (after === null || this.inner.comparePositions(e.position, after) > 0 ? e.position : undefined),
    );
  }

  override async close(): Promise<void> {
    this.closing = true;
    for (const end of [...this.waiting]) end();
    await this.inner.close();
  }

  /**
   * One subscription that opens the adapter's again from `cursor` whenever it fails. `advance` answers the cursor
   * after an event, or undefined for an event already delivered (an adapter may deliver the last one again).
   */
  private resuming<C>(
    what: string,
    start: C,
    open: (cursor: C) => Observable<RecordedEvent>,
    advance: (e: RecordedEvent, cursor: C) => C | undefined,
  ): Observable<RecordedEvent> {
    return new Observable<RecordedEvent>((subscriber) => {
      let cursor = start;
      let inner: Subscription | null = null;
      let timer: NodeJS.Timeout | null = null;
      let failures = 0;
      let openedAt = 0;
      let done = false;
      this.openCount++;
      const endWaiting = () => {
        if (timer) clearTimeout(timer);
        timer = null;
        this.waiting.delete(endWaiting);
        subscriber.complete();
      };
      const lost = (err: unknown) => {
        if (done) return;
        if (this.closing) {
          subscriber.complete();
          return;
        }
        if (Date.now() - openedAt > healthyAfterMs) failures = 0;
        failures++;
        this.lastError = errorText(err);
        const delay = Math.min(maxRetryMs, firstRetryMs * 2 ** (failures - 1));
        this.log.warn(
          { err, subscription: what, failures, retryInMs: delay },
          'event subscription lost; opening it again from the last event seen',
        );
        this.waiting.add(endWaiting);
        timer = setTimeout(() => {
          timer = null;
          this.waiting.delete(endWaiting);
          this.resumedCount++;
          connect();
        }, delay);
      };
      const connect = () => {
        if (done) return;
        openedAt = Date.now();
        let ended = false;
        const end = (err: unknown) => {
          ended = true;
          inner = null;
          lost(err);
        };
        const sub = open(cursor).subscribe({
          next: (e) => {
            const moved = advance(e, cursor);
            if (moved === undefined) return;
            cursor = moved;
            failures = 0; // it works again: the next loss starts the backoff over
            subscriber.next(e);
          },
          error: end,
          // The port's subscriptions end only with the store: an end before that is a lost connection.
          complete: () => end(new Error(`the ${what} subscription ended while the store is open`)),
        });
        // An adapter may fail or deliver (and the subscriber leave) before subscribe() returns.
        if (done) sub.unsubscribe();
        else if (!ended) inner = sub;
      };
      connect();
      return () => {
        done = true;
        this.openCount--;
        this.waiting.delete(endWaiting);
        if (timer) clearTimeout(timer);
        inner?.unsubscribe();
      };
    });
  }
}

function errorText(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return text.length > errorChars ? `${text.slice(0, errorChars)}…` : text;
}
