import assert from 'node:assert/strict';
import {
  closeSync,
  existsSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readlinkSync,
  readSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import type { Worker } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { waitFor } from '../wait.js';
import { BackgroundCheckpoints, backgroundCheckpoints } from '../../store/sqlite-checkpoints.js';
import { openSqliteEventStore } from '../../store/sqlite-event-store.js';
import { openSqliteDocumentStore } from '../../store/sqlite-document-store.js';
import { useWal, walCheckpointPages, walFileKeptBytes } from '../../store/sqlite-wal.js';
import { systemMeta } from '../engine-fixtures.js';

const dir = mkdtempSync(join(tmpdir(), 'svc-checkpoints-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/**
 * The log's length and how much of it is copied into the database, from the WAL index (SQLite's documented file
 * format: the header's mxFrame at byte 16, the checkpoint's nBackfill at byte 96, both in the machine's byte order).
 */
function walIndex(file: string): { frames: number; backfilled: number } {
  const b = Buffer.alloc(100);
  const fd = openSync(`${file}-shm`, 'r');
  try {
    readSync(fd, b, 0, 100, 0);
  } finally {
    closeSync(fd);
  }
  return { frames: b.readUInt32LE(16), backfilled: b.readUInt32LE(96) };
}

/**
 * A WAL database of one table, its checkpointer made with `options`, and a commit of `rows` rows of `bodySize`
 * characters that tells the checkpointer of itself.
 */
function loggedTable(
  name: string,
  rows: number,
  bodySize: number,
  options: ConstructorParameters<typeof BackgroundCheckpoints>[0],
) {
  const file = join(dir, name);
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma(`wal_autocheckpoint = ${walCheckpointPages}`);
  db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT NOT NULL)');
  const insert = db.prepare('INSERT INTO t (body) VALUES (?)');
  const checkpoints = new BackgroundCheckpoints(options);
  const commit = () => {
    db.transaction(() => {
      for (let i = 0; i < rows; i++) insert.run('x'.repeat(bodySize));
    }).immediate();
    checkpoints.committed(db);
  };
  return { file, db, checkpoints, commit };
}

describe('sqlite: checkpoints off the main thread (docs/design.md, "Events and read models")', () => {
  it('copies the log in its worker and lets the next write start it over, with nothing lost', async () => {
    const { file, db, checkpoints, commit } = loggedTable('raw.db', 20, 1000, {
      startAfterCommits: 3,
      commitsPerNote: 1,
      pauseMs: 1,
      chase: 2,
      mainThreadPages: 50_000,
    });
    try {
      for (let i = 0; i < 2; i++) commit();
      assert.equal(checkpoints.running, false, 'a process that commits little starts no thread');
      commit();
      assert.equal(checkpoints.running, true);
      // The main thread's own checkpoint is now only a distant bound.
      assert.equal(db.pragma('wal_autocheckpoint', { simple: true }), 50_000);
      for (let round = 0; round < 3; round++) {
        for (let i = 0; i < 10; i++) commit();
        const before = await waitFor('the worker to copy the whole log', () => {
          const w = walIndex(file);
          return w.frames > 0 && w.backfilled === w.frames && w;
        });
        commit();
        const restarted = walIndex(file);
        assert.ok(restarted.frames < before.frames, `the log started over (${before.frames} → ${restarted.frames})`);
      }
      assert.deepEqual(db.prepare('SELECT count(*) AS n FROM t').get(), { n: 720 });
    } finally {
      await checkpoints.closed(db);
      db.close();
    }
    const again = new Database(file);
    try {
      assert.equal(again.pragma('integrity_check', { simple: true }), 'ok');
      assert.deepEqual(again.prepare('SELECT count(*) AS n FROM t').get(), { n: 720 });
    } finally {
      again.close();
    }
  });

  it('leaves the log to its own checkpoint at 4,000 pages again once the worker is gone, and starts no other', async () => {
    // About 50 pages a commit.
    const { file, db, checkpoints, commit } = loggedTable('fallback.db', 50, 3500, {
      startAfterCommits: 1,
      commitsPerNote: 1,
      // Longer than the test: the worker never copies anything before it is gone.
      pauseMs: 600_000,
      chase: 2,
      mainThreadPages: 50_000,
    });
    try {
      commit();
      assert.equal(checkpoints.running, true);
      assert.equal(db.pragma('wal_autocheckpoint', { simple: true }), 50_000);
      // The thread dies as a crash or its heap limit would end it; nothing else in the process may do this.
      const worker = (checkpoints as unknown as { worker: Worker }).worker;
      await worker.terminate();
      await waitFor('the checkpointer to notice its thread is gone', () => !checkpoints.running);
      assert.equal(db.pragma('wal_autocheckpoint', { simple: true }), walCheckpointPages, 'the log bound is put back');
      // Past 4,000 pages of log the commit itself copies it (the worker, gone, cannot), and the log starts over.
      let most = 0;
      for (let i = 0; i < 120; i++) {
        commit();
        most = Math.max(most, walIndex(file).frames);
      }
      assert.equal(checkpoints.running, false, 'no other thread is started');
      assert.ok(most >= walCheckpointPages && most < walCheckpointPages + 200, `the log peaked at ${most} pages`);
      assert.ok(walIndex(file).frames < most, 'and started over');
      assert.deepEqual(db.prepare('SELECT count(*) AS n FROM t').get(), { n: 121 * 50 });
    } finally {
      await checkpoints.closed(db);
      db.close();
    }
  });

  it('starts with a busy process: the stores note their commits, and what they wrote reads back', async () => {
    const events = openSqliteEventStore(join(dir, 'events.db'));
    const docs = openSqliteDocumentStore(join(dir, 'read.db'));
    const jobs = docs.collection<{ _id: string; n: number }>('jobs');
    try {
      for (let i = 0; i < 120; i++) {
        await events.append(`job-${i}`, [{ type: 'JobCreated', data: { n: i }, metadata: systemMeta }], 'no_stream');
        await docs.batch(() => jobs.insertOne({ _id: `job-${i}`, n: i }));
      }
      assert.equal(backgroundCheckpoints.running, true, '240 commits start the worker');
      const file = join(dir, 'events.db');
      await waitFor('the worker to copy the event log', () => {
        const w = walIndex(file);
        return w.frames > 0 && w.backfilled === w.frames;
      });
    } finally {
      await events.close();
      await docs.close();
    }
    // Once closed, nothing of this process holds the files: the worker let go first, so the store's own close was
    // the last connection and removed the logs.
    const held = readdirSync('/proc/self/fd')
      .map((fd) => {
        try {
          return readlinkSync(`/proc/self/fd/${fd}`);
        } catch {
          return '';
        }
      })
      .filter((target) => target.startsWith(join(dir, 'events.db')) || target.startsWith(join(dir, 'read.db')));
    assert.deepEqual(held, [], 'no descriptor of the closed databases is open');
    for (const name of ['events.db-wal', 'events.db-shm', 'read.db-wal', 'read.db-shm'])
      assert.equal(existsSync(join(dir, name)), false, `${name} was removed by the close`);
    const reopened = openSqliteEventStore(join(dir, 'events.db'));
    const read = openSqliteDocumentStore(join(dir, 'read.db'));
    try {
      assert.equal((await reopened.readAll()).length, 120);
      assert.equal(await read.collection('jobs').count({}), 120);
    } finally {
      await reopened.close();
      await read.close();
    }
  });
  it('lets a process that closed its stores end only once the worker let go of them, without a fault', async () => {
    // A process ending while its worker opened or checkpointed a database whose files were just removed aborted
    // in the driver once (a V8 fatal error); the worker now confirms each close before the process may end.
    const script = join(dir, 'close-and-end.mts');
    const store = (m: string) => JSON.stringify(new URL(`../../store/${m}.ts`, import.meta.url).pathname);
    writeFileSync(
      script,
      [
        `import { mkdtempSync, rmSync } from 'node:fs';`,
        `import { join } from 'node:path';`,
        `import { backgroundCheckpoints } from ${store('sqlite-checkpoints')};`,
        `import { openSqliteEventStore } from ${store('sqlite-event-store')};`,
        `import { openSqliteDocumentStore } from ${store('sqlite-document-store')};`,
        `const d = mkdtempSync(join(process.argv[2], 'end-'));`,
        `const events = openSqliteEventStore(join(d, 'events.db'));`,
        `const docs = openSqliteDocumentStore(join(d, 'read.db'));`,
        `const meta = { workspaceId: null, actor: { type: 'system', id: null }, requestId: null, ts: 0, v: 1 };`,
        `for (let i = 0; i < 80; i++) {`,
        `  await events.append('job-' + i, [{ type: 'JobCreated', data: { i }, metadata: meta }], 'no_stream');`,
        `  await docs.batch(() => docs.collection('jobs').insertOne({ _id: 'job-' + i, i }));`,
        `}`,
        `process.stdout.write(String(backgroundCheckpoints.running));`,
        `await events.close();`,
        `await docs.close();`,
        `rmSync(d, { recursive: true, force: true });`,
      ].join('\n'),
    );
    for (let round = 0; round < 5; round++) {
      const { stdout, stderr } = await promisify(execFile)(process.execPath, ['--import', 'tsx', script, dir], {
        timeout: 60_000,
      });
      assert.equal(stdout, 'true', 'the worker ran');
      assert.equal(stderr, '');
    }
  });
  it('cuts a log file that grew past 64 MB back to it when the log starts over', () => {
    const file = join(dir, 'grown.db');
    const db = new Database(file);
    try {
      useWal(db);
      // No checkpoint by this connection, as under a stream of commits the worker's never end between two of them.
      db.pragma('wal_autocheckpoint = 0');
      db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, body BLOB NOT NULL)');
      const insert = db.prepare('INSERT INTO t (body) VALUES (?)');
      const mb = Buffer.alloc(1024 * 1024, 7);
      for (let i = 0; i < 80; i++) insert.run(mb);
      const grown = statSync(`${file}-wal`).size;
      assert.ok(grown > walFileKeptBytes, `the log grew to ${grown} bytes`);
      const [copied] = db.pragma('wal_checkpoint(PASSIVE)') as Array<{ log: number; checkpointed: number }>;
      assert.equal(copied!.checkpointed, copied!.log, 'every frame copied');
      insert.run(Buffer.from('after'));
      const kept = statSync(`${file}-wal`).size;
      assert.ok(kept <= walFileKeptBytes, `the log file was cut back to ${kept} bytes`);
      assert.equal((db.prepare('SELECT count(*) AS n FROM t').get() as { n: number }).n, 81);
    } finally {
      db.close();
    }
  });
});
