import { after, before } from 'node:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Broker } from '../../broker/server.js';
import { JobStateStore } from '../../server/job-state.js';
import { closeStores, openMemoryStores, type Stores } from '../../store/open.js';

export interface BrokerFixture {
  broker: Broker;
  /** Set by the suite's `before`. */
  dir: string;
  socket: string;
  stores: Stores;
  jobState: JobStateStore;
}

/**
 * A real Broker on a Unix socket in a fresh directory, with in-memory stores and a JobStateStore, started before the
 * suite and stopped after it. `extra` starts and stops what a suite adds (the egress proxy).
 */
export function brokerFixture(name: string, extra: { start?(f: BrokerFixture): Promise<void>; stop?(): Promise<void> } = {}): BrokerFixture {
  const f = { broker: new Broker() } as BrokerFixture;
  before(async () => {
    f.dir = mkdtempSync(join(tmpdir(), `svc-${name}-`));
    f.socket = join(f.dir, 'broker.sock');
    f.stores = openMemoryStores();
    f.jobState = new JobStateStore(f.stores.docs, f.stores.events);
    await f.broker.start(f.socket);
    await extra.start?.(f);
  });
  after(async () => {
    await extra.stop?.();
    await f.broker.stop();
    await closeStores(f.stores);
    rmSync(f.dir, { recursive: true, force: true });
  });
  return f;
}
