import { DomainError } from '../domain/decider.js';
import type { Doc, DocumentStore } from '../store/document-store.js';
import { WrongExpectedRevisionError, type EventStore } from '../store/event-store.js';
import type { CommandContext } from './commands.js';

/** SPEC §8 / BEHAVIOUR §5.4. */
export const stateLimits = { keyChars: 200, valueBytes: 1024 * 1024, keys: 1000, totalBytes: 16 * 1024 * 1024 };

export interface StateEntry extends Doc {
  workspaceId: string;
  jobId: string;
  key: string;
  value: string;
  size: number;
  updatedAt: number;
}

interface Totals extends Doc {
  keys: number;
  bytes: number;
}

export const jobStateStreamId = (jobId: string) => `jobstate-${jobId}`;
const entrySize = (key: string, value: string) => Buffer.byteLength(key) + Buffer.byteLength(value);
const tooLarge = (field: string, message: string) => DomainError.validation([{ field, code: 'too_large', message }]);

/** The narrow interface runs, the broker and the API use; a shadow run can wrap it with an overlay. */
export interface JobStateAccess {
  get(workspaceId: string, jobId: string, key: string): Promise<string | null>;
  list(workspaceId: string, jobId: string): Promise<StateEntry[]>;
  set(ctx: CommandContext, workspaceId: string, jobId: string, key: string, value: string): Promise<StateEntry>;
  delete(ctx: CommandContext, workspaceId: string, jobId: string, key: string): Promise<boolean>;
}

/**
 * A job's key/value store. Values live in the document store, written directly because they are hot; every write
 * also appends an event (with the value) to the job's state stream, so history can be replayed and audited. Writes
 * of one job are serialized in this process, and across processes by the stream's expected revision.
 */
export class JobStateStore implements JobStateAccess {
  private readonly chains = new Map<string, Promise<unknown>>();
  /** Last known revision of each job's state stream: a write reads only what other processes added since. */
  private readonly revisions = new Map<string, number>();

  constructor(
    private readonly docs: DocumentStore,
    private readonly events: EventStore,
    private readonly clock: () => number = Date.now,
  ) {}

  private get entries() {
    return this.docs.collection<StateEntry>('job_state');
  }
  private get totals() {
    return this.docs.collection<Totals>('job_state_totals');
  }

  async get(workspaceId: string, jobId: string, key: string): Promise<string | null> {
    return (await this.entries.findOne({ _id: `${jobId}:${key}`, workspaceId }))?.value ?? null;
  }

  list(workspaceId: string, jobId: string): Promise<StateEntry[]> {
    return this.entries.find({ workspaceId, jobId }, { sort: [['key', 1]] });
  }

  set(ctx: CommandContext, workspaceId: string, jobId: string, key: string, value: string): Promise<StateEntry> {
    checkKey(key);
    if (Buffer.byteLength(value) > stateLimits.valueBytes) throw tooLarge('value', 'values are limited to 1 MiB');
    return this.serialized(jobId, async () => {
      const old = await this.entries.findOne({ _id: `${jobId}:${key}` });
      const t = (await this.totals.findOne({ _id: jobId })) ?? { _id: jobId, keys: 0, bytes: 0 };
      const size = entrySize(key, value);
      if (!old && t.keys >= stateLimits.keys) throw DomainError.validation([{ field: 'key', code: 'too_many_keys', message: `a job keeps at most ${stateLimits.keys} keys; existing keys stay writable` }]);
      const bytes = t.bytes - (old?.size ?? 0) + size;
      if (bytes > stateLimits.totalBytes && size > (old?.size ?? 0)) throw tooLarge('value', 'the job state would grow beyond 16 MiB of keys and values');
      await this.append(ctx, workspaceId, jobId, 'JobStateSet', { key, value, size });
      const entry: StateEntry = { _id: `${jobId}:${key}`, workspaceId, jobId, key, value, size, updatedAt: this.clock() };
      await this.entries.updateOne({ _id: entry._id }, { $set: { workspaceId, jobId, key, value, size, updatedAt: entry.updatedAt } }, { upsert: true });
      await this.totals.updateOne({ _id: jobId }, { $set: { keys: t.keys + (old ? 0 : 1), bytes } }, { upsert: true });
      return entry;
    });
  }

  delete(ctx: CommandContext, workspaceId: string, jobId: string, key: string): Promise<boolean> {
    checkKey(key);
    return this.serialized(jobId, async () => {
      const old = await this.entries.findOne({ _id: `${jobId}:${key}`, workspaceId });
      if (!old) return false;
      await this.append(ctx, workspaceId, jobId, 'JobStateDeleted', { key });
      await this.entries.deleteMany({ _id: old._id });
      const t = (await this.totals.findOne({ _id: jobId })) ?? { _id: jobId, keys: 1, bytes: old.size };
      await this.totals.updateOne({ _id: jobId }, { $set: { keys: Math.max(0, t.keys - 1), bytes: Math.max(0, t.bytes - old.size) } }, { upsert: true });
      return true;
    });
  }

  private async append(ctx: CommandContext, workspaceId: string, jobId: string, type: string, data: Record<string, unknown>): Promise<void> {
    const metadata = { workspaceId, actor: ctx.actor, requestId: ctx.requestId, correlationId: ctx.correlationId ?? ctx.requestId, causationId: ctx.causationId ?? null, ts: this.clock(), v: 1 };
    for (let attempt = 0; ; attempt++) {
      const known = this.revisions.get(jobId) ?? -1;
      const newer = await this.events.readStream(jobStateStreamId(jobId), { fromRevision: known + 1 });
      const last = newer.length ? newer[newer.length - 1]!.revision : known;
      try {
        const result = await this.events.append(jobStateStreamId(jobId), [{ type, data, metadata }], last === -1 ? 'no_stream' : last);
        this.revisions.set(jobId, result.revision);
        return;
      } catch (err) {
        if (!(err instanceof WrongExpectedRevisionError) || attempt >= 5) throw err;
      }
    }
  }

  private serialized<T>(jobId: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.chains.get(jobId) ?? Promise.resolve();
    const next = prev.then(fn, fn);
    const settled = next.catch(() => undefined);
    this.chains.set(jobId, settled);
    void settled.then(() => {
      if (this.chains.get(jobId) === settled) this.chains.delete(jobId);
    });
    return next;
  }
}

function checkKey(key: string): void {
  if (key.length === 0) throw DomainError.validation([{ field: 'key', code: 'required', message: 'must not be empty' }]);
  if (key.length > stateLimits.keyChars) throw tooLarge('key', 'keys are limited to 200 characters');
}
