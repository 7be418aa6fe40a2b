import { chmodSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';

/** Listens on a Unix socket the sandboxes' unprivileged user can open (a stale socket file is replaced). */
export async function listenOnSocket(server: Server, path: string): Promise<void> {
  rmSync(path, { force: true });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(path, () => resolve()));
  chmodSync(path, 0o666);
}

/** Stops listening and cuts every open connection, so a stop never waits on a sandbox's keep-alive. */
export async function closeServer(server: Server): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeAllConnections();
  await closed;
}

/**
 * Stops listening and removes the socket at once; requests already being handled get their answers, idle keep-alive
 * connections are cut. Resolves when the last connection is gone.
 */
export async function retireServer(server: Server, path: string): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  rmSync(path, { force: true });
  await closed;
}
