import { randomUUID } from 'node:crypto';
import { Observable } from 'rxjs';
import { BlobIntegrityError, readRef, type BlobRef, type BlobStore } from './blob-store.js';
import { serialisePayload } from './payload-json.js';
import type {
  AppendResult,
  EventStore,
  ExpectedRevision,
  NewEvent,
  ReadAllOptions,
  ReadStreamOptions,
  RecordedEvent,
  SubscribeAllOptions,
  SubscribeStreamOptions,
} from './event-store.js';
import { ForwardingEventStore } from './forwarding-event-store.js';

/**
 * The threshold rule (docs/design.md, "Large payloads out of line"): an event whose payload is over `eventBytes` as
 * JSON goes to the blob store whole, and an append whose inline payloads add up to more than `appendBytes` moves its
 * largest ones out too, until the rest fit. EventStoreDB refuses an append over 1 MiB by default; the margin is for
 * the metadata and the encoding's own overhead.
 */
export interface InlineLimits {
  eventBytes: number;
  appendBytes: number;
}
export const inlineLimits: InlineLimits = { eventBytes: 64 * 1024, appendBytes: 512 * 1024 };

/** What an out-of-line event's payload is in the log: its blob's reference and nothing else. */
export interface OutOfLine {
  $blob: BlobRef;
}

export function isOutOfLine(data: unknown): data is OutOfLine {
  if (!data || typeof data !== 'object' || Array.isArray(data)) return false;
  const ref = (data as { $blob?: unknown }).$blob;
  return (
    Object.keys(data).length === 1 &&
    !!ref &&
    typeof ref === 'object' &&
    typeof (ref as BlobRef).key === 'string' &&
    typeof (ref as BlobRef).sha256 === 'string' &&
    typeof (ref as BlobRef).bytes === 'number'
  );
}

/**
 * Which events of one append go out of line, by index, given each payload's size in bytes: every one over the event
 * limit, then the largest of the rest while their sum is over the append limit.
 */
export function chooseOutOfLine(sizes: readonly number[], limits: InlineLimits = inlineLimits): Set<number> {
  const out = new Set<number>();
  let inline = 0;
  sizes.forEach((size, i) => {
    if (size > limits.eventBytes) out.add(i);
    else inline += size;
  });
  const rest = sizes
    .map((size, i) => ({ size, i }))
    .filter(({ i }) => !out.has(i))
    .sort((a, b) => b.size - a.size || a.i - b.i);
  for (const { size, i } of rest) {
    if (inline <= limits.appendBytes) break;
    out.add(i);
    inline -= size;
  }
  return out;
}

/** Where an event's payload is kept: under its stream, so deleting the stream finds its blobs by prefix. */
export const eventBlobPrefix = (streamId: string) => `event-data/${encodeURIComponent(streamId)}/`;
const eventBlobKey = (streamId: string, eventId: string) => `${eventBlobPrefix(streamId)}${eventId}.json`;

export interface BlobEventsLog {
  warn(obj: object, msg: string): void;
}

/**
 * An event store whose large payloads live in the blob store: appends put them there first and write the reference
 * with its SHA-256; every read (streams, the log, subscriptions) resolves references before handing events on, so
 * deciders, projectors and readers see the payload as it was appended. Events written before, or small enough, are
 * untouched. Deleting a stream deletes its payloads too.
 */
export class BlobBackedEventStore extends ForwardingEventStore {
  constructor(
    inner: EventStore,
    private readonly blobs: BlobStore,
    private readonly limits: InlineLimits = inlineLimits,
    private readonly log: BlobEventsLog | null = null,
  ) {
    super(inner);
  }

  override async append(streamId: string, events: NewEvent[], expected: ExpectedRevision): Promise<AppendResult> {
    // Serialised once: the SQLite store writes the same text (store/payload-json.ts).
    const sizes = events.map((e) => Buffer.byteLength(serialisePayload(e.data) ?? ''));
    const chosen = chooseOutOfLine(sizes, this.limits);
    if (chosen.size === 0) return this.inner.append(streamId, events, expected);
    const written: string[] = [];
    const stored = await Promise.all(
      events.map(async (e, i) => {
        if (!chosen.has(i)) return e;
        const id = e.id ?? randomUUID();
        const ref = await this.blobs.put(eventBlobKey(streamId, id), JSON.stringify(e.data));
        written.push(ref.key);
        const data: OutOfLine = { $blob: ref };
        return { ...e, id, data };
      }),
    ).catch(async (err: unknown) => {
      await this.forget(written);
      throw err;
    });
    try {
      return await this.inner.append(streamId, stored, expected);
    } catch (err) {
      // A refused append (most often another writer's revision) leaves nothing that refers to the blobs.
      await this.forget(written);
      throw err;
    }
  }

  private async forget(keys: string[]): Promise<void> {
    for (const key of keys)
      await this.blobs.delete(key).catch((err: unknown) =>
        // Left over, it is only space: it goes with its stream's deletion.
        this.log?.warn({ err, key }, 'could not remove the payload of an event that was not appended'),
      );
  }

  /**
   * The event with its payload read back, or null when the blob is gone because its stream was deleted (EventStoreDB
   * answers a deleted stream's events in the log until its scavenge; SQLite does not answer them at all).
   */
  private async resolve(e: RecordedEvent): Promise<RecordedEvent | null> {
    if (!isOutOfLine(e.data)) return e;
    const ref = e.data.$blob;
    let content: Buffer;
    try {
      content = await readRef(this.blobs, ref);
    } catch (err) {
      if (err instanceof BlobIntegrityError && (await this.inner.readStream(e.streamId, { limit: 1 })).length === 0)
        return null;
      throw err;
    }
    return { ...e, data: JSON.parse(content.toString('utf8')) as unknown };
  }

  private async resolveAll(events: RecordedEvent[]): Promise<RecordedEvent[]> {
    if (!events.some((e) => isOutOfLine(e.data))) return events;
    const out: RecordedEvent[] = [];
    for (const e of events) {
      const resolved = await this.resolve(e);
      if (resolved) out.push(resolved);
    }
    return out;
  }

  /**
   * The events in order, each out-of-line payload read back first. An event without a reference passes at once while
   * none is being read back, without the inner observable per event `concatMap` made (docs/performance.md, "Job
   * creations through the API: CPU per creation"); once one is, the events after it wait behind it.
   */
  private resolveEach(source: Observable<RecordedEvent>): Observable<RecordedEvent> {
    return new Observable<RecordedEvent>((subscriber) => {
      let waiting: RecordedEvent[] | null = null;
      let sourceDone = false;
      const drain = async (): Promise<void> => {
        while (waiting && waiting.length > 0) {
          const e = waiting[0]!;
          let resolved: RecordedEvent | null;
          try {
            resolved = isOutOfLine(e.data) ? await this.resolve(e) : e;
          } catch (err) {
            subscriber.error(err);
            return;
          }
          if (subscriber.closed) return;
          waiting.shift();
          if (resolved) subscriber.next(resolved);
        }
        waiting = null;
        if (sourceDone) subscriber.complete();
      };
      const sub = source.subscribe({
        next: (e) => {
          if (waiting) waiting.push(e);
          else if (!isOutOfLine(e.data)) subscriber.next(e);
          else {
            waiting = [e];
            drain().catch((err: unknown) => subscriber.error(err));
          }
        },
        error: (err: unknown) => subscriber.error(err),
        complete: () => {
          if (waiting) sourceDone = true;
          else subscriber.complete();
        },
      });
      return () => sub.unsubscribe();
    });
  }

  override async readStream(streamId: string, options?: ReadStreamOptions): Promise<RecordedEvent[]> {
    return this.resolveAll(await this.inner.readStream(streamId, options));
  }

  override async readAll(options?: ReadAllOptions): Promise<RecordedEvent[]> {
    return this.resolveAll(await this.inner.readAll(options));
  }

  override subscribeStream(streamId: string, options?: SubscribeStreamOptions): Observable<RecordedEvent> {
    return this.resolveEach(this.inner.subscribeStream(streamId, options));
  }

  override subscribeAll(options?: SubscribeAllOptions): Observable<RecordedEvent> {
    return this.resolveEach(this.inner.subscribeAll(options));
  }

  /** The stream first: payloads removed before it would leave events that cannot be read. */
  override async deleteStream(streamId: string): Promise<void> {
    await this.inner.deleteStream(streamId);
    await this.blobs.deletePrefix(eventBlobPrefix(streamId));
  }
}
