import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { DocumentStore } from './document-store.js';
import type { EventStore } from './event-store.js';
import { openSqliteDocumentStore } from './sqlite-document-store.js';
import { openSqliteEventStore } from './sqlite-event-store.js';

export interface Stores {
  events: EventStore;
  docs: DocumentStore;
}

export interface StoreConfig {
  dataDir: string;
  eventStoreUrl: string | null;
  mongoUrl: string | null;
}

/**
 * The embedded default is two SQLite files in the data directory; URLs switch a port to its scaled adapter. The
 * scaled adapters' clients are loaded only then: together they would add some 45 MB to every embedded process.
 */
export async function openStores(config: StoreConfig): Promise<Stores> {
  mkdirSync(config.dataDir, { recursive: true });
  const events = config.eventStoreUrl
    ? (await import('./eventstoredb-event-store.js')).openEventStoreDb(config.eventStoreUrl)
    : openSqliteEventStore(join(config.dataDir, 'events.db'));
  const docs = config.mongoUrl
    ? await (await import('./mongo-document-store.js')).openMongoDocumentStore(config.mongoUrl)
    : openSqliteDocumentStore(join(config.dataDir, 'read.db'));
  return { events, docs };
}

/** In-memory SQLite stores: used to describe the API offline (`svc openapi`) where no data may be touched. */
export function openMemoryStores(): Stores {
  return { events: openSqliteEventStore(':memory:'), docs: openSqliteDocumentStore(':memory:') };
}

export async function closeStores(stores: Stores): Promise<void> {
  await Promise.allSettled([stores.events.close(), stores.docs.close()]);
}
