import type { Observable } from 'rxjs';
import type {
  AppendResult,
  EventStore,
  ExpectedRevision,
  NewEvent,
  Position,
  ReadAllOptions,
  ReadStreamOptions,
  RecordedEvent,
  SubscribeAllOptions,
  SubscribeStreamOptions,
} from './event-store.js';

/**
 * An event store that hands every call to another one: what the wrappers around an adapter (resilient
 * subscriptions, out-of-line payloads, a test's injected faults) share, each overriding only the calls it changes.
 */
export class ForwardingEventStore implements EventStore {
  readonly countAfter?: (after: Position | null) => Promise<number>;

  constructor(readonly inner: EventStore) {
    if (inner.countAfter) this.countAfter = inner.countAfter.bind(inner);
  }

  get kind(): string {
    return this.inner.kind;
  }

  get deletesFromLogAtOnce(): boolean {
    return this.inner.deletesFromLogAtOnce;
  }

  append(streamId: string, events: NewEvent[], expected: ExpectedRevision): Promise<AppendResult> {
    return this.inner.append(streamId, events, expected);
  }

  readStream(streamId: string, options?: ReadStreamOptions): Promise<RecordedEvent[]> {
    return this.inner.readStream(streamId, options);
  }

  readAll(options?: ReadAllOptions): Promise<RecordedEvent[]> {
    return this.inner.readAll(options);
  }

  subscribeStream(streamId: string, options?: SubscribeStreamOptions): Observable<RecordedEvent> {
    return this.inner.subscribeStream(streamId, options);
  }

  subscribeAll(options?: SubscribeAllOptions): Observable<RecordedEvent> {
    return this.inner.subscribeAll(options);
  }

  comparePositions(a: Position, b: Position): number {
    return this.inner.comparePositions(a, b);
  }

  deleteStream(streamId: string): Promise<void> {
    return this.inner.deleteStream(streamId);
  }

  flushDeletions(): Promise<void> {
    return this.inner.flushDeletions();
  }

  headPosition(): Promise<Position | null> {
    return this.inner.headPosition();
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
