import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, it } from 'node:test';
import Database from 'better-sqlite3';
import { CommandBus } from '../../app/commands.js';
import { WorkspaceEraser, erasureProgressCollection } from '../../app/workspace-erasure.js';
import { openSqliteDocumentStore } from '../../store/sqlite-document-store.js';
import { openSqliteEventStore } from '../../store/sqlite-event-store.js';
import { systemMeta } from '../engine-fixtures.js';

const dir = mkdtempSync(join(tmpdir(), 'svc-eraser-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/**
 * An erasure's last step empties the databases' write-ahead logs, then forgets its progress (docs/design.md,
 * "Workspace erasure"). When that step failed (the logs could not be emptied in time), the workspace's own stream is
 * gone already and its read-model document too: the progress document left behind is what brings the erasure back,
 * and the next pass must finish it.
 */
it('finishes an erasure whose last step failed: the logs emptied, then its progress forgotten', async () => {
  const eventsFile = join(dir, 'events.db');
  const events = openSqliteEventStore(eventsFile);
  const docs = openSqliteDocumentStore(join(dir, 'read.db'));
  const metadata = { ...systemMeta, workspaceId: 'w-gone' };
  const canary = 'sealed-canary-51c0ffee';
  try {
    await events.append('secret-s1', [{ type: 'SecretCreated', data: { sealed: canary }, metadata }], 'no_stream');
    await events.deleteStream('secret-s1');
    await docs.collection(erasureProgressCollection).insertOne({ _id: 'w-gone', scannedTo: null, streams: 1 });
    // A reader holds the log as the failed attempt found it; the pass must wait it out, not give up again.
    const reader = new Database(eventsFile);
    reader.exec('BEGIN');
    reader.prepare('SELECT count(*) FROM sqlite_master').get();
    setTimeout(() => {
      reader.exec('COMMIT');
      reader.close();
    }, 200);
    const errors: object[] = [];
    const eraser = new WorkspaceEraser(
      events,
      docs,
      new CommandBus(events),
      { eraseWorkspace: async () => {} },
      { removeRun: async () => {}, removeImageLog: async () => {} },
      { info: () => {}, error: (obj) => errors.push(obj) },
      async () => {},
    );
    await eraser.pass();
    assert.deepEqual(errors, []);
    assert.equal(await docs.collection(erasureProgressCollection).count({}), 0, 'the progress is forgotten');
    const onDisk = Buffer.concat(
      [eventsFile, `${eventsFile}-wal`].filter((f) => existsSync(f)).map((f) => readFileSync(f)),
    ).includes(canary);
    assert.equal(onDisk, false, "the deleted stream's payload is still on disk");
  } finally {
    await events.close();
    await docs.close();
  }
});
