import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, it } from 'node:test';
import assert from 'node:assert/strict';
import { BlobBackedEventStore } from '../../store/blob-store-events.js';
import { FileBlobStore } from '../../store/blob-store-files.js';
import { openGridFsBlobStore } from '../../store/blob-store-gridfs.js';
import { MemoryBlobStore } from '../../store/blob-store-memory.js';
import { openSqliteEventStore } from '../../store/sqlite-event-store.js';
import { blobStoreContract } from './blob-store-contract.js';
import { eventStoreContract } from './event-store-contract.js';

const dir = mkdtempSync(join(tmpdir(), 'svc-blob-contract-'));
after(() => rmSync(dir, { recursive: true, force: true }));

blobStoreContract('files', async () => new FileBlobStore(join(dir, 'files')));
blobStoreContract('memory', async () => new MemoryBlobStore());

it('files: a write leaves no temporary file behind and keeps the data directory layout', async () => {
  const root = join(dir, 'layout');
  const blobs = new FileBlobStore(root);
  await blobs.put('runs/r1/artifacts/out/a.txt', 'a');
  await blobs.put('images/i1/build.log', 'log');
  assert.deepEqual(readdirSync(join(root, 'runs', 'r1', 'artifacts', 'out')), ['a.txt']);
  assert.deepEqual(readdirSync(join(root, '.blob-tmp')), []);
});

// Every payload out of line (limits of a few bytes): the event store contract must hold through the references.
const file = join(dir, 'events.db');
const shared = new FileBlobStore(join(dir, 'event-blobs'));
eventStoreContract(
  'sqlite with payloads out of line',
  async () => new BlobBackedEventStore(openSqliteEventStore(file), shared, { eventBytes: 8, appendBytes: 16 }),
  async () => new BlobBackedEventStore(openSqliteEventStore(file), shared, { eventBytes: 8, appendBytes: 16 }),
);

const url = process.env.SVC_TEST_MONGO_URL;
if (url) {
  console.log('[contract] blob store adapters: files, memory, gridfs');
  blobStoreContract('gridfs', async () => openGridFsBlobStore(url, 'svc_contract', 'contract_blobs'));
} else {
  console.log('[contract] blob store adapters: files, memory ONLY (gridfs SKIPPED: SVC_TEST_MONGO_URL is not set)');
  it(
    'blob store contract: gridfs',
    { skip: 'SVC_TEST_MONGO_URL is not set; start compose.yaml and set it to run this adapter' },
    () => {},
  );
}
