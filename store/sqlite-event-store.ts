import Database from 'better-sqlite3';
import { Observable, Subject } from 'rxjs';
import {
  StreamDeletedError,
  WrongExpectedRevisionError,
  type AllFilter,
  type AppendResult,
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
import { payloadJson } from './payload-json.js';
import { uuid7 } from './uuid7.js';
import { backgroundCheckpoints } from './sqlite-checkpoints.js';
import { emptyWal, useWal } from './sqlite-wal.js';
import { addCategoryIndex, byCategorySql, categoriesOf, eventColumns } from './sqlite-event-category.js';

interface Row {
  position: number;
  id: string;
  stream_id: string;
  revision: number;
  type: string;
  data: string;
  metadata: string;
}

const pollMs = 200;
const pageSize = 500;

type Param = string | number;

const toPosition = (n: number) => String(n) as Position;
const fromPosition = (p: Position | null | undefined) => (p === null || p === undefined ? 0 : Number(p));

function toRecorded(r: Row): RecordedEvent {
  return {
    id: r.id,
    streamId: r.stream_id,
    revision: r.revision,
    position: toPosition(r.position),
    type: r.type,
    data: JSON.parse(r.data) as unknown,
    metadata: JSON.parse(r.metadata) as RecordedEvent['metadata'],
  };
}

function matches(filter: AllFilter | undefined, e: { streamId: string; type: string }): boolean {
  if (!filter) return true;
  if (filter.streamPrefixes && !filter.streamPrefixes.some((p) => e.streamId.startsWith(p))) return false;
  if (filter.eventTypes && !filter.eventTypes.includes(e.type)) return false;
  return true;
}

/** An append waiting for the group commit, its events already serialised (later changes to them do not count). */
interface PendingAppend {
  streamId: string;
  events: Array<{ id: string; type: string; data: string; metadata: string }>;
  expected: ExpectedRevision;
  resolve: (result: AppendResult) => void;
  reject: (err: unknown) => void;
}

/** How many appends one transaction takes at most, so a flood of them does not hold the write lock for long. */
const maxGroup = 500;

/**
 * The embedded event store: one table, a global autoincrement position, a unique (stream, revision). Appends made in
 * the same turn of the event loop are written together (group commit): one IMMEDIATE transaction for all of them,
 * each append in a savepoint of its own with its own expected-revision check, so a conflict or a failure refuses that
 * append alone. The check and the insert stay atomic even across processes, an append is acknowledged only once its
 * transaction is committed, and a process killed before that loses the whole group, never part of one append
 * (docs/design.md, "Events and read models").
 */
export class SqliteEventStore implements EventStore {
  readonly kind = 'sqlite';
  readonly deletesFromLogAtOnce = true;
  private readonly db: Database.Database;
  private readonly appended = new Subject<void>();
  private readonly closed = new Subject<void>();
  private subscribers = 0;
  /** Set once `close` began: appends are refused while it waits for the checkpoint worker. */
  private closing = false;
  private pollTimer: NodeJS.Timeout | null = null;
  private lastSeen = 0;
  private readonly stmt: {
    last: Database.Statement<[string], { revision: number }>;
    insert: Database.Statement<[string, string, number, string, string, string]>;
    stream: Database.Statement<[string, number, number], Row>;
    head: Database.Statement<[], { p: number | null }>;
    all: Database.Statement<[number, number], Row>;
    isDeleted: Database.Statement<[string], { one: number }>;
  };
  /** One append, in a savepoint when it runs inside the group's transaction. */
  private readonly appendOne: Database.Transaction<(a: PendingAppend) => AppendResult>;
  private readonly groupTx: Database.Transaction<(group: PendingAppend[]) => Array<AppendResult | { failed: unknown }>>;
  private readonly deleteTx: (streamId: string) => void;
  /** `readAll` statements with a filter, by the number of prefixes and types they take. */
  private readonly filtered = new Map<string, Database.Statement<Param[], Row>>();
  private pending: PendingAppend[] = [];
  private flushQueued: NodeJS.Immediate | null = null;

  constructor(file: string) {
    this.db = new Database(file);
    useWal(this.db);
    // A deleted stream is deleted for good: its pages are overwritten, not left in the free list (only deletes pay).
    this.db.pragma('secure_delete = ON');
    this.db.exec(`
      CREATE TABLE IF NOT EXISTS events (
        position INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        stream_id TEXT NOT NULL,
        revision INTEGER NOT NULL,
        type TEXT NOT NULL,
        data TEXT NOT NULL,
        metadata TEXT NOT NULL,
        UNIQUE (stream_id, revision)
      );
      CREATE INDEX IF NOT EXISTS events_type ON events (type, position);
      CREATE TABLE IF NOT EXISTS deleted_streams (stream_id TEXT PRIMARY KEY, deleted_at INTEGER NOT NULL);
    `);
    addCategoryIndex(this.db);
    this.stmt = {
      last: this.db.prepare('SELECT max(revision) AS revision FROM events WHERE stream_id = ?'),
      insert: this.db.prepare(
        'INSERT INTO events (id, stream_id, revision, type, data, metadata) VALUES (?, ?, ?, ?, ?, ?)',
      ),
      stream: this.db.prepare(
        `SELECT ${eventColumns} FROM events WHERE stream_id = ? AND revision >= ? ORDER BY revision LIMIT ?`,
      ),
      head: this.db.prepare('SELECT max(position) AS p FROM events'),
      all: this.db.prepare(`SELECT ${eventColumns} FROM events WHERE position > ? ORDER BY position LIMIT ?`),
      isDeleted: this.db.prepare('SELECT 1 AS one FROM deleted_streams WHERE stream_id = ?'),
    };
    this.appendOne = this.db.transaction((a: PendingAppend): AppendResult => this.writeAppend(a));
    this.groupTx = this.db.transaction((group: PendingAppend[]) =>
      group.map((a) => {
        try {
          // An append of one event writes with one statement, which SQLite makes atomic by itself; a savepoint
          // around it would copy every page it touches into the sub-journal first (docs/performance.md, "Job
          // creations through the API: CPU per creation").
          return a.events.length === 1 ? this.writeAppend(a) : this.appendOne(a);
        } catch (failed) {
          // The append's savepoint was rolled back and the group goes on, unless SQLite ended the transaction itself
          // (a full disk, an I/O error): then nothing of the group may be acknowledged.
          if (!this.db.inTransaction) throw failed;
          return { failed };
        }
      }),
    );
    const removeEvents = this.db.prepare<[string]>('DELETE FROM events WHERE stream_id = ?');
    const closeId = this.db.prepare<[string, number]>(
      'INSERT OR IGNORE INTO deleted_streams (stream_id, deleted_at) VALUES (?, ?)',
    );
    const del = this.db.transaction((streamId: string) => {
      removeEvents.run(streamId);
      closeId.run(streamId, Date.now());
    });
    this.deleteTx = (s) => del.immediate(s);
    this.lastSeen = this.stmt.head.get()?.p ?? 0;
  }

  /** The checks and inserts of one append, inside the group's transaction. */
  private writeAppend({ streamId, events, expected }: PendingAppend): AppendResult {
    if (this.stmt.isDeleted.get(streamId)) throw new StreamDeletedError(streamId);
    const last = this.stmt.last.get(streamId)?.revision;
    const actual = last === null || last === undefined ? -1 : last;
    if (expected === 'no_stream' ? actual !== -1 : expected !== 'any' && expected !== actual) {
      throw new WrongExpectedRevisionError(streamId, expected, actual);
    }
    let revision = actual;
    let position = 0;
    for (const e of events) {
      revision += 1;
      position = Number(this.stmt.insert.run(e.id, streamId, revision, e.type, e.data, e.metadata).lastInsertRowid);
    }
    return { revision, position: toPosition(position) };
  }

  /**
   * Queued for the group commit at the end of this turn of the event loop (`setImmediate`): requests read from the
   * sockets in one turn append together. The events are serialised now, so a payload that cannot be fails its own
   * append at once and a caller changing its objects afterwards changes nothing written.
   */
  append(streamId: string, events: NewEvent[], expected: ExpectedRevision): Promise<AppendResult> {
    if (events.length === 0) return Promise.reject(new Error('append needs at least one event'));
    if (!this.db.open || this.closing) return Promise.reject(new Error('the event store is closed'));
    let serialised: PendingAppend['events'];
    try {
      serialised = events.map((e) => ({
        // Time-ordered, so the unique index on ids grows at its right edge: random ids put each event of a group
        // commit on a page of its own, which cost a creation more written pages than its event (docs/performance.md,
        // "Fewer pages, fewer calls (2026-11-27)").
        id: e.id ?? uuid7(),
        type: e.type,
        data: payloadJson(e.data),
        metadata: JSON.stringify(e.metadata),
      }));
    } catch (err) {
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
    return new Promise<AppendResult>((resolve, reject) => {
      this.pending.push({ streamId, events: serialised, expected, resolve, reject });
      this.flushQueued ??= setImmediate(() => this.commitPending());
    });
  }

  /** Writes every queued append, `maxGroup` to a transaction, then answers each caller and wakes the subscribers. */
  private commitPending(): void {
    if (this.flushQueued) clearImmediate(this.flushQueued);
    this.flushQueued = null;
    const queued = this.pending;
    this.pending = [];
    const answers: Array<() => void> = [];
    for (let i = 0; i < queued.length; i += maxGroup) {
      const group = queued.slice(i, i + maxGroup);
      let results: Array<AppendResult | { failed: unknown }>;
      try {
        results = this.groupTx.immediate(group);
      } catch (err) {
        // Nothing of this group was written (the lock was not had within busy_timeout, the commit failed).
        for (const a of group) answers.push(() => a.reject(err));
        continue;
      }
      group.forEach((a, k) => {
        const r = results[k]!;
        if ('failed' in r) answers.push(() => a.reject(r.failed));
        else {
          this.lastSeen = Math.max(this.lastSeen, Number(r.position));
          answers.push(() => a.resolve(r));
        }
      });
    }
    if (!this.db.memory) backgroundCheckpoints.committed(this.db);
    for (const answer of answers) answer();
    this.appended.next();
  }

  async readStream(streamId: string, options: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
    return this.stmt.stream.all(streamId, options.fromRevision ?? 0, options.limit ?? -1).map(toRecorded);
  }

  async readAll(options: ReadAllOptions = {}): Promise<RecordedEvent[]> {
    const limit = options.limit ?? Infinity;
    const out: RecordedEvent[] = [];
    let after = fromPosition(options.after);
    const read = this.reader(options.filter);
    while (out.length < limit) {
      const rows = read(after, Math.min(pageSize, limit - out.length));
      for (const r of rows) out.push(toRecorded(r));
      if (rows.length < pageSize) break;
      after = rows[rows.length - 1]!.position;
    }
    return out;
  }

  /**
   * Reads rows after a position, the filter applied by SQLite: the rows it leaves out (a replay passes over every
   * run's timeline) are neither copied into JavaScript nor parsed. Prefixes that are whole categories (a replay's)
   * are read through the category index, which skips the rows of other categories without reading them; any other
   * prefix is matched on the stream id, where `instr(x, p) = 1` is exactly "x starts with p".
   */
  private reader(filter: AllFilter | undefined): (after: number, limit: number) => Row[] {
    const prefixes = filter?.streamPrefixes;
    const types = filter?.eventTypes;
    if (!prefixes && !types) return (after, limit) => this.stmt.all.all(after, limit);
    if (prefixes?.length === 0 || types?.length === 0) return () => [];
    const categories = prefixes && !types ? categoriesOf(prefixes) : null;
    const shape = categories ? `c${categories.length}` : `${prefixes?.length ?? 0}:${types?.length ?? 0}`;
    let statement = this.filtered.get(shape);
    if (!statement) {
      const conditions = [
        ...(prefixes ? [`(${prefixes.map(() => 'instr(stream_id, ?) = 1').join(' OR ')})`] : []),
        ...(types ? [`type IN (${types.map(() => '?').join(', ')})`] : []),
      ];
      statement = this.db.prepare<Param[], Row>(
        categories
          ? byCategorySql(categories.length)
          : `SELECT ${eventColumns} FROM events WHERE position > ? AND ${conditions.join(' AND ')} ORDER BY position LIMIT ?`,
      );
      this.filtered.set(shape, statement);
    }
    const bound = categories ?? [...(prefixes ?? []), ...(types ?? [])];
    return (after, limit) => statement.all(after, ...bound, limit);
  }

  async deleteStream(streamId: string): Promise<void> {
    // Appends asked for before the deletion are written before it, as they would have been one by one.
    if (this.pending.length > 0) this.commitPending();
    this.deleteTx(streamId);
  }

  subscribeStream(streamId: string, options: SubscribeStreamOptions = {}): Observable<RecordedEvent> {
    let next = options.fromRevision ?? 0;
    return this.follow(() => {
      const rows = this.stmt.stream.all(streamId, next, pageSize);
      if (rows.length > 0) next = rows[rows.length - 1]!.revision + 1;
      return { events: rows.map(toRecorded), more: rows.length === pageSize };
    });
  }

  subscribeAll(options: SubscribeAllOptions = {}): Observable<RecordedEvent> {
    let after = fromPosition(options.after);
    return this.follow(() => {
      const rows = this.stmt.all.all(after, pageSize);
      if (rows.length > 0) after = rows[rows.length - 1]!.position;
      const events = rows
        .filter((r) => matches(options.filter, { streamId: r.stream_id, type: r.type }))
        .map(toRecorded);
      return { events, more: rows.length === pageSize };
    });
  }

  /**
   * Catch-up and live are one loop: read from where the subscriber is, deliver, and read again whenever an append
   * is signalled. Reading by position/revision cursor means nothing is skipped and nothing is delivered twice.
   */
  private follow(readNext: () => { events: RecordedEvent[]; more: boolean }): Observable<RecordedEvent> {
    return new Observable<RecordedEvent>((subscriber) => {
      let active = true;
      let pending = false;
      let running = false;
      const pump = () => {
        if (!active) return;
        if (running) {
          pending = true;
          return;
        }
        running = true;
        try {
          do {
            pending = false;
            for (;;) {
              const { events, more } = readNext();
              for (const e of events) {
                if (!active) return;
                subscriber.next(e);
              }
              if (!more) break;
            }
          } while (pending && active);
        } catch (err) {
          subscriber.error(err);
        } finally {
          running = false;
        }
      };
      const sub = this.appended.subscribe(() => queueMicrotask(pump));
      const end = this.closed.subscribe(() => subscriber.complete());
      this.subscribers += 1;
      this.ensurePolling();
      queueMicrotask(pump);
      return () => {
        active = false;
        sub.unsubscribe();
        end.unsubscribe();
        this.subscribers -= 1;
        if (this.subscribers === 0 && this.pollTimer) {
          clearInterval(this.pollTimer);
          this.pollTimer = null;
        }
      };
    });
  }

  /** Another process may append to the same file; a cheap poll of the head position notices it. */
  private ensurePolling(): void {
    if (this.pollTimer) return;
    this.pollTimer = setInterval(() => {
      const head = this.stmt.head.get()?.p ?? 0;
      if (head > this.lastSeen) {
        this.lastSeen = head;
        this.appended.next();
      }
    }, pollMs);
    this.pollTimer.unref();
  }

  comparePositions(a: Position, b: Position): number {
    return Number(a) - Number(b);
  }

  async headPosition(): Promise<Position | null> {
    const p = this.stmt.head.get()?.p;
    return p === null || p === undefined ? null : toPosition(p);
  }

  async flushDeletions(): Promise<void> {
    await emptyWal(this.db);
  }

  /**
   * The positions after `after` up to the head: the events that follow, and the ones a deleted stream took with it.
   * Read from the primary key's last entry, where counting the rows would read the whole table.
   */
  async countAfter(after: Position | null): Promise<number> {
    return Math.max(0, (this.stmt.head.get()?.p ?? 0) - fromPosition(after));
  }

  async close(): Promise<void> {
    if (!this.db.open || this.closing) return;
    // Appends still queued are written: their callers are owed an answer.
    if (this.pending.length > 0) this.commitPending();
    if (this.pollTimer) clearInterval(this.pollTimer);
    this.pollTimer = null;
    this.closed.next();
    this.closing = true;
    if (!this.db.memory) await backgroundCheckpoints.closed(this.db);
    if (this.db.open) this.db.close();
  }
}

export function openSqliteEventStore(file: string): SqliteEventStore {
  return new SqliteEventStore(file);
}
