import { Observable, type Subscription } from 'rxjs';
import type {
  EventStore,
  RecordedEvent,
  SubscribeAllOptions,
  SubscribeStreamOptions,
} from '../../store/event-store.js';
import { ForwardingEventStore } from '../../store/forwarding-event-store.js';

/** Where a connection of a subscription breaks: after delivering `after` events, with an error or a plain end. */
export interface Fault {
  after: number;
  how: 'error' | 'end';
}

export type SubscriptionKind = 'all' | 'stream';

/**
 * A real event store adapter whose subscriptions break at chosen points, as a server's would when its connection
 * drops: each new subscription takes the next fault of its kind's plan (round and round) while the store is armed.
 * A resumed subscription also gets the event it resumed after delivered once more first, as an adapter that resumes
 * inclusively would, so a consumer that applies events twice shows it. Everything else is the adapter's own.
 */
export class FaultyEventStore extends ForwardingEventStore {
  armed = false;
  readonly injected = { all: { error: 0, end: 0 }, stream: { error: 0, end: 0 } };
  readonly redelivered = { all: 0, stream: 0 };
  private readonly next = { all: 0, stream: 0 };
  /** Events delivered on `all` subscriptions, by position: what a resumption after that position delivers again. */
  private readonly delivered = new Map<string, RecordedEvent>();

  constructor(
    inner: EventStore,
    private readonly plans: Record<SubscriptionKind, Fault[]>,
  ) {
    super(inner);
  }

  override subscribeStream(streamId: string, options: SubscribeStreamOptions = {}): Observable<RecordedEvent> {
    const from = options.fromRevision ?? 0;
    const again = async () =>
      from > 0 && this.armed
        ? ((await this.inner.readStream(streamId, { fromRevision: from - 1, limit: 1 }))[0] ?? null)
        : null;
    return this.breaking('stream', this.inner.subscribeStream(streamId, options), again);
  }

  override subscribeAll(options: SubscribeAllOptions = {}): Observable<RecordedEvent> {
    const again = async () => (options.after && this.armed ? (this.delivered.get(options.after) ?? null) : null);
    return this.breaking('all', this.inner.subscribeAll(options), again);
  }

  private breaking(
    kind: SubscriptionKind,
    source: Observable<RecordedEvent>,
    again: () => Promise<RecordedEvent | null>,
  ): Observable<RecordedEvent> {
    return new Observable<RecordedEvent>((subscriber) => {
      const plan = this.plans[kind];
      const fault = this.armed && plan.length > 0 ? plan[this.next[kind]++ % plan.length]! : null;
      let inner: Subscription | null = null;
      let over = false;
      let count = 0;
      const fire = (f: Fault) => {
        if (over || !this.armed) return; // disarmed meanwhile: the connection stays up
        over = true;
        inner?.unsubscribe();
        this.injected[kind][f.how]++;
        if (f.how === 'error') subscriber.error(new Error(`injected: the ${kind} subscription's connection was lost`));
        else subscriber.complete();
      };
      (async () => {
        const repeat = await again();
        if (over || subscriber.closed) return;
        if (repeat) {
          this.redelivered[kind]++;
          subscriber.next(repeat);
        }
        if (fault && fault.after === 0) return fire(fault);
        inner = source.subscribe({
          next: (e) => {
            if (over) return;
            if (kind === 'all') this.remember(e);
            subscriber.next(e);
            if (fault && ++count >= fault.after) fire(fault);
          },
          error: (err: unknown) => subscriber.error(err),
          complete: () => subscriber.complete(),
        });
        if (over) inner.unsubscribe();
      })().catch((err: unknown) => subscriber.error(err));
      return () => {
        over = true;
        inner?.unsubscribe();
      };
    });
  }

  private remember(e: RecordedEvent): void {
    this.delivered.set(e.position, e);
    if (this.delivered.size > 5000) this.delivered.delete(this.delivered.keys().next().value!);
  }
}
