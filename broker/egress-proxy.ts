import { closeServer, listenOnSocket } from './unix-server.js';
import { rmSync } from 'node:fs';
import {
  createServer,
  request as httpRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  type Server,
  type ServerResponse,
} from 'node:http';
import { connect, type Socket } from 'node:net';
import { lookup } from 'node:dns/promises';
import { randomUUID } from 'node:crypto';
import { addressAllowed, addressRefusal, decideHost } from '../adapters/egress/address-guard.js';
import type { RunSession } from './run-session.js';
import { errorMessage } from '../domain/error-message.js';

const dialTimeoutMs = 15_000;
const headersTimeoutMs = 60_000;
const hopByHop = new Set([
  'connection',
  'proxy-connection',
  'keep-alive',
  'proxy-authorization',
  'proxy-authenticate',
  'te',
  'trailer',
  'trailers',
  'transfer-encoding',
  'upgrade',
]);

class Refusal extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** Headers without the hop-by-hop ones, including those the Connection header names. */
function endToEnd(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  const named = new Set(
    String(headers.connection ?? '')
      .split(',')
      .map((t) => t.trim().toLowerCase())
      .filter(Boolean),
  );
  return Object.fromEntries(
    Object.entries(headers).filter(([k, v]) => v !== undefined && !hopByHop.has(k) && !named.has(k)),
  );
}

/** Connects to the first address that answers within the dial timeout. */
async function dial(addresses: string[], port: number): Promise<Socket> {
  let last: Refusal | null = null;
  for (const address of addresses) {
    try {
      return await new Promise<Socket>((resolve, reject) => {
        const socket = connect({ host: address, port, allowHalfOpen: true });
        const timer = setTimeout(() => {
          socket.destroy();
          reject(
            new Refusal(504, 'upstream_timeout', `could not connect to port ${port} within ${dialTimeoutMs / 1000} s`),
          );
        }, dialTimeoutMs);
        socket.once('connect', () => {
          clearTimeout(timer);
          resolve(socket);
        });
        socket.once('error', (err) => {
          clearTimeout(timer);
          reject(new Refusal(502, 'upstream_error', `could not connect to port ${port}: ${err.message}`));
        });
      });
    } catch (err) {
      last = err as Refusal;
    }
  }
  throw last ?? new Refusal(502, 'upstream_error', 'no address to connect to');
}

/**
 * The egress proxy (docs/sandbox.md), one Unix socket per run, seen as /run/svc/proxy.sock in that run's
 * sandbox: the only way out of one. `CONNECT host:port` and absolute http:// URLs; the run token is the Basic
 * password, and a socket takes only its own run's token, so another run's token never unlocks this run's allow-list
 * (docs/design.md "One broker socket per run"). It checks the job's network rule and allow-list on the name, never
 * takes a bare IP address, resolves the name itself and dials only addresses the guard allows.
 */
export class EgressProxy {
  private readonly seen = new WeakMap<RunSession, Set<string>>();
  /** Each run's socket and its open CONNECT tunnels (which the HTTP server no longer tracks), until the run ends. */
  private readonly channels = new Map<Server, Set<Socket>>();

  /**
   * Serves `session` alone on a new socket at `path`. When the session closes the socket is removed and the run's
   * tunnels are cut: a run that ended keeps no way out.
   */
  async serve(session: RunSession, path: string): Promise<void> {
    const tunnels = new Set<Socket>();
    // What escapes forward() and tunnel() (they answer their own refusals) ends that one connection, never the process.
    const server = createServer((req, res) => void this.forward(req, res, session).catch(() => res.destroy()));
    server.on('connect', (req: IncomingMessage, socket: Socket, head: Buffer) => {
      tunnels.add(socket);
      socket.once('close', () => tunnels.delete(socket));
      void this.tunnel(req, socket, head, session).catch(() => socket.destroy());
    });
    await listenOnSocket(server, path);
    this.channels.set(server, tunnels);
    session.onClose(async () => {
      for (const t of tunnels) t.destroy();
      rmSync(path, { force: true });
      await closeServer(server);
      this.channels.delete(server);
    });
  }

  /** Closes every run's socket and tunnel (the runner stops). */
  async stop(): Promise<void> {
    const all = [...this.channels];
    this.channels.clear();
    for (const [, tunnels] of all) for (const t of tunnels) t.destroy();
    await Promise.all(all.map(([server]) => closeServer(server)));
  }

  private authenticate(req: IncomingMessage, session: RunSession): RunSession {
    const basic = /^Basic\s+(\S+)\s*$/i.exec(req.headers['proxy-authorization'] ?? '')?.[1];
    const decoded = basic ? Buffer.from(basic, 'base64').toString('utf8') : '';
    const colon = decoded.indexOf(':');
    const password = colon >= 0 ? decoded.slice(colon + 1) : '';
    if (!password || !session.holds(password))
      throw new Refusal(
        407,
        'invalid_token',
        'the egress proxy needs the run token of this run as the Basic password, while the run executes',
      );
    return session;
  }

  /** Decides on the name, resolves it and keeps the addresses the guard allows; every refusal goes on the timeline. */
  private async addresses(
    session: RunSession,
    rawHost: string,
    started: number,
  ): Promise<{ host: string; addresses: string[] }> {
    const rule = session.options.egress;
    const decision = decideHost(rawHost, rule);
    const refuse = (status: number, code: string, message: string): never => {
      session.record({ endpoint: `proxy ${decision.host}`, ok: false, error: message }, Date.now() - started);
      throw new Refusal(status, code, message);
    };
    if (!decision.ok)
      return refuse(decision.status, decision.status === 403 ? 'forbidden' : 'validation_failed', decision.message);
    let resolved: string[] = [];
    try {
      resolved = (await lookup(decision.host, { all: true, verbatim: true })).map((a) => a.address);
    } catch (err) {
      refuse(
        502,
        'upstream_error',
        `${decision.host} could not be resolved (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
      );
    }
    const allowed = resolved.filter((a) => addressAllowed(a, rule.allowPrivateNetwork));
    if (allowed.length === 0) refuse(403, 'forbidden', addressRefusal);
    return { host: decision.host, addresses: allowed };
  }

  private async connectTo(session: RunSession, rawHost: string, port: number, started: number): Promise<Socket> {
    const { host, addresses } = await this.addresses(session, rawHost, started);
    let socket: Socket;
    try {
      socket = await dial(addresses, port);
    } catch (err) {
      session.record({ endpoint: `proxy ${host}`, ok: false, error: errorMessage(err) }, Date.now() - started);
      throw err;
    }
    const seen = this.seen.get(session) ?? new Set<string>();
    this.seen.set(session, seen);
    if (!seen.has(host)) {
      seen.add(host);
      session.record({ endpoint: `proxy ${host}`, ok: true }, Date.now() - started);
    }
    return socket;
  }

  private refusalBody(err: unknown): { status: number; headers: Record<string, string>; text: string } {
    const r = err instanceof Refusal ? err : new Refusal(502, 'upstream_error', errorMessage(err));
    const requestId = randomUUID();
    const text = JSON.stringify({ code: r.code, message: r.message, requestId });
    const headers: Record<string, string> = {
      'content-type': 'application/json; charset=utf-8',
      'content-length': String(Buffer.byteLength(text)),
      'x-request-id': requestId,
    };
    if (r.status === 407) headers['proxy-authenticate'] = 'Basic realm="svc"';
    return { status: r.status, headers, text };
  }

  private async forward(req: IncomingMessage, res: ServerResponse, channel: RunSession): Promise<void> {
    const started = Date.now();
    try {
      const session = this.authenticate(req, channel);
      let url: URL;
      try {
        url = new URL(req.url ?? '');
      } catch {
        throw new Refusal(400, 'validation_failed', 'the egress proxy takes CONNECT or absolute http:// URLs');
      }
      if (url.protocol !== 'http:')
        throw new Refusal(
          400,
          'validation_failed',
          `the egress proxy forwards only http:// URLs; use CONNECT for ${url.protocol.replace(':', '')}`,
        );
      const socket = await this.connectTo(session, url.hostname, Number(url.port || 80), started);
      if (res.destroyed) return void socket.destroy();
      const upstream = httpRequest({
        createConnection: () => socket,
        method: req.method,
        path: url.pathname + url.search,
        headers: { ...endToEnd(req.headers), host: url.host },
      });
      const timer = setTimeout(
        () =>
          upstream.destroy(
            new Refusal(504, 'upstream_timeout', `no response headers within ${headersTimeoutMs / 1000} s`),
          ),
        headersTimeoutMs,
      );
      upstream.on('response', (answer) => {
        clearTimeout(timer);
        res.writeHead(answer.statusCode ?? 502, answer.statusMessage, endToEnd(answer.headers));
        answer.pipe(res);
        answer.on('error', () => res.destroy());
      });
      upstream.on('error', (err) => {
        clearTimeout(timer);
        if (res.headersSent) res.destroy();
        else this.answerRefusal(res, err);
      });
      res.on('close', () => {
        clearTimeout(timer);
        if (!res.writableFinished) upstream.destroy();
      });
      req.pipe(upstream);
    } catch (err) {
      this.answerRefusal(res, err);
    }
  }

  private answerRefusal(res: ServerResponse, err: unknown): void {
    if (res.headersSent || res.destroyed) return;
    const r = this.refusalBody(err);
    res.writeHead(r.status, r.headers);
    res.end(r.text);
  }

  private async tunnel(req: IncomingMessage, client: Socket, head: Buffer, channel: RunSession): Promise<void> {
    const started = Date.now();
    client.on('error', () => undefined);
    try {
      const session = this.authenticate(req, channel);
      const m = /^\[([^\]]+)\]:(\d{1,5})$/.exec(req.url ?? '') ?? /^([^:[\]]+):(\d{1,5})$/.exec(req.url ?? '');
      const port = Number(m?.[2]);
      if (!m || port < 1 || port > 65535) throw new Refusal(400, 'validation_failed', 'CONNECT needs host:port');
      const upstream = await this.connectTo(session, m[1]!, port, started);
      if (client.destroyed) return void upstream.destroy();
      upstream.on('error', () => client.destroy());
      client.on('error', () => upstream.destroy());
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      // Each direction ends on its own (half-close): the client's FIN reaches the upstream and the other way round.
      upstream.pipe(client);
      client.pipe(upstream);
    } catch (err) {
      const r = this.refusalBody(err);
      const lines = [
        `HTTP/1.1 ${r.status} ${r.status === 407 ? 'Proxy Authentication Required' : 'Refused'}`,
        ...Object.entries(r.headers).map(([k, v]) => `${k}: ${v}`),
        'connection: close',
      ];
      client.end(`${lines.join('\r\n')}\r\n\r\n${r.text}`);
    }
  }
}
