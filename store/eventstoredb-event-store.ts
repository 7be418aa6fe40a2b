import {
  ANY,
  END,
  EventStoreDBClient,
  FORWARDS,
  NO_STREAM,
  START,
  StreamDeletedError as EsStreamDeletedError,
  StreamNotFoundError,
  WrongExpectedVersionError,
  eventTypeFilter,
  excludeSystemEvents,
  jsonEvent,
  streamNameFilter,
  type AllStreamResolvedEvent,
  type JSONType,
  type Position as EsPosition,
  type ResolvedEvent,
} from '@eventstore/db-client';
import { Observable } from 'rxjs';
import {
  StreamDeletedError,
  WrongExpectedRevisionError,
  type AllFilter,
  type AppendResult,
  type EventMetadata,
  type EventStore,
  type ExpectedRevision,
  type NewEvent,
  type Position,
  type ReadAllOptions,
  type ReadStreamOptions,
  type RecordedEvent,
  type SubscribeAllOptions,
  type SubscribeStreamOptions,
} from './event-store.js';
import { ignoreFailure } from '../domain/ignore-failure.js';

const encode = (p: EsPosition): Position => `${p.commit}/${p.prepare}` as Position;
function decode(p: Position): EsPosition {
  const [commit, prepare] = p.split('/');
  return { commit: BigInt(commit!), prepare: BigInt(prepare!) };
}

function toRecorded(resolved: ResolvedEvent | AllStreamResolvedEvent): RecordedEvent | null {
  const e = resolved.event;
  if (!e || !e.isJson || e.type.startsWith('$') || e.streamId.startsWith('$')) return null;
  return {
    id: e.id,
    streamId: e.streamId,
    revision: Number(e.revision),
    position: e.position ? encode(e.position) : ('0/0' as Position),
    type: e.type,
    data: e.data,
    metadata: e.metadata as unknown as EventMetadata,
  };
}

function matches(filter: AllFilter | undefined, e: RecordedEvent): boolean {
  if (!filter) return true;
  if (filter.streamPrefixes && !filter.streamPrefixes.some((p) => e.streamId.startsWith(p))) return false;
  if (filter.eventTypes && !filter.eventTypes.includes(e.type)) return false;
  return true;
}

/** Server-side filter for subscriptions; the same filter is applied again client-side, which also drops system events. */
function serverFilter(filter: AllFilter | undefined) {
  if (filter?.streamPrefixes && !filter.eventTypes) return streamNameFilter({ prefixes: filter.streamPrefixes });
  if (filter?.eventTypes && !filter.streamPrefixes) return eventTypeFilter({ prefixes: filter.eventTypes });
  return excludeSystemEvents();
}

/** Why a failed unsubscribe is ignored: it runs on teardown, and no one is left to hear of it. */
const unsubscribed = 'the subscriber has left; the call ends with the client at the latest';

/** The scaled event store: EventStoreDB through its official gRPC client. */
export class EventStoreDbEventStore implements EventStore {
  readonly kind = 'eventstoredb';
  readonly deletesFromLogAtOnce = false;

  constructor(private readonly client: EventStoreDBClient) {}

  async append(streamId: string, events: NewEvent[], expected: ExpectedRevision): Promise<AppendResult> {
    if (events.length === 0) throw new Error('append needs at least one event');
    try {
      const result = await this.client.appendToStream(
        streamId,
        events.map((e) =>
          jsonEvent({ ...(e.id ? { id: e.id } : {}), type: e.type, data: e.data as JSONType, metadata: e.metadata }),
        ),
        { expectedRevision: expected === 'any' ? ANY : expected === 'no_stream' ? NO_STREAM : BigInt(expected) },
      );
      if (!result.position) throw new Error('EventStoreDB did not report a position');
      return { revision: Number(result.nextExpectedRevision), position: encode(result.position) };
    } catch (err) {
      if (err instanceof WrongExpectedVersionError) {
        const actual = typeof err.actualVersion === 'bigint' ? Number(err.actualVersion) : -1;
        throw new WrongExpectedRevisionError(streamId, expected, actual);
      }
      if (err instanceof EsStreamDeletedError) throw new StreamDeletedError(streamId);
      throw err;
    }
  }

  async readStream(streamId: string, options: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
    const out: RecordedEvent[] = [];
    try {
      const read = this.client.readStream(streamId, {
        direction: FORWARDS,
        fromRevision: options.fromRevision ? BigInt(options.fromRevision) : START,
        ...(options.limit !== undefined ? { maxCount: options.limit } : {}),
      });
      for await (const resolved of read) {
        const e = toRecorded(resolved);
        if (e) out.push(e);
      }
    } catch (err) {
      if (err instanceof StreamNotFoundError || err instanceof EsStreamDeletedError) return [];
      throw err;
    }
    return out;
  }

  async readAll(options: ReadAllOptions = {}): Promise<RecordedEvent[]> {
    const limit = options.limit ?? Infinity;
    const out: RecordedEvent[] = [];
    const after = options.after ?? null;
    // Reads from a position include the event at it; the port's `after` excludes it.
    const read = this.client.readAll({ direction: FORWARDS, fromPosition: after ? decode(after) : START });
    for await (const resolved of read) {
      const e = toRecorded(resolved);
      if (!e || (after && this.comparePositions(e.position, after) <= 0) || !matches(options.filter, e)) continue;
      out.push(e);
      if (out.length >= limit) {
        await read.cancel();
        break;
      }
    }
    return out;
  }

  /**
   * A tombstone: the id is closed for good and the stream reads as empty. EventStoreDB keeps the events in `$all`
   * until its next scavenge, which is why deletions are also recorded as facts that projectors apply (docs/events.md,
   * "Deleting a stream").
   */
  async deleteStream(streamId: string): Promise<void> {
    try {
      await this.client.tombstoneStream(streamId, { expectedRevision: ANY });
    } catch (err) {
      if (!(err instanceof EsStreamDeletedError)) throw err;
    }
  }

  subscribeStream(streamId: string, options: SubscribeStreamOptions = {}): Observable<RecordedEvent> {
    const from = options.fromRevision ?? 0;
    return new Observable<RecordedEvent>((subscriber) => {
      // A subscription from revision n delivers what comes after n, so start one before the first wanted.
      const sub = this.client.subscribeToStream(streamId, { fromRevision: from === 0 ? START : BigInt(from - 1) });
      sub.on('data', (resolved: ResolvedEvent) => {
        const e = toRecorded(resolved);
        if (e && e.revision >= from) subscriber.next(e);
      });
      sub.on('error', (err: Error) => subscriber.error(err));
      sub.on('end', () => subscriber.complete());
      return () => void sub.unsubscribe().catch(ignoreFailure(unsubscribed));
    });
  }

  subscribeAll(options: SubscribeAllOptions = {}): Observable<RecordedEvent> {
    return new Observable<RecordedEvent>((subscriber) => {
      const sub = this.client.subscribeToAll({
        fromPosition: options.after ? decode(options.after) : START,
        filter: serverFilter(options.filter),
      });
      sub.on('data', (resolved: AllStreamResolvedEvent) => {
        const e = toRecorded(resolved);
        if (e && matches(options.filter, e)) subscriber.next(e);
      });
      sub.on('error', (err: Error) => subscriber.error(err));
      sub.on('end', () => subscriber.complete());
      return () => void sub.unsubscribe().catch(ignoreFailure(unsubscribed));
    });
  }

  comparePositions(a: Position, b: Position): number {
    const x = decode(a);
    const y = decode(b);
    if (x.commit !== y.commit) return x.commit < y.commit ? -1 : 1;
    if (x.prepare !== y.prepare) return x.prepare < y.prepare ? -1 : 1;
    return 0;
  }

  async headPosition(): Promise<Position | null> {
    const read = this.client.readAll({ direction: 'backwards', fromPosition: END, maxCount: 50 });
    for await (const resolved of read) {
      const e = toRecorded(resolved);
      if (e) {
        await read.cancel();
        return e.position;
      }
    }
    return null;
  }

  /** Tombstoned events stay in the database until its scavenge, which is the operator's. */
  async flushDeletions(): Promise<void> {}

  async close(): Promise<void> {
    await this.client.dispose();
  }
}

export function openEventStoreDb(connectionString: string): EventStoreDbEventStore {
  return new EventStoreDbEventStore(EventStoreDBClient.connectionString(connectionString));
}
