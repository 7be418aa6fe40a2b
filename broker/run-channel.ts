import { chmodSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { EgressProxy } from './egress-proxy.js';
import type { RunSession } from './run-session.js';
import type { Broker } from './server.js';

/** The host paths of one run's sockets, to mount into its sandbox. */
export interface RunSockets {
  brokerSocket: string;
  /** Null for a job without network access. */
  proxySocket: string | null;
}

/**
 * Gives a run its own broker socket (and egress proxy socket when it has network access) in a directory of its own
 * under `runsDir`, removed with the sockets when the session closes (docs/design.md "One broker socket per run").
 * On failure nothing is left listening.
 */
export async function serveRun(broker: Broker, proxy: EgressProxy, session: RunSession, runsDir: string, proxied: boolean): Promise<RunSockets> {
  try {
    const id = session.options.runId;
    if (!/^[A-Za-z0-9_-]+$/.test(id)) throw new Error(`not a run id: ${id}`);
    const dir = join(runsDir, id);
    mkdirSync(dir, { recursive: true });
    // Traversable for the sandbox user (bwrap binds the sockets as that user), not listable.
    chmodSync(dir, 0o711);
    session.onClose(async () => rmSync(dir, { recursive: true, force: true }));
    const brokerSocket = join(dir, 'broker.sock');
    await broker.serve(session, brokerSocket);
    const proxySocket = proxied ? join(dir, 'proxy.sock') : null;
    if (proxySocket) await proxy.serve(session, proxySocket);
    return { brokerSocket, proxySocket };
  } catch (err) {
    session.close();
    throw err;
  }
}
