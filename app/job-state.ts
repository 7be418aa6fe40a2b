import {
  checkKey,
  decideDelete,
  decideSet,
  jobStateStream,
  jobStateStreamId,
  type JobStateEvent,
  type StateUsage,
} from '../domain/job-state.js';
import { ignoreFailure } from '../domain/ignore-failure.js';
import { DuplicateKeyError, type Collection, type Doc, type DocumentStore } from '../store/document-store.js';
import { WrongExpectedRevisionError, type Actor, type EventStore } from '../store/event-store.js';
import type { CommandContext } from './commands.js';
import { conflictPause } from './conflict-pause.js';

/** One key of a job's state as runs, the broker and the API see it. */
export interface StateEntry {
  key: string;
  value: string;
  size: number;
  updatedAt: number;
}

/**
 * The narrow interface runs, the broker and the API use. A shadow run's copy-on-write overlay wraps it: reads fall
 * through, writes stay in the overlay and are decided with `domain/job-state.ts` against `usage` plus its own changes.
 */
export interface JobStateAccess {
  get(workspaceId: string, jobId: string, key: string): Promise<StateEntry | null>;
  /** Every key, sorted by key. */
  list(workspaceId: string, jobId: string): Promise<StateEntry[]>;
  usage(workspaceId: string, jobId: string): Promise<StateUsage>;
  set(ctx: CommandContext, workspaceId: string, jobId: string, key: string, value: string): Promise<StateEntry>;
  /** False when the key does not exist. */
  delete(ctx: CommandContext, workspaceId: string, jobId: string, key: string): Promise<boolean>;
}

export const jobStateCollection = 'job_state';
const usageCollection = 'job_state_usage';

/** One document per key (`<jobId>:<key>`). A deleted key stays as a tombstone so a late, older write cannot revive it. */
interface StateDoc extends Doc {
  workspaceId: string;
  jobId: string;
  key: string;
  value: string;
  size: number;
  updatedAt: number;
  updatedBy: { type: Actor['type']; id: string | null };
  deleted: boolean;
  /** Revision of the stream event this document reflects. */
  revision: number;
}

/** Per job: the totals the limits look at, and the stream revision the documents reflect. */
interface UsageDoc extends Doc {
  workspaceId: string;
  keys: number;
  bytes: number;
  revision: number;
}

const docId = (jobId: string, key: string) => `${jobId}:${key}`;
const toEntry = (d: StateDoc): StateEntry => ({ key: d.key, value: d.value, size: d.size, updatedAt: d.updatedAt });
const maxAttempts = 10;

/**
 * A job's key/value store. Values live in the document store, written directly because they are hot; every write
 * appends an event (with the value) to the job's state stream first, so history can be replayed and audited.
 *
 * Writes of one job are serialized in this process by a promise chain, and across processes by the stream: a write is
 * decided on the documents, which record the revision they reflect, and appended with that revision as the expected
 * one. When another process got there first the append fails; the missing events are applied to the documents
 * (applying is idempotent: events carry the totals after them, documents only move forward) and the write is decided
 * again.
 */
export class JobStateStore implements JobStateAccess {
  private readonly chains = new Map<string, Promise<unknown>>();
  private indexed: Promise<void> | null = null;

  constructor(
    private readonly docs: DocumentStore,
    private readonly events: EventStore,
    private readonly clock: () => number = Date.now,
  ) {}

  private get entries(): Collection<StateDoc> {
    return this.docs.collection<StateDoc>(jobStateCollection);
  }
  private get usageDocs(): Collection<UsageDoc> {
    return this.docs.collection<UsageDoc>(usageCollection);
  }

  private ready(): Promise<void> {
    this.indexed ??= this.entries.createIndex([
      ['jobId', 1],
      ['deleted', 1],
      ['key', 1],
    ]);
    return this.indexed;
  }

  /**
   * Drops the entries and usage of a deleted workspace's jobs, once their streams are erased (docs/design.md,
   * "Workspace erasure"): these documents are this store's, not a projector's, so nothing else removes them.
   */
  async eraseWorkspace(workspaceId: string): Promise<void> {
    await this.entries.deleteMany({ workspaceId });
    await this.usageDocs.deleteMany({ workspaceId });
  }

  async get(workspaceId: string, jobId: string, key: string): Promise<StateEntry | null> {
    const d = await this.entries.findOne({ _id: docId(jobId, key), workspaceId, deleted: false });
    return d ? toEntry(d) : null;
  }

  async list(workspaceId: string, jobId: string): Promise<StateEntry[]> {
    await this.ready();
    return (await this.entries.find({ jobId, deleted: false, workspaceId }, { sort: [['key', 1]] })).map(toEntry);
  }

  async usage(workspaceId: string, jobId: string): Promise<StateUsage> {
    const u = await this.usageDocs.findOne({ _id: jobId, workspaceId });
    return { keys: u?.keys ?? 0, bytes: u?.bytes ?? 0 };
  }

  async set(ctx: CommandContext, workspaceId: string, jobId: string, key: string, value: string): Promise<StateEntry> {
    // Refuse what no state could take before queueing behind other writes.
    decideSet(key, value, { keys: 0, bytes: 0 }, null);
    return this.serialized(jobId, async () => {
      const written = await this.write(ctx, workspaceId, jobId, async (usage) => {
        const old = await this.entries.findOne({ _id: docId(jobId, key), deleted: false });
        const next = decideSet(key, value, usage, old?.size ?? null);
        return { type: 'JobStateSet', data: { key, value, size: next.size, keys: next.keys, bytes: next.bytes } };
      });
      return { key, value, size: Buffer.byteLength(key) + Buffer.byteLength(value), updatedAt: written!.ts };
    });
  }

  async delete(ctx: CommandContext, workspaceId: string, jobId: string, key: string): Promise<boolean> {
    checkKey(key);
    return this.serialized(jobId, async () => {
      const written = await this.write(ctx, workspaceId, jobId, async (usage) => {
        const old = await this.entries.findOne({ _id: docId(jobId, key), workspaceId, deleted: false });
        if (!old) return null;
        return { type: 'JobStateDeleted', data: { key, ...decideDelete(usage, old.size) } };
      });
      return written !== null;
    });
  }

  /** Decides on the documents, appends at the revision they reflect, applies; catches up and decides again on a conflict. */
  private async write(
    ctx: CommandContext,
    workspaceId: string,
    jobId: string,
    decide: (usage: StateUsage) => Promise<JobStateEvent | null>,
  ): Promise<{ ts: number } | null> {
    await this.ready();
    for (let attempt = 1; ; attempt++) {
      const head = await this.usageDocs.findOne({ _id: jobId });
      const revision = head?.revision ?? -1;
      const event = await decide({ keys: head?.keys ?? 0, bytes: head?.bytes ?? 0 });
      if (!event) return null;
      const ts = this.clock();
      const metadata = {
        workspaceId,
        actor: ctx.actor,
        requestId: ctx.requestId,
        correlationId: ctx.correlationId ?? ctx.requestId,
        causationId: ctx.causationId ?? null,
        ts,
        v: 1,
      };
      try {
        const appended = await this.events.append(
          jobStateStreamId(jobId),
          [{ type: event.type, data: event.data, metadata }],
          revision === -1 ? 'no_stream' : revision,
        );
        await this.apply(workspaceId, jobId, appended.revision, event, ctx.actor, ts);
        return { ts };
      } catch (err) {
        if (!(err instanceof WrongExpectedRevisionError) || attempt >= maxAttempts) throw err;
        await this.catchUp(jobId, revision);
        await conflictPause(attempt);
      }
    }
  }

  /** Applies the events after `revision` that the documents do not reflect yet (another process's, or a crashed write's). */
  private async catchUp(jobId: string, revision: number): Promise<void> {
    for (const recorded of await this.events.readStream(jobStateStreamId(jobId), { fromRevision: revision + 1 })) {
      const decoded = jobStateStream.decode(recorded);
      if (!decoded) continue;
      const { event: e } = decoded;
      await this.apply(e.metadata.workspaceId ?? '', jobId, e.revision, e, e.metadata.actor, e.metadata.ts);
    }
  }

  private async apply(
    workspaceId: string,
    jobId: string,
    revision: number,
    event: JobStateEvent,
    actor: Actor,
    ts: number,
  ): Promise<void> {
    const { key, keys, bytes } = event.data;
    const updatedBy = { type: actor.type, id: actor.id };
    const fields =
      event.type === 'JobStateSet'
        ? {
            workspaceId,
            jobId,
            key,
            value: event.data.value,
            size: event.data.size,
            updatedAt: ts,
            updatedBy,
            deleted: false,
          }
        : { workspaceId, jobId, key, value: '', size: 0, updatedAt: ts, updatedBy, deleted: true };
    await putIfNewer(this.entries, docId(jobId, key), fields, revision);
    await putIfNewer(this.usageDocs, jobId, { workspaceId, keys, bytes }, revision);
  }

  private serialized<T>(jobId: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.chains.get(jobId) ?? Promise.resolve();
    const next = prev.then(fn, fn);
    const settled: Promise<void> = next
      .catch(ignoreFailure("the caller gets this failure from `next`; the chain only keeps the job's writes in order"))
      .then(() => {
        if (this.chains.get(jobId) === settled) this.chains.delete(jobId);
      });
    this.chains.set(jobId, settled);
    return next;
  }
}

/** Writes a document unless it already reflects this revision or a later one: documents only move forward. */
async function putIfNewer<T extends Doc & { revision: number }>(
  c: Collection<T>,
  _id: string,
  fields: Omit<T, '_id' | 'revision'>,
  revision: number,
): Promise<void> {
  const body = { ...fields, revision } as unknown as Record<string, never>;
  for (;;) {
    if ((await c.updateOne({ _id, revision: { $lt: revision } }, { $set: body })).matched > 0) return;
    try {
      await c.insertOne({ _id, ...body } as T);
      return;
    } catch (err) {
      if (!(err instanceof DuplicateKeyError)) throw err;
    }
    const current = await c.findOne({ _id });
    if (current && current.revision >= revision) return;
  }
}
