import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, it } from 'node:test';
import { openMongoDocumentStore } from '../../store/mongo-document-store.js';
import { openSqliteDocumentStore } from '../../store/sqlite-document-store.js';
import { documentStoreContract } from './document-store-contract.js';

const dir = mkdtempSync(join(tmpdir(), 'svc-doc-contract-'));
after(() => rmSync(dir, { recursive: true, force: true }));

documentStoreContract('sqlite', async () => openSqliteDocumentStore(join(dir, 'read.db')));

const url = process.env.SVC_TEST_MONGO_URL;
if (url) {
  console.log('[contract] document store adapters: sqlite, mongodb');
  documentStoreContract('mongodb', async () => openMongoDocumentStore(url, 'svc_contract'));
} else {
  console.log('[contract] document store adapters: sqlite ONLY (mongodb SKIPPED: SVC_TEST_MONGO_URL is not set)');
  it(
    'document store contract: mongodb',
    { skip: 'SVC_TEST_MONGO_URL is not set; start compose.yaml and set it to run this adapter' },
    () => {},
  );
}
