import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { BlobStore } from './blob-store.js';
import { BlobBackedEventStore } from './blob-store-events.js';
import { FileBlobStore } from './blob-store-files.js';
import { MemoryBlobStore } from './blob-store-memory.js';
import type { DocumentStore } from './document-store.js';
import type { EventStore } from './event-store.js';
import { openSqliteDocumentStore } from './sqlite-document-store.js';
import { openSqliteEventStore } from './sqlite-event-store.js';

export interface Stores {
  /** The log, with payloads over the inline limit kept in `blobs` (docs/design.md, "Large payloads out of line"). */
  events: EventStore;
  docs: DocumentStore;
  blobs: BlobStore;
  /**
   * Where live deltas pass between replicas (docs/design.md, "Live deltas across replicas"): `live.db` in the data
   * directory, kept apart from the read models so their writes never wait on each other; MongoDB's database when set.
   */
  live: DocumentStore;
}

export interface StoreConfig {
  dataDir: string;
  eventStoreUrl: string | null;
  mongoUrl: string | null;
}

/**
 * The embedded default is two SQLite files and the blob files in the data directory; URLs switch a port to its
 * scaled adapter (blobs go to GridFS with the documents, so replicas need no shared volume). The scaled adapters'
 * clients are loaded only then: together they would add some 45 MB to every embedded process.
 */
export async function openStores(config: StoreConfig): Promise<Stores> {
  mkdirSync(config.dataDir, { recursive: true });
  const log = config.eventStoreUrl
    ? (await import('./eventstoredb-event-store.js')).openEventStoreDb(config.eventStoreUrl)
    : openSqliteEventStore(join(config.dataDir, 'events.db'));
  const docs = config.mongoUrl
    ? await (await import('./mongo-document-store.js')).openMongoDocumentStore(config.mongoUrl)
    : openSqliteDocumentStore(join(config.dataDir, 'read.db'));
  const blobs = config.mongoUrl
    ? await (await import('./blob-store-gridfs.js')).openGridFsBlobStore(config.mongoUrl)
    : new FileBlobStore(config.dataDir);
  const live = config.mongoUrl ? docs : openSqliteDocumentStore(join(config.dataDir, 'live.db'));
  return { events: new BlobBackedEventStore(log, blobs), docs, blobs, live };
}

/** In-memory stores: used to describe the API offline (`svc openapi`) where no data may be touched. */
export function openMemoryStores(): Stores {
  const blobs = new MemoryBlobStore();
  const docs = openSqliteDocumentStore(':memory:');
  return { events: new BlobBackedEventStore(openSqliteEventStore(':memory:'), blobs), docs, blobs, live: docs };
}

export async function closeStores(stores: Stores): Promise<void> {
  await Promise.allSettled([
    stores.events.close(),
    stores.docs.close(),
    stores.blobs.close(),
    ...(stores.live === stores.docs ? [] : [stores.live.close()]),
  ]);
}
