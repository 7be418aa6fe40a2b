import {
  byIdOnly,
  DuplicateKeyError,
  type Collection,
  type CountOptions,
  type Doc,
  type DocumentStore,
  type Filter,
  type FindOptions,
  type IndexOptions,
  type Update,
  type UpdateOptions,
  type UpdateResult,
} from './document-store.js';
import { applyUpdateShared } from './update-ops.js';

/** The `_id` a filter names when it names nothing else. */
const idOf = (filter: Filter): string | null => (byIdOnly(filter) ? filter._id : null);

/** The `_id`s of a `{ _id: { $in: [...] } }` filter, when that is the whole filter. */
function idsOf(filter: Filter): string[] | null {
  const keys = Object.keys(filter);
  if (keys.length !== 1 || keys[0] !== '_id') return null;
  const c = filter._id;
  if (c === null || typeof c !== 'object' || Array.isArray(c)) return null;
  const ops = Object.keys(c);
  if (ops.length !== 1 || ops[0] !== '$in') return null;
  const ids = (c as { $in: unknown }).$in;
  return Array.isArray(ids) && ids.every((x) => typeof x === 'string') ? (ids as string[]) : null;
}

const plainFind = (o: FindOptions) =>
  o.skip === undefined && o.limit === undefined && o.search === undefined && (o.sort ?? []).length === 0;

const byId = (a: Doc, b: Doc) => (a._id < b._id ? -1 : a._id > b._id ? 1 : 0);

/**
 * The ids written to a collection, as a Bloom filter of fixed size (a megabyte): `has` is false only for an id never
 * added, so a lookup it rules out needs no query, and one it lets through (rarely, until the collection holds
 * millions of documents) is asked of the store as before.
 */
class WrittenIds {
  private readonly bits = new Int32Array(1 << 18);
  private static readonly mask = (1 << 23) - 1;

  private static positions(id: string): [number, number, number] {
    // Two 32-bit hashes in one pass (FNV-1a and a multiplicative one); three positions from them.
    let a = 0x811c9dc5;
    let b = 0x9747b28c;
    for (let i = 0; i < id.length; i++) {
      const c = id.charCodeAt(i);
      a = Math.imul(a ^ c, 0x01000193);
      b = Math.imul(b ^ c, 0x5bd1e995) ^ (b >>> 13);
    }
    b |= 1;
    const m = WrittenIds.mask;
    return [a & m, (a + b) & m, (a + 2 * b) & m];
  }

  add(id: string): void {
    for (const p of WrittenIds.positions(id)) this.bits[p >>> 5]! |= 1 << (p & 31);
  }

  has(id: string): boolean {
    for (const p of WrittenIds.positions(id)) if ((this.bits[p >>> 5]! & (1 << (p & 31))) === 0) return false;
    return true;
  }
}

/**
 * One collection's unit of work. Documents read or written by `_id` are held in memory (null: known missing) and
 * written back together; a query of any other shape first writes back what is pending, then asks the store, so it
 * sees exactly the store the same writes would have left.
 */
class WriteBackCollection<T extends Doc> implements Collection<T> {
  private readonly held = new Map<string, T | null>();
  private readonly dirty = new Set<string>();
  private writing: Promise<void> | null = null;
  /**
   * Set when the collection was empty as the cache began and every write since went through it: an id not in it is
   * missing from the store, without asking (a replay's new documents, most of what it writes). Kept across
   * `discard()`: an id of a rolled back page only costs a query.
   */
  private written: WrittenIds | null = null;

  constructor(private readonly inner: Collection<T>) {}

  get name(): string {
    return this.inner.name;
  }

  /** From now on, ids this cache never wrote are known missing (`WriteBackDocuments.trackFromEmpty`). */
  async trackFromEmpty(): Promise<boolean> {
    this.written = (await this.inner.findOne({})) === null ? new WrittenIds() : null;
    return this.written !== null;
  }

  private async load(id: string): Promise<T | null> {
    if (this.held.has(id)) return this.held.get(id)!;
    if (this.written && !this.written.has(id)) {
      this.held.set(id, null);
      return null;
    }
    const doc = await this.inner.findOne({ _id: id });
    // A write-back of the same id may have happened meanwhile: what is held wins.
    if (this.held.has(id)) return this.held.get(id)!;
    this.held.set(id, doc);
    return doc;
  }

  /** What is known of a document without asking the store: held (null: missing), known missing, else undefined. */
  private peek(id: string): T | null | undefined {
    const held = this.held.get(id);
    if (held !== undefined) return held;
    if (this.written && !this.written.has(id)) {
      this.held.set(id, null);
      return null;
    }
    return undefined;
  }

  /**
   * `updateOne` by `_id`, made at once when the document is held or known missing: false, with nothing done, when the
   * store must be asked first.
   */
  updateHeld(id: string, update: Update, upsert: boolean): boolean {
    const doc = this.peek(id);
    if (doc === undefined) return false;
    if (doc) this.put(id, applyUpdateShared(doc, update, false) as T);
    else if (upsert) this.put(id, applyUpdateShared({ _id: id }, update, true) as T);
    return true;
  }

  /** `deleteMany` by `_id`, made at once as `updateHeld` is. */
  deleteHeld(id: string): boolean {
    const doc = this.peek(id);
    if (doc === undefined) return false;
    if (doc) this.put(id, null);
    return true;
  }

  private put(id: string, doc: T | null): void {
    // A document held before was written through this cache or read from the store: its id is in the filter already
    // (an update of a held document, most writes, need not hash it again).
    if (doc && this.written && !this.held.get(id)) this.written.add(id);
    // Last written, last to go when `settle` trims what is held.
    this.held.delete(id);
    this.held.set(id, doc);
    this.dirty.add(id);
  }

  /** Writes back every pending change of this collection; the documents stay held, now as the store has them. */
  async flush(): Promise<void> {
    while (this.writing) await this.writing;
    if (this.dirty.size === 0) return;
    const saves: T[] = [];
    const deletes: string[] = [];
    for (const id of this.dirty) {
      const doc = this.held.get(id);
      if (doc) saves.push(doc);
      else deletes.push(id);
    }
    this.dirty.clear();
    this.writing = (async () => {
      if (deletes.length > 0) await this.inner.deleteMany({ _id: { $in: deletes } });
      await this.inner.saveMany(saves);
    })();
    try {
      await this.writing;
    } finally {
      this.writing = null;
    }
  }

  discard(): void {
    this.held.clear();
    this.dirty.clear();
  }

  /**
   * After a committed page: what is held is what the store holds, and the next page reads much of it again (a job's
   * document, changed by each of its runs). Keeps the `max` written or read last, forgets the rest.
   */
  settle(max: number): void {
    if (this.dirty.size > 0) throw new Error(`settle with ${this.dirty.size} changes of ${this.name} not written back`);
    let over = this.held.size - max;
    if (over <= 0) return;
    for (const id of this.held.keys()) {
      if (over-- <= 0) break;
      this.held.delete(id);
    }
  }

  /**
   * For a write the store makes itself (many documents, a filter of another shape): nothing held stays true. One that
   * may insert (an upsert) makes ids the cache does not know of: they are asked of the store from then on.
   */
  private async through<R>(write: () => Promise<R>, inserts = false): Promise<R> {
    if (inserts) this.written = null;
    await this.flush();
    try {
      return await write();
    } finally {
      this.held.clear();
    }
  }

  async createIndex(keys: Array<[string, 1 | -1]>, options?: IndexOptions): Promise<void> {
    await this.inner.createIndex(keys, options);
  }

  async findOne(filter: Filter, options: Omit<FindOptions, 'limit'> = {}): Promise<T | null> {
    const id = idOf(filter);
    if (id !== null && plainFind(options)) return this.load(id);
    await this.flush();
    return this.inner.findOne(filter, options);
  }

  async find(filter: Filter, options: FindOptions = {}): Promise<T[]> {
    const ids = idsOf(filter);
    const sortsById = (options.sort ?? []).every(([f, d]) => f === '_id' && d === 1);
    if (ids !== null && sortsById && plainFind({ ...options, sort: [] })) {
      const written = this.written;
      if (written) for (const id of ids) if (!this.held.has(id) && !written.has(id)) this.held.set(id, null);
      const missing = ids.filter((id) => !this.held.has(id));
      if (missing.length > 0) {
        const found = new Map((await this.inner.find({ _id: { $in: missing } })).map((d) => [d._id, d]));
        for (const id of missing) if (!this.held.has(id)) this.held.set(id, found.get(id) ?? null);
      }
      // The order the SQLite store gives an `_id` list: its primary key's.
      const out: T[] = [];
      for (const id of new Set(ids)) {
        const doc = this.held.get(id);
        if (doc) out.push(doc);
      }
      return out.sort(byId);
    }
    await this.flush();
    return this.inner.find(filter, options);
  }

  async count(filter: Filter, options?: CountOptions): Promise<number> {
    await this.flush();
    return this.inner.count(filter, options);
  }

  async insertOne(doc: T): Promise<void> {
    if ((await this.load(doc._id)) !== null) throw new DuplicateKeyError(this.name, `_id ${doc._id}`);
    this.put(doc._id, JSON.parse(JSON.stringify(doc)) as T);
  }

  async updateOne(filter: Filter, update: Update, options: UpdateOptions = {}): Promise<UpdateResult> {
    const id = idOf(filter);
    if (id === null) return this.through(() => this.inner.updateOne(filter, update, options), options.upsert);
    const doc = await this.load(id);
    if (doc) {
      this.put(id, applyUpdateShared(doc, update, false) as T);
      return { matched: 1, modified: 1, upsertedId: null };
    }
    if (!options.upsert) return { matched: 0, modified: 0, upsertedId: null };
    // The filter is `{ _id }` alone (`idOf`): the document it starts is its id.
    this.put(id, applyUpdateShared({ _id: id }, update, true) as T);
    return { matched: 0, modified: 0, upsertedId: id };
  }

  async updateMany(filter: Filter, update: Update, options: UpdateOptions = {}): Promise<UpdateResult> {
    if (idOf(filter) !== null) return this.updateOne(filter, update, options);
    return this.through(() => this.inner.updateMany(filter, update, options), options.upsert);
  }

  async deleteMany(filter: Filter): Promise<number> {
    const id = idOf(filter);
    if (id === null) return this.through(() => this.inner.deleteMany(filter));
    const existed = (await this.load(id)) !== null;
    if (existed) this.put(id, null);
    return existed ? 1 : 0;
  }

  async saveMany(docs: T[]): Promise<void> {
    for (const doc of docs) this.put(doc._id, JSON.parse(JSON.stringify(doc)) as T);
  }

  async drop(): Promise<void> {
    await this.through(() => this.inner.drop());
  }

  async dropIndexes(): Promise<void> {
    await this.inner.dropIndexes();
  }
}

/**
 * A write-back cache over a document store, the unit of work of a replay page (docs/design.md, "Replay"): each
 * document a page reads or changes by `_id` is read from the store once and written back once, at `flush()`, instead
 * of once per event, while every answer stays the one the store would give. Documents it returns are shared with the
 * cache: callers must not change them (projectors do not; updates replace a held document, never change it).
 * Only the named collections are held; collections with a unique index besides `_id` must not be, since a write-back
 * cannot refuse a duplicate at the write that made it.
 */
export class WriteBackDocuments implements DocumentStore {
  private readonly held = new Map<string, WriteBackCollection<Doc>>();

  constructor(
    private readonly inner: DocumentStore,
    private readonly cached: ReadonlySet<string>,
  ) {}

  get kind(): string {
    return this.inner.kind;
  }

  collection<T extends Doc = Doc>(name: string): Collection<T> {
    if (!this.cached.has(name)) return this.inner.collection<T>(name);
    let c = this.held.get(name);
    if (!c) {
      c = new WriteBackCollection<Doc>(this.inner.collection(name));
      this.held.set(name, c);
    }
    return c as unknown as Collection<T>;
  }

  /**
   * Tells the named collections that were empty now which ids they hold from here on: those this cache writes, so it
   * need not ask the store for any other (docs/design.md, "Replay"). Only for a cache through which every later write
   * of those collections goes, as a replay's is. Answers those that were empty.
   */
  async trackFromEmpty(names: Iterable<string>): Promise<Set<string>> {
    const empty = new Set<string>();
    for (const name of names)
      if (
        this.cached.has(name) &&
        (await (this.collection(name) as unknown as WriteBackCollection<Doc>).trackFromEmpty())
      )
        empty.add(name);
    return empty;
  }

  /**
   * A write of one document by `_id` (`update` null: its deletion) made at once, without a promise, when the collection
   * is held and holds the document or knows it missing: the same write `updateOne` or `deleteMany` makes. False, with
   * nothing done, when it needs the store: the caller then makes it through `collection()`. A replay makes most of its
   * writes so (docs/design.md, "Replay").
   */
  applyHeld(collection: string, id: string, update: Update | null, upsert: boolean): boolean {
    if (!this.cached.has(collection)) return false;
    const c = this.collection(collection) as unknown as WriteBackCollection<Doc>;
    return update ? c.updateHeld(id, update, upsert) : c.deleteHeld(id);
  }

  /** Writes back every pending change. */
  async flush(): Promise<void> {
    for (const c of this.held.values()) await c.flush();
  }

  /** Forgets everything held, written back or not: the store's transaction that held the writes was rolled back. */
  discard(): void {
    for (const c of this.held.values()) c.discard();
  }

  /**
   * Keeps at most `max` documents a collection, the last written or read, for the next unit of work: only once the
   * store's transaction that held the writes is committed, so that what is held is what the store holds.
   */
  settle(max: number): void {
    for (const c of this.held.values()) c.settle(max);
  }

  async flushDeletions(): Promise<void> {
    await this.flush();
    await this.inner.flushDeletions();
  }

  /** The cache is the caller's, not the store's: closing it writes back what it holds and leaves the store open. */
  async close(): Promise<void> {
    await this.flush();
  }
}
