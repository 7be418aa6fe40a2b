/**
 * The document port: an explicit subset of MongoDB. Both adapters must answer every query of the subset
 * identically; anything outside it is not used by projectors or queries.
 */

export type Scalar = string | number | boolean | null;
export type DocValue = Scalar | DocValue[] | { [key: string]: DocValue | undefined };

/** Every document has a string `_id`. Field paths may be dotted (`lastRun.status`). */
export interface Doc {
  _id: string;
  [key: string]: DocValue | undefined;
}

export interface FieldCondition {
  $eq?: DocValue;
  $ne?: DocValue;
  $gt?: Scalar;
  $gte?: Scalar;
  $lt?: Scalar;
  $lte?: Scalar;
  $in?: DocValue[];
  $nin?: DocValue[];
  $exists?: boolean;
}

/**
 * A filter maps field paths to a literal (equality) or a condition, plus `$and` / `$or` of filters.
 * Rules of the subset: a field holds one JSON type across the documents of a collection (so adapters need not
 * tell `true` from `1`); equality compares whole values (array fields are not searched element by element);
 * `null` matches null or missing; `$ne` and `$nin` also match missing fields.
 */
export interface Filter {
  $and?: Filter[];
  $or?: Filter[];
  [field: string]: DocValue | FieldCondition | Filter[] | undefined;
}

/** Whether a filter names one document by a string `_id` and nothing else: the writes and reads stores make fastest. */
export function byIdOnly(filter: Filter): filter is { _id: string } {
  if (typeof filter._id !== 'string') return false;
  for (const k in filter) if (k !== '_id') return false;
  return true;
}

export interface Update {
  $set?: Record<string, DocValue>;
  $unset?: Record<string, true | 1 | ''>;
  $inc?: Record<string, number>;
  /** Appends one value to an array field (created when missing). */
  $push?: Record<string, DocValue>;
  /** Applied only when the update inserts a new document (upsert). */
  $setOnInsert?: Record<string, DocValue>;
}

/** Sort keys in order, at most three; 1 ascending, -1 descending. Nulls and missing values sort last either way. */
export type Sort = Array<[field: string, direction: 1 | -1]>;

/** Case-insensitive literal substring search: matches when any field contains `text` (`%` and `_` are literal). */
export interface Search {
  fields: string[];
  text: string;
}

export interface FindOptions {
  sort?: Sort;
  skip?: number;
  limit?: number;
  search?: Search;
}

export interface CountOptions {
  search?: Search;
}

export interface UpdateOptions {
  upsert?: boolean;
}

export interface UpdateResult {
  matched: number;
  modified: number;
  /** `_id` of the inserted document when an upsert inserted one. */
  upsertedId: string | null;
}

export interface IndexOptions {
  unique?: boolean;
  name?: string;
}

export interface Collection<T extends Doc = Doc> {
  readonly name: string;
  /** Leading keys serve equality filters, the last one sorting: list indexes end with their sort key. */
  createIndex(keys: Array<[field: string, direction: 1 | -1]>, options?: IndexOptions): Promise<void>;
  findOne(filter: Filter, options?: Omit<FindOptions, 'limit'>): Promise<T | null>;
  find(filter: Filter, options?: FindOptions): Promise<T[]>;
  count(filter: Filter, options?: CountOptions): Promise<number>;
  /** Inserts a whole document. Throws `DuplicateKeyError` when `_id` or a unique index collides. */
  insertOne(doc: T): Promise<void>;
  /**
   * Updates the first matching document. With `upsert` and no match, inserts a document built from the filter's
   * equality fields, `$setOnInsert` and the update.
   */
  updateOne(filter: Filter, update: Update, options?: UpdateOptions): Promise<UpdateResult>;
  updateMany(filter: Filter, update: Update, options?: UpdateOptions): Promise<UpdateResult>;
  deleteMany(filter: Filter): Promise<number>;
  /**
   * Writes whole documents by `_id`, inserting the missing ones and replacing the others, as a write-back cache
   * flushes them (docs/design.md, "Replay"). Throws `DuplicateKeyError` when a unique index other than `_id` collides.
   */
  saveMany(docs: T[]): Promise<void>;
  /** Removes every document (used by projection rebuilds). */
  drop(): Promise<void>;
  /** Removes every index but the one on `_id`: a rebuild builds the others after its replay. */
  dropIndexes(): Promise<void>;
}

export interface DocumentStore {
  /** `sqlite` or `mongodb`. */
  readonly kind: string;
  collection<T extends Doc = Doc>(name: string): Collection<T>;
  /**
   * Makes the deletions so far leave every copy the store keeps on its own disk: SQLite checkpoints its write-ahead
   * log into the database file and truncates it, so a deleted record's old pages are not left in the log. Nothing to
   * do for a server database, whose own clean-up an operator runs (docs/events.md, "Deleting a stream").
   */
  flushDeletions(): Promise<void>;
  /**
   * Runs `work` with every write of it in one transaction, committed when it resolves and rolled back when it
   * throws, where the adapter has such transactions (SQLite); without it the writes go one by one. Only for work that
   * owns the store while it runs (a rebuild, a batch of the live projection): other writes the process makes
   * meanwhile join the transaction (docs/design.md, "Replay" and "Events and read models").
   */
  batch?<T>(work: () => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

export class DuplicateKeyError extends Error {
  constructor(
    readonly collection: string,
    detail: string,
  ) {
    super(`duplicate key in ${collection}: ${detail}`);
    this.name = 'DuplicateKeyError';
  }
}
