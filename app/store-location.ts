import { resolve } from 'node:path';

/** Where the stores are: the data directory, and the scaled adapters' URLs when set. */
export interface StoreLocation {
  dataDir: string;
  eventStoreUrl: string | null;
  mongoUrl: string | null;
}

/**
 * Where the stores are, from the flags and the environment alone. The admin commands that only open the stores (a
 * rebuild, a verification, an export) read no more of the configuration: loading its file's parser and validators
 * cost each of them a quarter of a second before it started (docs/performance.md, "Replay").
 */
export function storeLocation(flags: { dataDir?: string }, env: NodeJS.ProcessEnv = process.env): StoreLocation {
  return {
    dataDir: resolve(flags.dataDir ?? env.SVC_DATA_DIR ?? './data'),
    eventStoreUrl: env.SVC_EVENTSTORE_URL || null,
    mongoUrl: env.SVC_MONGO_URL || null,
  };
}
