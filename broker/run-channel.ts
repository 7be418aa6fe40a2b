import { chmodSync, chownSync, mkdirSync, rmSync } from 'node:fs';
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
 *
 * `owner`: the host uid the run's sandbox connects as, when the backend has one of its own (bwrap); the directory
 * and sockets are then that uid's alone (0700, 0600), so no other host user can even reach them. Null (docker, whose
 * sandboxes connect as the container's root): the directory is 0711 and the sockets 0666, and the token is what
 * authenticates.
 */
export async function serveRun(
  broker: Broker,
  proxy: EgressProxy,
  session: RunSession,
  runsDir: string,
  proxied: boolean,
  owner: number | null = null,
): Promise<RunSockets> {
  try {
    const id = session.options.runId;
    if (!/^[A-Za-z0-9_-]+$/.test(id)) throw new Error(`not a run id: ${id}`);
    mkdirSync(runsDir, { recursive: true, mode: 0o711 });
    const dir = join(runsDir, id);
    mkdirSync(dir, { recursive: true });
    session.onClose(async () => rmSync(dir, { recursive: true, force: true }));
    // Closed to others before any socket exists in it.
    if (owner !== null) {
      chmodSync(dir, 0o700);
      chownSync(dir, owner, owner);
    } else chmodSync(dir, 0o711);
    const brokerSocket = join(dir, 'broker.sock');
    await broker.serve(session, brokerSocket);
    const proxySocket = proxied ? join(dir, 'proxy.sock') : null;
    if (proxySocket) await proxy.serve(session, proxySocket);
    if (owner !== null) {
      for (const socket of [brokerSocket, proxySocket]) {
        if (socket === null) continue;
        chownSync(socket, owner, owner);
        chmodSync(socket, 0o600);
      }
    }
    return { brokerSocket, proxySocket };
  } catch (err) {
    session.close();
    throw err;
  }
}
