import Database from 'better-sqlite3';
import { randomUUID } from 'node:crypto';
import {
  DuplicateKeyError,
  type Collection,
  type CountOptions,
  type Doc,
  type DocValue,
  type DocumentStore,
  byIdOnly,
  type FieldCondition,
  type Filter,
  type FindOptions,
  type IndexOptions,
  type Search,
  type Sort,
  type Update,
  type UpdateOptions,
  type UpdateResult,
} from './document-store.js';
import { applyUpdateShared, documentFromFilter } from './update-ops.js';
import { backgroundCheckpoints } from './sqlite-checkpoints.js';
import { emptyWal, useWal } from './sqlite-wal.js';

type Param = string | number | null;
interface Sql {
  sql: string;
  params: Param[];
}

const operatorKeys = new Set(['$eq', '$ne', '$gt', '$gte', '$lt', '$lte', '$in', '$nin', '$exists']);

function jsonPath(field: string): string {
  if (!/^[A-Za-z_$][A-Za-z0-9_$]*(\.[A-Za-z0-9_$]+)*$/.test(field)) throw new Error(`invalid field path: ${field}`);
  return field === '_id' ? '' : `$.${field}`;
}

/** The SQL expression of a field: `_id` is a column, everything else lives in the JSON body. */
function valueExpr(field: string): string {
  return field === '_id' ? 'id' : `json_extract(body, '${jsonPath(field)}')`;
}
function typeExpr(field: string): string {
  return field === '_id' ? `'text'` : `json_type(body, '${jsonPath(field)}')`;
}

function isCondition(v: unknown): v is FieldCondition {
  return (
    v !== null &&
    typeof v === 'object' &&
    !Array.isArray(v) &&
    Object.keys(v).length > 0 &&
    Object.keys(v).every((k) => operatorKeys.has(k))
  );
}

/**
 * Equality as a bare `json_extract(...) = ?` so SQLite answers it from an expression index without reading the
 * row. A field holds one JSON type across documents (the port says so), so no type check is needed: a string
 * never equals a number, and booleans are stored by SQLite's JSON functions as 1 and 0.
 */
function eq(field: string, v: DocValue): Sql {
  const x = valueExpr(field);
  if (v === null) return { sql: `(${x} IS NULL)`, params: [] };
  if (typeof v === 'boolean') return { sql: `(${x} = ?)`, params: [v ? 1 : 0] };
  if (typeof v === 'number' || typeof v === 'string') return { sql: `(${x} = ?)`, params: [v] };
  return { sql: `(${typeExpr(field)} IN ('array','object') AND ${x} = json(?))`, params: [JSON.stringify(v)] };
}

function compare(field: string, op: '>' | '>=' | '<' | '<=', v: DocValue): Sql {
  const x = valueExpr(field);
  const t = typeExpr(field);
  if (typeof v === 'number') return { sql: `(${t} IN ('integer','real') AND ${x} ${op} ?)`, params: [v] };
  if (typeof v === 'string') return { sql: `(${t} = 'text' AND ${x} ${op} ?)`, params: [v] };
  if (typeof v === 'boolean') return { sql: `(${t} IN ('true','false') AND ${x} ${op} ?)`, params: [v ? 1 : 0] };
  throw new Error(`cannot compare ${field} with ${JSON.stringify(v)}`);
}

const not = (s: Sql): Sql => ({ sql: `(NOT IFNULL(${s.sql}, 0))`, params: s.params });
function anyOf(parts: Sql[], empty: string): Sql {
  if (parts.length === 0) return { sql: empty, params: [] };
  return { sql: `(${parts.map((p) => p.sql).join(' OR ')})`, params: parts.flatMap((p) => p.params) };
}
function allOf(parts: Sql[]): Sql {
  if (parts.length === 0) return { sql: '1', params: [] };
  return { sql: `(${parts.map((p) => p.sql).join(' AND ')})`, params: parts.flatMap((p) => p.params) };
}

function inList(field: string, values: DocValue[]): Sql {
  const scalars = values.filter((v): v is string | number | boolean => v !== null && typeof v !== 'object');
  const others = values.filter((v) => v === null || typeof v === 'object');
  const parts: Sql[] = others.map((v) => eq(field, v));
  if (scalars.length > 0) {
    // One IN list keeps an indexed lookup for the common case of ids and enum values.
    parts.unshift({
      sql: `(${valueExpr(field)} IN (${scalars.map(() => '?').join(',')}))`,
      params: scalars.map((v) => (typeof v === 'boolean' ? (v ? 1 : 0) : v)),
    });
  }
  return anyOf(parts, '0');
}

function condition(field: string, c: FieldCondition): Sql {
  const parts: Sql[] = [];
  if ('$eq' in c) parts.push(eq(field, c.$eq as DocValue));
  if ('$ne' in c) parts.push(not(eq(field, c.$ne as DocValue)));
  if (c.$gt !== undefined) parts.push(compare(field, '>', c.$gt));
  if (c.$gte !== undefined) parts.push(compare(field, '>=', c.$gte));
  if (c.$lt !== undefined) parts.push(compare(field, '<', c.$lt));
  if (c.$lte !== undefined) parts.push(compare(field, '<=', c.$lte));
  if (c.$in) parts.push(inList(field, c.$in));
  if (c.$nin) parts.push(not(inList(field, c.$nin)));
  if (c.$exists !== undefined)
    parts.push({ sql: c.$exists ? `(${typeExpr(field)} IS NOT NULL)` : `(${typeExpr(field)} IS NULL)`, params: [] });
  return allOf(parts);
}

function where(filter: Filter): Sql {
  const parts: Sql[] = [];
  for (const [key, value] of Object.entries(filter)) {
    if (value === undefined) continue;
    if (key === '$and') parts.push(allOf((value as Filter[]).map(where)));
    else if (key === '$or') parts.push(anyOf((value as Filter[]).map(where), '0'));
    else if (key.startsWith('$')) throw new Error(`unsupported operator ${key}`);
    else if (isCondition(value)) parts.push(condition(key, value));
    else parts.push(eq(key, value as DocValue));
  }
  return allOf(parts);
}

/** Case-insensitive literal substring: `instr` has no wildcards, so `%` and `_` need no escaping. */
function searchSql(search: Search | undefined): Sql | null {
  if (!search || search.text === '' || search.fields.length === 0) return null;
  const needle = search.text.toLowerCase();
  return anyOf(
    search.fields.map((f) => ({ sql: `(instr(lower(${valueExpr(f)}), ?) > 0)`, params: [needle] })),
    '0',
  );
}

/** Nulls and missing values last in both directions, matching an index built on the same expressions. */
function orderBy(sort: Sort | undefined): string {
  if (!sort || sort.length === 0) return '';
  if (sort.length > 4) throw new Error('sort takes at most three keys (plus _id)');
  return (
    ' ORDER BY ' +
    sort
      .map(([f, d]) =>
        f === '_id'
          ? `id ${d === 1 ? 'ASC' : 'DESC'}`
          : `${valueExpr(f)} IS NULL, ${valueExpr(f)} ${d === 1 ? 'ASC' : 'DESC'}`,
      )
      .join(', ')
  );
}

function isUniqueViolation(err: unknown): boolean {
  const code = (err as { code?: string }).code;
  return code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

/**
 * The JSON text of the document an upsert by `_id` inserts, when the update is top-level `$set`s alone: `_id` first,
 * then the fields set, in their order, exactly what `applyUpdateShared` builds and `JSON.stringify` writes (its copy
 * of each value serialises as the value itself does). Null when the update needs the general path: other operators, a
 * path, `_id` or `__proto__` set, or a key JavaScript orders before `_id` (an integer-like one).
 */
function insertedText(id: string, update: Update): string | null {
  const sets = update.$set;
  if (!sets) return null;
  for (const k in update) if (k !== '$set') return null;
  for (const k in sets) {
    const first = k.charCodeAt(0);
    if (k === '_id' || k === '__proto__' || k.includes('.') || (first >= 48 && first <= 57)) return null;
  }
  const fields = JSON.stringify(sets);
  // Nothing but undefined values (or what JSON drops, a function) leaves `{}`: the document is its id alone.
  return fields.length > 2 ? `{"_id":${JSON.stringify(id)},${fields.slice(1)}` : `{"_id":${JSON.stringify(id)}}`;
}

class SqliteCollection<T extends Doc> implements Collection<T> {
  private readonly table: string;
  private readonly statements = new Map<string, Database.Statement>();
  private readonly saveTx: Database.Transaction<(save: Database.Statement, docs: T[]) => void>;
  private readonly updateTx: Database.Transaction<
    (filter: Filter, update: Update, options: UpdateOptions, limit: number | undefined) => UpdateResult
  >;

  constructor(
    private readonly db: Database.Database,
    readonly name: string,
  ) {
    if (!/^[a-z][a-z0-9_]*$/.test(name)) throw new Error(`invalid collection name: ${name}`);
    this.table = `doc_${name}`;
    db.exec(`CREATE TABLE IF NOT EXISTS ${this.table} (id TEXT PRIMARY KEY, body TEXT NOT NULL)`);
    // Made once: building a transaction function per update cost a replay more than many small updates themselves.
    this.updateTx = db.transaction((f: Filter, u: Update, o: UpdateOptions, l: number | undefined) =>
      this.updateRows(f, u, o, l),
    );
    this.saveTx = db.transaction((save: Database.Statement, docs: T[]) => {
      for (const doc of docs) save.run(doc._id, JSON.stringify(doc));
    });
  }

  /**
   * The statements of a document by its id, what projectors and reads by id use most, kept in fields: looking them up
   * by their text built a new string per call (docs/performance.md, "Job creations through the API: CPU per
   * creation").
   */
  private byIdStatements: {
    body: Database.Statement;
    row: Database.Statement;
    write: Database.Statement;
    insert: Database.Statement;
  } | null = null;

  private get byId() {
    return (this.byIdStatements ??= {
      body: this.prepare(`SELECT body FROM ${this.table} WHERE id = ?`),
      row: this.prepare(`SELECT id, body FROM ${this.table} WHERE id = ?`),
      write: this.prepare(`UPDATE ${this.table} SET body = ? WHERE id = ?`),
      insert: this.prepare(`INSERT INTO ${this.table} (id, body) VALUES (?, ?)`),
    });
  }

  private prepare(sql: string): Database.Statement {
    let s = this.statements.get(sql);
    if (!s) {
      s = this.db.prepare(sql);
      this.statements.set(sql, s);
    }
    return s;
  }

  private select(filter: Filter, options: FindOptions): { sql: string; params: Param[] } {
    const w = where(filter);
    const s = searchSql(options.search);
    const cond = s ? allOf([w, s]) : w;
    let sql = `SELECT body FROM ${this.table} WHERE ${cond.sql}${orderBy(options.sort)}`;
    const params = [...cond.params];
    if (options.limit !== undefined || options.skip) {
      sql += ' LIMIT ? OFFSET ?';
      params.push(options.limit ?? -1, options.skip ?? 0);
    }
    return { sql, params };
  }

  async createIndex(keys: Array<[string, 1 | -1]>, options: IndexOptions = {}): Promise<void> {
    // Leading keys serve equality filters. The last key is the sort key: it is indexed as `x IS NULL, x`, the same
    // expressions the nulls-last ORDER BY uses, so a filtered, sorted page is read in index order.
    const cols = keys.flatMap(([f, d], i) => {
      const dir = d === 1 ? 'ASC' : 'DESC';
      if (f === '_id') return [`id ${dir}`];
      const last = i === keys.length - 1;
      return options.unique || !last
        ? [`${valueExpr(f)} ${dir}`]
        : [`${valueExpr(f)} IS NULL`, `${valueExpr(f)} ${dir}`];
    });
    if (!options.unique && !keys.some(([f]) => f === '_id')) cols.push('id');
    const name =
      options.name ??
      `ix_${this.name}_${keys.map(([f, d]) => `${f.replace(/\W/g, '_')}${d === 1 ? '' : '_desc'}`).join('__')}${options.unique ? '_u' : ''}`;
    try {
      this.db.exec(
        `CREATE ${options.unique ? 'UNIQUE ' : ''}INDEX IF NOT EXISTS ${name} ON ${this.table} (${cols.join(', ')})`,
      );
    } catch (err) {
      if (isUniqueViolation(err))
        throw new DuplicateKeyError(this.name, `existing documents violate unique index ${name}`);
      throw err;
    }
  }

  async findOne(filter: Filter, options: Omit<FindOptions, 'limit'> = {}): Promise<T | null> {
    // By id alone (a route reading back what it wrote, a projector's derive): neither the options' copy nor an array.
    if (byIdOnly(filter) && !options.search && !options.skip) {
      const row = this.byId.body.get(filter._id) as { body: string } | undefined;
      return row ? (JSON.parse(row.body) as T) : null;
    }
    const [doc] = await this.find(filter, { ...options, limit: 1 });
    return doc ?? null;
  }

  async find(filter: Filter, options: FindOptions = {}): Promise<T[]> {
    // A document by its id, the most common read of projectors and of a replay's write-back cache: one prepared
    // statement, without building the query.
    if (byIdOnly(filter) && !options.search && !options.skip) {
      const row = this.byId.body.get(filter._id) as { body: string } | undefined;
      return row && options.limit !== 0 ? [JSON.parse(row.body) as T] : [];
    }
    const q = this.select(filter, options);
    return (this.prepare(q.sql).all(...q.params) as Array<{ body: string }>).map((r) => JSON.parse(r.body) as T);
  }

  async count(filter: Filter, options: CountOptions = {}): Promise<number> {
    const w = where(filter);
    const s = searchSql(options.search);
    const cond = s ? allOf([w, s]) : w;
    return (
      this.prepare(`SELECT count(*) AS n FROM ${this.table} WHERE ${cond.sql}`).get(...cond.params) as { n: number }
    ).n;
  }

  async insertOne(doc: T): Promise<void> {
    try {
      this.byId.insert.run(doc._id, JSON.stringify(doc));
    } catch (err) {
      if (isUniqueViolation(err)) throw new DuplicateKeyError(this.name, `_id ${doc._id}`);
      throw err;
    }
  }

  async updateOne(filter: Filter, update: Update, options: UpdateOptions = {}): Promise<UpdateResult> {
    return this.update(filter, update, options, 1);
  }

  async updateMany(filter: Filter, update: Update, options: UpdateOptions = {}): Promise<UpdateResult> {
    return this.update(filter, update, options, undefined);
  }

  /** Updates are applied in JS to the parsed documents, inside one transaction: the operators behave exactly as in MongoDB. */
  private update(filter: Filter, update: Update, options: UpdateOptions, limit: number | undefined): UpdateResult {
    try {
      // Inside a batch, an update of one document writes with one statement, which SQLite makes atomic by itself: a
      // savepoint around it would only copy every page it touches into the sub-journal first, which cost a
      // projected job creation more than its writes (docs/performance.md, "Job creations through the API: CPU per
      // creation").
      if (limit === 1 && this.db.inTransaction) return this.updateRows(filter, update, options, limit);
      return this.updateTx.immediate(filter, update, options, limit);
    } catch (err) {
      if (isUniqueViolation(err)) throw new DuplicateKeyError(this.name, 'a unique index rejected the update');
      throw err;
    }
  }

  /** The read and the write of an update, in the transaction `updateTx` gives them. */
  private updateRows(filter: Filter, update: Update, options: UpdateOptions, limit: number | undefined): UpdateResult {
    let rows: Array<{ id: string; body: string }>;
    if (byIdOnly(filter)) {
      // A document by its id, what projectors update most: one prepared statement, without building the query.
      const row = this.byId.row.get(filter._id) as { id: string; body: string } | undefined;
      if (!row && options.upsert) {
        // A new document by its id (a job's creation): its text is written straight from the update when the update
        // allows, without the document built and copied first.
        const text = insertedText(filter._id, update);
        if (text !== null) {
          this.byId.insert.run(filter._id, text);
          return { matched: 0, modified: 0, upsertedId: filter._id };
        }
      }
      rows = row ? [row] : [];
    } else {
      const w = where(filter);
      rows = this.prepare(`SELECT id, body FROM ${this.table} WHERE ${w.sql}${limit ? ' LIMIT 1' : ''}`).all(
        ...w.params,
      ) as Array<{ id: string; body: string }>;
    }
    const write = this.byId.write;
    let modified = 0;
    for (const row of rows) {
      const before = row.body;
      // The parsed document is this update's own: the operators need not copy it first.
      const after = JSON.stringify(applyUpdateShared(JSON.parse(before) as Doc, update, false));
      if (after !== before) {
        write.run(after, row.id);
        modified += 1;
      }
    }
    if (rows.length === 0 && options.upsert) {
      const base = documentFromFilter(filter);
      const doc = applyUpdateShared(
        { ...base, _id: typeof base._id === 'string' ? base._id : randomUUID() } as Doc,
        update,
        true,
      );
      this.byId.insert.run(doc._id, JSON.stringify(doc));
      return { matched: 0, modified: 0, upsertedId: doc._id };
    }
    return { matched: rows.length, modified, upsertedId: null };
  }

  async deleteMany(filter: Filter): Promise<number> {
    const w = where(filter);
    return this.prepare(`DELETE FROM ${this.table} WHERE ${w.sql}`).run(...w.params).changes;
  }

  async saveMany(docs: T[]): Promise<void> {
    if (docs.length === 0) return;
    const save = this.prepare(
      `INSERT INTO ${this.table} (id, body) VALUES (?, ?) ON CONFLICT(id) DO UPDATE SET body = excluded.body`,
    );
    try {
      this.saveTx.immediate(save, docs);
    } catch (err) {
      if (isUniqueViolation(err)) throw new DuplicateKeyError(this.name, 'a unique index rejected a document');
      throw err;
    }
  }

  async drop(): Promise<void> {
    this.db.exec(`DELETE FROM ${this.table}`);
  }

  async dropIndexes(): Promise<void> {
    const indexes = this.db
      .prepare(`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND sql IS NOT NULL`)
      .all(this.table) as Array<{ name: string }>;
    for (const { name } of indexes) this.db.exec(`DROP INDEX IF EXISTS "${name}"`);
    // Statements prepared against a dropped index are prepared again by SQLite itself; the cache stays valid.
  }
}

export class SqliteDocumentStore implements DocumentStore {
  readonly kind = 'sqlite';
  private readonly db: Database.Database;
  private readonly collections = new Map<string, SqliteCollection<Doc>>();
  /** What waits for the open batch to end (`outsideBatch`). */
  private readonly afterBatch: Array<() => void> = [];

  constructor(file: string) {
    this.db = new Database(file);
    useWal(this.db);
    // Read models hold sealed secrets and a deleted workspace's records: deleted rows are overwritten, not left in
    // free pages (docs/design.md, "Workspace erasure").
    this.db.pragma('secure_delete = ON');
  }

  collection<T extends Doc = Doc>(name: string): Collection<T> {
    let c = this.collections.get(name);
    if (!c) {
      c = new SqliteCollection<Doc>(this.db, name);
      this.collections.set(name, c);
    }
    return c as unknown as Collection<T>;
  }

  /** Waits for the open batch to end: never call it from a batch's own work, which would then wait for itself. */
  async flushDeletions(): Promise<void> {
    await emptyWal(this.db, (truncate) => this.outsideBatch(truncate));
  }

  /**
   * Runs `work` when no batch is open: at once, or right after the open batch ends, before anything else can begin
   * the next (the read models' batches follow each other closely and span awaits).
   */
  private outsideBatch<T>(work: () => T): Promise<T> {
    if (!this.db.inTransaction) return Promise.resolve(work());
    return new Promise<T>((resolve, reject) =>
      this.afterBatch.push(() => {
        try {
          resolve(work());
        } catch (err) {
          reject(err instanceof Error ? err : new Error(String(err)));
        }
      }),
    );
  }

  async batch<T>(work: () => Promise<T>): Promise<T> {
    // Nested batches are part of the outer one; the collections' own transactions become savepoints inside it.
    if (this.db.inTransaction) return work();
    this.db.exec('BEGIN IMMEDIATE');
    try {
      const result = await work();
      this.db.exec('COMMIT');
      if (!this.db.memory) backgroundCheckpoints.committed(this.db);
      return result;
    } catch (err) {
      if (this.db.inTransaction) this.db.exec('ROLLBACK');
      throw err;
    } finally {
      for (const waiting of this.afterBatch.splice(0)) waiting();
    }
  }

  async close(): Promise<void> {
    if (!this.db.open) return;
    if (!this.db.memory) await backgroundCheckpoints.closed(this.db);
    if (this.db.open) this.db.close();
  }
}

export function openSqliteDocumentStore(file: string): SqliteDocumentStore {
  return new SqliteDocumentStore(file);
}
