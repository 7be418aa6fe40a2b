import { after, before } from 'node:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Broker } from '../../broker/server.js';
import type { RunSession } from '../../broker/run-session.js';
import { JobStateStore } from '../../app/job-state.js';
import { closeStores, openMemoryStores, type Stores } from '../../store/open.js';

export interface BrokerFixture {
  broker: Broker;
  /** Set by the suite's `before`. */
  dir: string;
  /** The socket of no run, which refuses every token. */
  socket: string;
  stores: Stores;
  /** Serves a session on a socket of its own (as the runner does for each run) and answers its path. */
  serve(session: RunSession, token: string): Promise<string>;
  /** The socket a token's run is served on; the socket of no run for any other token. */
  socketFor(token: string | null | undefined): string;
  jobState: JobStateStore;
}

/**
 * A real Broker on a Unix socket in a fresh directory, with in-memory stores and a JobStateStore, started before the
 * suite and stopped after it. `extra` starts and stops what a suite adds (the egress proxy).
 */
export function brokerFixture(
  name: string,
  extra: { start?(f: BrokerFixture): Promise<void>; stop?(): Promise<void> } = {},
): BrokerFixture {
  const sockets = new Map<string, string>();
  const f = {
    broker: new Broker(),
    async serve(session, token) {
      const path = join(f.dir, `${session.options.runId}.sock`);
      await f.broker.serve(session, path);
      sockets.set(token, path);
      return path;
    },
    socketFor: (token) => (token ? sockets.get(token) : undefined) ?? f.socket,
  } as BrokerFixture;
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
