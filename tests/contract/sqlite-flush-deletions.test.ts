import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { openSqliteDocumentStore } from '../../store/sqlite-document-store.js';
import { openSqliteEventStore } from '../../store/sqlite-event-store.js';
import { systemMeta } from '../engine-fixtures.js';
import { staysFalse } from '../wait.js';

/**
 * A workspace's erasure ends by emptying both databases' write-ahead logs (docs/design.md, "Workspace erasure"). The
 * checkpoint that does it gives up without an error while another connection reads from the log or checkpoints (the
 * background worker does, every few hundred milliseconds), and a CI run once found a secret's ciphertext left on disk
 * that way. These hold the log with another connection, and with the read models' own open batch, and require the
 * flush to wait them out and leave nothing.
 */
const dir = mkdtempSync(join(tmpdir(), 'svc-flush-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const canary = 'canary-0f3e9a77-of-a-deleted-row';
const onDisk = (file: string): boolean =>
  Buffer.concat([file, `${file}-wal`].filter((f) => existsSync(f)).map((f) => readFileSync(f))).includes(canary);
const walBytes = (file: string): number => (existsSync(`${file}-wal`) ? readFileSync(`${file}-wal`).length : 0);

/** Whether `p` has settled, as it goes: a flush's end can only be checked as an absence for a while. */
function settled(p: Promise<unknown>): () => boolean {
  let done = false;
  p.then(
    () => (done = true),
    () => (done = true),
  );
  return () => done;
}

/** A read transaction of another connection: it pins the log's frames until it ends. */
function holdLog(file: string): () => void {
  const reader = new Database(file);
  reader.exec('BEGIN');
  reader.prepare('SELECT count(*) FROM sqlite_master').get();
  return () => {
    reader.exec('COMMIT');
    reader.close();
  };
}

describe('sqlite: flushing deletions', () => {
  it('waits for a reader of the event log to let go, then leaves no frame of a deleted stream', async () => {
    const file = join(dir, 'events.db');
    const store = openSqliteEventStore(file);
    try {
      await store.append(
        'secret-gone',
        [{ type: 'Sealed', data: { sealed: canary }, metadata: systemMeta }],
        'no_stream',
      );
      await store.append(
        'secret-kept',
        [{ type: 'Sealed', data: { sealed: 'kept' }, metadata: systemMeta }],
        'no_stream',
      );
      await store.deleteStream('secret-gone');
      const release = holdLog(file);
      const started = Date.now();
      const flushed = store.flushDeletions();
      await staysFalse('the flush to end with the log still held', settled(flushed), 300);
      assert.ok(Date.now() - started < 1000, 'the flush blocked the thread on the lock');
      release();
      await flushed;
      assert.equal(walBytes(file), 0, 'the log is empty');
      assert.ok(!onDisk(file), 'the deleted payload is still on disk');
      assert.equal((await store.readStream('secret-kept')).length, 1);
    } finally {
      await store.close();
    }
  });

  it("empties the read models' log right after their open batch ends, and again past another reader", async () => {
    const file = join(dir, 'read.db');
    const store = openSqliteDocumentStore(file);
    try {
      const secrets = store.collection('secrets');
      await secrets.insertOne({ _id: 'gone', sealed: canary });
      await secrets.insertOne({ _id: 'kept', sealed: 'kept' });
      let endBatch!: () => void;
      const batch = store.batch(async () => {
        await secrets.deleteMany({ _id: 'gone' });
        await new Promise<void>((resolve) => (endBatch = resolve));
      });
      await new Promise((resolve) => setImmediate(resolve));
      const flushed = store.flushDeletions();
      await staysFalse('the flush to end inside the open batch', settled(flushed), 100);
      endBatch();
      await batch;
      await flushed;
      assert.equal(walBytes(file), 0, 'the log is empty after the batch');
      assert.ok(!onDisk(file), 'the deleted document is still on disk');

      await secrets.insertOne({ _id: 'gone-too', sealed: canary });
      await secrets.deleteMany({ _id: 'gone-too' });
      const release = holdLog(file);
      const again = store.flushDeletions();
      await staysFalse('the flush to end with the log still held', settled(again), 300);
      release();
      await again;
      assert.ok(!onDisk(file), 'the second deleted document is still on disk');
      assert.deepEqual(
        (await secrets.find({})).map((d) => d._id),
        ['kept'],
      );
    } finally {
      await store.close();
    }
  });
});
