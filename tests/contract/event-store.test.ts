import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { waitFor } from '../wait.js';
import { openEventStoreDb } from '../../store/eventstoredb-event-store.js';
import { WrongExpectedRevisionError } from '../../store/event-store.js';
import { byCategorySql, categoryIndex } from '../../store/sqlite-event-category.js';
import { openSqliteEventStore } from '../../store/sqlite-event-store.js';
import { eventStoreContract } from './event-store-contract.js';

const dir = mkdtempSync(join(tmpdir(), 'svc-es-contract-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const file = join(dir, 'events.db');

eventStoreContract(
  'sqlite',
  async () => openSqliteEventStore(file),
  async () => openSqliteEventStore(file),
);

it('sqlite: a database written before the category index is migrated at open, once, and read by category', async () => {
  const own = join(dir, 'old-schema.db');
  // The events table as the store made it before the category column and its index.
  const old = new Database(own);
  old.exec(`
    CREATE TABLE events (
      position INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, stream_id TEXT NOT NULL,
      revision INTEGER NOT NULL, type TEXT NOT NULL, data TEXT NOT NULL, metadata TEXT NOT NULL,
      UNIQUE (stream_id, revision)
    );
    CREATE INDEX events_type ON events (type, position);
    CREATE TABLE deleted_streams (stream_id TEXT PRIMARY KEY, deleted_at INTEGER NOT NULL);
  `);
  const insert = old.prepare(
    'INSERT INTO events (id, stream_id, revision, type, data, metadata) VALUES (?, ?, ?, ?, ?, ?)',
  );
  const streamsWritten = ['run-1', 'timeline-1', 'timeline-1', 'job-9', 'run-1', 'runx-2', 'nodash'];
  const revisions = new Map<string, number>();
  streamsWritten.forEach((s, i) => {
    const revision = revisions.get(s) ?? 0;
    revisions.set(s, revision + 1);
    insert.run(`id-${i}`, s, revision, 'Old', JSON.stringify({ i }), '{"ts":1}');
  });
  old.close();
  // Two stores open it, as a server and an admin command may: the second finds it migrated.
  const first = openSqliteEventStore(own);
  const second = openSqliteEventStore(own);
  try {
    const read = async (prefixes: string[]) =>
      (await second.readAll({ filter: { streamPrefixes: prefixes } })).map((e) => (e.data as { i: number }).i);
    assert.deepEqual(await read(['run-', 'job-']), [0, 3, 4]);
    assert.deepEqual(await read(['timeline-']), [1, 2]);
    assert.deepEqual(await read(['runx-']), [5]);
    const meta = { workspaceId: null, actor: { type: 'system' as const, id: null }, requestId: null };
    await first.append(
      'run-1',
      [{ type: 'New', data: { i: 7 }, metadata: { ...meta, correlationId: null, causationId: null, ts: 2 } }],
      1,
    );
    assert.deepEqual(await read(['run-', 'job-']), [0, 3, 4, 7]);
    // The read by category goes through the index, not a scan of every row.
    const db = new Database(own, { readonly: true });
    try {
      const columns = db.prepare('PRAGMA table_xinfo(events)').all() as Array<{ name: string }>;
      assert.equal(columns.filter((c) => c.name === 'category').length, 1);
      const plan = db.prepare(`EXPLAIN QUERY PLAN ${byCategorySql(2)}`).all(0, 'run', 'job', 10) as Array<{
        detail: string;
      }>;
      assert.ok(
        plan.some((p) => p.detail.includes(categoryIndex)),
        plan.map((p) => p.detail).join('; '),
      );
      assert.ok(!plan.some((p) => /^SCAN events/.test(p.detail)), plan.map((p) => p.detail).join('; '));
    } finally {
      db.close();
    }
  } finally {
    await first.close();
    await second.close();
  }
});

it('sqlite: a deleted stream leaves neither file once deletions are flushed (docs/events.md, "Deleting a stream")', async () => {
  const own = join(dir, 'flushed.db');
  const store = openSqliteEventStore(own);
  const onDisk = () =>
    Buffer.concat([own, `${own}-wal`].filter((f) => existsSync(f)).map((f) => readFileSync(f))).includes(canary);
  const canary = 'canary-4b1d6c0e-only-in-the-deleted-stream';
  try {
    const metadata = { workspaceId: null, actor: { type: 'system' as const, id: null }, requestId: null };
    const meta = { ...metadata, correlationId: null, causationId: null, ts: 1 };
    await store.append('secret-gone', [{ type: 'Sealed', data: { sealed: canary }, metadata: meta }], 'no_stream');
    await store.append('secret-kept', [{ type: 'Sealed', data: { sealed: 'kept' }, metadata: meta }], 'no_stream');
    assert.ok(onDisk(), 'the canary was written');
    await store.deleteStream('secret-gone');
    await store.flushDeletions();
    assert.ok(!onDisk(), 'the deleted payload is still in the database or its write-ahead log');
    assert.equal((await store.readStream('secret-kept')).length, 1);
  } finally {
    await store.close();
  }
});

const meta = { workspaceId: null, actor: { type: 'system' as const, id: null }, requestId: null } as const;
const metadata = { ...meta, correlationId: null, causationId: null, ts: 1 };

describe('sqlite: group commit (docs/design.md, "Events and read models")', () => {
  it('refuses an append that fails half-way alone, with none of its events written', async () => {
    const store = openSqliteEventStore(join(dir, 'group-failure.db'));
    try {
      await store.append('owner', [{ id: 'taken-id', type: 'First', data: {}, metadata }], 'no_stream');
      const results = await Promise.allSettled([
        store.append('before', [{ type: 'Made', data: {}, metadata }], 'no_stream'),
        // Its second event reuses an event id: the insert fails after the first event of the append was written.
        store.append(
          'half',
          [
            { type: 'One', data: {}, metadata },
            { id: 'taken-id', type: 'Two', data: {}, metadata },
          ],
          'no_stream',
        ),
        store.append('owner', [{ type: 'Second', data: {}, metadata }], 0),
        store.append('after', [{ type: 'Made', data: {}, metadata }], 'no_stream'),
      ]);
      assert.deepEqual(
        results.map((r) => r.status),
        ['fulfilled', 'rejected', 'fulfilled', 'fulfilled'],
      );
      assert.match(String((results[1] as PromiseRejectedResult).reason), /UNIQUE/);
      assert.deepEqual(await store.readStream('half'), [], 'nothing of the failed append is kept');
      assert.equal((await store.readStream('before')).length, 1);
      assert.equal((await store.readStream('after')).length, 1);
      assert.equal((await store.readStream('owner')).length, 2);
      // The failed append left no hole a later append of the same stream would trip on.
      await store.append('half', [{ type: 'One', data: {}, metadata }], 'no_stream');
    } finally {
      await store.close();
    }
  });

  it('refuses a payload that cannot be serialised at once and alone; later changes to a payload are not written', async () => {
    const store = openSqliteEventStore(join(dir, 'group-payload.db'));
    try {
      const data = { n: 1 };
      const good = store.append('good', [{ type: 'Made', data, metadata }], 'no_stream');
      data.n = 2;
      await assert.rejects(store.append('bad', [{ type: 'Made', data: { n: 10n }, metadata }], 'no_stream'), /BigInt/);
      await good;
      assert.deepEqual(
        (await store.readStream('good')).map((e) => e.data),
        [{ n: 1 }],
      );
      assert.deepEqual(await store.readStream('bad'), []);
    } finally {
      await store.close();
    }
  });

  it('writes appends queued before a deletion or a close first, as it would one at a time', async () => {
    const file = join(dir, 'group-order.db');
    const store = openSqliteEventStore(file);
    const queued = store.append('doomed', [{ type: 'Made', data: {}, metadata }], 'no_stream');
    await store.deleteStream('doomed');
    assert.equal((await queued).revision, 0, 'the append before the deletion was acknowledged');
    assert.deepEqual(await store.readStream('doomed'), []);
    const last = store.append('kept', [{ type: 'Made', data: {}, metadata }], 'no_stream');
    await store.close();
    assert.equal((await last).revision, 0);
    const again = openSqliteEventStore(file);
    try {
      assert.equal((await again.readStream('kept')).length, 1);
      await assert.rejects(
        again.append('kept', [{ type: 'Two', data: {}, metadata }], 'no_stream'),
        WrongExpectedRevisionError,
      );
    } finally {
      await again.close();
    }
  });

  it('loses only unacknowledged appends, never part of one, when the process is killed mid-flood', async () => {
    const file = join(dir, 'killed.db');
    const child = spawn(process.execPath, ['--import', 'tsx', 'tests/contract/fixtures/append-flood.ts', file], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise((r) => child.once('exit', r));
    try {
      // Killed while waves of appends are being committed, wherever in a group commit that lands.
      await waitFor('a thousand acknowledged appends', () => out.split('\n').length > 1000, { timeoutMs: 60_000 });
      child.kill('SIGKILL');
      await exited;
    } finally {
      child.kill('SIGKILL');
    }
    const acknowledged = out.split('\n').filter((l) => l.startsWith('flood-'));
    const db = new Database(file, { readonly: true });
    try {
      const counts = new Map(
        (
          db.prepare('SELECT stream_id AS s, count(*) AS n FROM events GROUP BY stream_id').all() as Array<{
            s: string;
            n: number;
          }>
        ).map((r) => [r.s, r.n]),
      );
      for (const [stream, n] of counts) assert.equal(n, 5, `${stream} has ${n} of its 5 events`);
      for (const stream of acknowledged) assert.equal(counts.get(stream), 5, `acknowledged ${stream} was lost`);
      const positions = db.prepare('SELECT position FROM events ORDER BY position').pluck().all() as number[];
      assert.equal(positions.length, counts.size * 5);
    } finally {
      db.close();
    }
  });
});

const url = process.env.SVC_TEST_EVENTSTORE_URL;
if (url) {
  console.log('[contract] event store adapters: sqlite, eventstoredb');
  eventStoreContract(
    'eventstoredb',
    async () => openEventStoreDb(url),
    async () => openEventStoreDb(url),
  );
} else {
  console.log(
    '[contract] event store adapters: sqlite ONLY (eventstoredb SKIPPED: SVC_TEST_EVENTSTORE_URL is not set)',
  );
  it(
    'event store contract: eventstoredb',
    { skip: 'SVC_TEST_EVENTSTORE_URL is not set; start compose.yaml and set it to run this adapter' },
    () => {},
  );
}
