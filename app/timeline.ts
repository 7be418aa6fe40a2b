import { redactValue } from '../domain/redact.js';
import { Subject } from 'rxjs';
import type { RunFiles } from '../adapters/run-files.js';
import type { EventDto } from '../schemas/run.js';
import type { Actor, EventStore, RecordedEvent } from '../store/event-store.js';

/** The run timeline lives in a stream of its own per run; an entry's seq is its revision + 1. */
export const timelineStreamId = (runId: string) => `timeline-${runId}`;

export interface TimelineData {
  payload: unknown;
  /** The whole payload's name under the run's events in the blob store, when `payload` is shortened. */
  stored?: string;
  /** The SHA-256 of the stored payload (entries written before the blob store have the name alone). */
  storedSha256?: string;
  spanId: string | null;
  parentSpanId: string | null;
  ms: number | null;
}

export interface TimelineOptions {
  ms?: number | null;
  spanId?: string | null;
  parentSpanId?: string | null;
}

/** Live fragments of model and command output (the run stream's `delta`): never stored, only for whoever watches. */
export interface LiveDelta {
  runId: string;
  delta: { type: string; callId?: string; text: string };
}
export const liveDeltas = new Subject<LiveDelta>();

/** A payload above this size (serialized) is stored whole beside the run and kept shortened inline. */
export const inlinePayloadBytes = 16 * 1024;
/** Strings of a shortened payload keep their head and tail. */
const shortenedStringChars = 2 * 1024;

/** Long strings are cut in the middle so a payload keeps its shape. */
function shorten(value: unknown): unknown {
  if (typeof value === 'string') {
    if (value.length <= shortenedStringChars) return value;
    const half = shortenedStringChars / 2;
    return `${value.slice(0, half)}\n[… ${value.length - shortenedStringChars} characters left out …]\n${value.slice(-half)}`;
  }
  if (Array.isArray(value)) return value.map(shorten);
  if (value && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, shorten(v)]));
  return value;
}

/**
 * Appends a run's timeline entries in order, one writer per run. Every string passes through `redact` first, so a
 * secret value never reaches the log.
 */
export class TimelineWriter {
  private chain: Promise<unknown> = Promise.resolve();
  private failure: Error | null = null;

  constructor(
    private readonly events: EventStore,
    readonly runId: string,
    private readonly workspaceId: string,
    private readonly redact: (text: string) => string = (t) => t,
    private readonly clock: () => number = Date.now,
    private readonly files: Pick<RunFiles, 'savePayload'> | null = null,
    private readonly log: TimelineLogger | null = null,
  ) {}

  /** The first write that failed: from there on the run's record is incomplete, so the run must not pass. */
  get failed(): Error | null {
    return this.failure;
  }

  /**
   * Appends without waiting for the store. A write that fails must not take the process down: it is logged with the
   * run id and kept in `failed`, and the run ends failed at its next check (docs/design.md, "Failure handling").
   */
  record(type: string, payload: Record<string, unknown>, options: TimelineOptions = {}): void {
    this.append(type, payload, options).catch((err: unknown) =>
      this.log?.error({ err, runId: this.runId, entry: type }, 'could not write a timeline entry; the run will fail'),
    );
  }

  append(type: string, payload: Record<string, unknown>, options: TimelineOptions = {}): Promise<void> {
    const ts = this.clock();
    const redacted = redactValue(payload, this.redact);
    const json = JSON.stringify(redacted);
    const big = Buffer.byteLength(json) > inlinePayloadBytes;
    const data: TimelineData = {
      payload: big ? shorten(redacted) : redacted,
      spanId: options.spanId ?? null,
      parentSpanId: options.parentSpanId ?? null,
      ms: options.ms === undefined || options.ms === null ? null : Math.round(options.ms),
    };
    const actor: Actor = { type: 'run', id: this.runId };
    const next = this.chain.then(async () => {
      // Without storage (tests of the broker alone) the shortened payload is all there is.
      if (big && this.files) {
        const stored = await this.files.savePayload(this.runId, json);
        data.stored = stored.name;
        data.storedSha256 = stored.sha256;
      }
      return this.events.append(
        timelineStreamId(this.runId),
        [
          {
            type,
            data,
            metadata: {
              workspaceId: this.workspaceId,
              actor,
              requestId: null,
              correlationId: this.runId,
              causationId: null,
              ts,
            },
          },
        ],
        'any',
      );
    });
    this.chain = next.catch((err: unknown) => {
      this.failure ??= err instanceof Error ? err : new Error(String(err));
    });
    return next.then(() => undefined);
  }

  /** Resolves once everything appended so far is stored. */
  async flush(): Promise<void> {
    await this.chain;
  }

  delta(delta: LiveDelta['delta']): void {
    liveDeltas.next({ runId: this.runId, delta: { ...delta, text: this.redact(delta.text) } });
  }
}

export interface TimelineLogger {
  error(obj: object, msg: string): void;
}

/** What runs write their timeline through; a shadow run's goes nowhere: its events are discarded. */
export type Timeline = Pick<TimelineWriter, 'append' | 'record' | 'delta' | 'flush' | 'failed'>;
export const discardedTimeline: Timeline = {
  append: async () => undefined,
  record: () => undefined,
  delta: () => undefined,
  flush: async () => undefined,
  failed: null,
};

export function toEventDto(recorded: RecordedEvent): EventDto {
  const data = recorded.data as TimelineData;
  return {
    seq: recorded.revision + 1,
    ts: recorded.metadata.ts,
    type: recorded.type,
    spanId: data.spanId,
    parentSpanId: data.parentSpanId,
    ms: data.ms,
    payload: data.payload,
  };
}
