import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, it } from 'node:test';
import { openEventStoreDb } from '../../store/eventstoredb-event-store.js';
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
