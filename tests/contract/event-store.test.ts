import { mkdtempSync, rmSync } from 'node:fs';
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
