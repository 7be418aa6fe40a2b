import type Database from 'better-sqlite3';

/**
 * Pages the write-ahead log may hold before a commit copies them into the database (SQLite's default is 1,000, 4 MB).
 * A checkpoint writes each page once however often the log holds it, and syncs both files: under a stream of small
 * commits, four times the log is a quarter of the syncs and fewer copies of the pages every commit touches (the last
 * leaf of each index). What a commit guarantees does not change (docs/design.md, "Events and read models").
 */
export const walCheckpointPages = 4000;

/**
 * SQLite's page cache of each connection, in KiB. better-sqlite3 builds SQLite with 16,000 (SQLite's own default is
 * 2,000); the cache lives in the process's malloc heap, and a served process holds three connections (events, read
 * models, live deltas), so RSS grew with the files by up to 48 MB for pages the operating system's page cache serves
 * anyway, at a read call each (docs/performance.md, "Memory through a long life"). SQLite's own 2,000, not less: at
 * 256 a creation made five times the read calls and cost more CPU (docs/performance.md, "After the merge: the page
 * cache at SQLite's default").
 */
export const pageCacheKib = 2000;

/**
 * The size, in bytes, a log file is cut back to when the log starts over: under a stream of writes it grows to the
 * main thread's bound of the background checkpoints (docs/design.md, "Events and read models"), and stayed that size.
 */
export const walFileKeptBytes = 64 * 1024 * 1024;

/**
 * The settings both embedded stores open their database with: WAL, commits synced at checkpoints, 5 s for a lock,
 * a small page cache.
 */
export function useWal(db: Database.Database): void {
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('busy_timeout = 5000');
  db.pragma(`journal_size_limit = ${walFileKeptBytes}`);
  db.pragma(`wal_autocheckpoint = ${walCheckpointPages}`);
  db.pragma(`cache_size = -${pageCacheKib}`);
}

/** How long `emptyWal` keeps trying, and its pause between attempts. */
const emptyWalTimeoutMs = 30_000;
const emptyWalRetryMs = 20;

/**
 * Copies the whole write-ahead log into the database and truncates it to nothing, so no frame of a deleted row stays
 * on disk (docs/design.md, "Workspace erasure"). A TRUNCATE checkpoint reports `busy` without an error while another
 * connection checkpoints (the background worker) or reads from the log, and leaves the log as it was; it throws while
 * this connection's own transaction is open. So each attempt takes no lock it would wait for (the main thread never
 * blocks on another connection), `attempt` runs it when this connection is outside a transaction, and it is retried
 * until the log is empty or `timeoutMs` has passed, which throws: the caller's work is not done.
 */
export async function emptyWal(
  db: Database.Database,
  attempt: (truncate: () => boolean) => Promise<boolean> = async (truncate) => truncate(),
  timeoutMs = emptyWalTimeoutMs,
): Promise<void> {
  const truncate = (): boolean => {
    const wait = db.pragma('busy_timeout', { simple: true }) as number;
    db.pragma('busy_timeout = 0');
    try {
      const [result] = db.pragma('wal_checkpoint(TRUNCATE)') as Array<{ busy: number; log: number }>;
      return result !== undefined && result.busy === 0 && result.log === 0;
    } finally {
      db.pragma(`busy_timeout = ${wait}`);
    }
  };
  const deadline = Date.now() + timeoutMs;
  while (!(await attempt(truncate))) {
    if (Date.now() >= deadline)
      throw new Error(`the write-ahead log of ${db.name} could not be emptied in ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, emptyWalRetryMs));
  }
}
