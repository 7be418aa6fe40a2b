import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type Database from 'better-sqlite3';
import { walCheckpointPages } from './sqlite-wal.js';

/**
 * When the background checkpointer starts, and how often it hears of a database's commits. A process that commits
 * little (a CLI command, most tests) never starts it: the log's own checkpoint at `walCheckpointPages` is enough there.
 */
export interface BackgroundCheckpointOptions {
  /** Commits (group commits, read-model batches) in the process before the worker thread is started. */
  startAfterCommits: number;
  /** Commits of one database between two notes to the worker that it has something to checkpoint. */
  commitsPerNote: number;
  /** The worker's pause after it checkpointed, so the commits that arrive meanwhile are checkpointed together. */
  pauseMs: number;
  /** Checkpoints in a row at most, each copying what was committed while the one before ran. */
  chase: number;
  /**
   * The log's own checkpoint, in pages, while the worker runs: only a bound for when its checkpoints never end
   * between two commits (the log starts over only after one that does), as a checkpoint on the main thread syncs
   * both files however little it has left to copy.
   */
  mainThreadPages: number;
}

/** The longest a store's close waits for the worker to let go of its database. */
const closeWaitMs = 5000;

export const defaultBackgroundCheckpoints: BackgroundCheckpointOptions = {
  startAfterCommits: 100,
  commitsPerNote: 2,
  pauseMs: 200,
  chase: 2,
  mainThreadPages: 16 * walCheckpointPages,
};

/**
 * The worker thread's code, evaluated (CommonJS): a file of its own would need a loader for the TypeScript sources.
 * A connection of its own per database, a PASSIVE checkpoint of each database it heard of, at most one per pause:
 * PASSIVE neither waits for nor blocks the writers and readers of the main thread, and a checkpoint that ends with
 * every frame copied lets the main thread's next write start the log over (docs/design.md, "Events and read models").
 */
const workerSource = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const open = new Map();
let timer = null;
function run() {
  timer = null;
  for (const [file, c] of open) {
    if (!c.dirty) continue;
    c.dirty = false;
    // The commits made while a checkpoint ran are left in the log; a few more checkpoints right after it each copy
    // less, until one ends with no commit in between, and the log starts over at the next write.
    for (let chase = 0; chase < workerData.chase; chase++) {
      let result;
      try {
        result = c.db.pragma('wal_checkpoint(PASSIVE)')[0];
      } catch (err) {
        // Another connection's checkpoint or a file gone: the next note tries again, the log's own checkpoint remains.
        break;
      }
      if (result.busy !== 0 || result.log <= 0 || result.checkpointed >= result.log) break;
    }
  }
}
parentPort.on('message', (m) => {
  if (m.close !== undefined) {
    const c = open.get(m.close);
    if (c) c.db.close();
    open.delete(m.close);
    parentPort.postMessage({ closed: m.id });
    return;
  }
  let c = open.get(m.file);
  if (!c) {
    let db;
    try {
      db = new Database(m.file, { fileMustExist: true });
      db.pragma('synchronous = NORMAL');
    } catch (err) {
      return;
    }
    c = { db, dirty: false };
    open.set(m.file, c);
  }
  c.dirty = true;
  timer ??= setTimeout(run, workerData.pauseMs);
});
`;

/**
 * Checkpoints of the embedded stores' write-ahead logs in a worker thread, so the main thread never waits for them.
 * A checkpoint copies the log into the database and syncs both files: 60-150 ms of a thread's time at 4,000 pages on
 * this machine, nearly all of it waiting for the disk, during which no request was served (docs/performance.md,
 * "Checkpoints off the main thread (2026-11-27)"). One worker for every database of the process, started once the
 * process commits often; should it fail, the log's own checkpoint (`walCheckpointPages`) still bounds the log.
 */
export class BackgroundCheckpoints {
  private worker: Worker | null = null;
  private failed = false;
  private commits = 0;
  /** Closes the worker has not confirmed yet, by the id each was sent with. */
  private readonly closing = new Map<number, () => void>();
  private closes = 0;
  private readonly sinceNote = new Map<string, number>();
  /** The connections whose own checkpoint waits for `mainThreadPages`, put back should the worker fail. */
  private readonly raised = new Set<Database.Database>();

  constructor(private readonly options: BackgroundCheckpointOptions = defaultBackgroundCheckpoints) {}

  /** A commit to `db` (an on-disk database in WAL mode) was made. */
  committed(db: Database.Database): void {
    if (this.failed) return;
    if (this.worker === null) {
      this.commits += 1;
      if (this.commits < this.options.startAfterCommits) return;
      this.start();
      if (this.worker === null) return;
    }
    const file = db.name;
    if (!this.raised.has(db)) {
      this.raised.add(db);
      db.pragma(`wal_autocheckpoint = ${this.options.mainThreadPages}`);
    }
    const n = (this.sinceNote.get(file) ?? 0) + 1;
    if (n < this.options.commitsPerNote) {
      this.sinceNote.set(file, n);
      return;
    }
    this.sinceNote.set(file, 0);
    this.worker!.postMessage({ file });
  }

  /**
   * The database at `file` is being closed: the worker lets go of it first, and the promise resolves once it says it
   * did, so the store's own close is then the last connection (it removes the log) and nothing of this process opens
   * the files afterwards (a directory removed right after the close could fail, a file made again in it). Until then
   * the thread also keeps the process alive: a process that ended meanwhile would stop the thread in the middle of its
   * SQLite calls, and one of them failing then (the files already removed) aborted the whole process in the driver (a
   * V8 fatal error, seen once in CI). Never longer than `closeWaitMs`.
   */
  closed(db: Database.Database): Promise<void> {
    this.raised.delete(db);
    this.sinceNote.delete(db.name);
    const worker = this.worker;
    if (worker === null) return Promise.resolve();
    if (this.closing.size === 0) worker.ref();
    const id = ++this.closes;
    return new Promise<void>((resolve) => {
      const timer = setTimeout(() => this.release(id), closeWaitMs);
      this.closing.set(id, () => {
        clearTimeout(timer);
        resolve();
      });
      worker.postMessage({ close: db.name, id });
    });
  }

  /** The worker let go (or will not say so in time): the close goes on; the thread is unref'd once none waits. */
  private release(id: number): void {
    const done = this.closing.get(id);
    if (!done) return;
    this.closing.delete(id);
    done();
    if (this.closing.size === 0) this.worker?.unref();
  }

  /** Whether the worker thread runs (for the benchmarks' and tests' reports). */
  get running(): boolean {
    return this.worker !== null;
  }

  private start(): void {
    try {
      const worker = new Worker(workerSource, {
        eval: true,
        workerData: {
          driver: createRequire(import.meta.url).resolve('better-sqlite3'),
          pauseMs: this.options.pauseMs,
          chase: this.options.chase,
        },
        // Little heap: it holds a few connections and no data.
        resourceLimits: { maxOldGenerationSizeMb: 16, maxYoungGenerationSizeMb: 4 },
      });
      // Never what keeps a finishing process alive (but while it lets go of closed databases, `closed`).
      worker.unref();
      worker.on('message', (m: { closed?: number }) => {
        if (m.closed !== undefined) this.release(m.closed);
      });
      worker.on('error', () => this.stop());
      worker.on('exit', () => this.stop());
      this.worker = worker;
    } catch {
      this.stop();
    }
  }

  private stop(): void {
    this.failed = true;
    this.worker = null;
    for (const id of [...this.closing.keys()]) this.release(id);
    for (const db of this.raised) if (db.open) db.pragma(`wal_autocheckpoint = ${walCheckpointPages}`);
    this.raised.clear();
  }
}

/** The process's one checkpointer, which both embedded stores note their commits to. */
export const backgroundCheckpoints = new BackgroundCheckpoints();
