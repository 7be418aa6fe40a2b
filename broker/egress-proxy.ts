import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, type Socket } from 'node:net';
import { lookup } from 'node:dns/promises';
import { chmodSync, rmSync } from 'node:fs';
import { addressAllowed, isIpLiteral, normalizeHost, onAllowList } from './address-guard.js';
import type { Broker } from './server.js';
import type { RunSession } from './run-session.js';

const hopByHop = ['connection', 'proxy-connection', 'keep-alive', 'proxy-authorization', 'proxy-authenticate', 'te', 'trailer', 'transfer-encoding', 'upgrade'];

class Refusal extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

/**
 * The egress proxy (DESIGN §5, BEHAVIOUR §5.5) on its own Unix socket: the only way out of a sandbox. It checks the
 * job's network rule and allow-list by name, never dials a bare IP, and checks the resolved address at dial time.
 */
export class EgressProxy {
  private server: Server | null = null;
  private readonly seen = new WeakMap<RunSession, Set<string>>();

  constructor(private readonly broker: Broker) {}

  async listen(path: string): Promise<void> {
    rmSync(path, { force: true });
    this.server = createServer((req, res) => void this.forward(req, res));
    this.server.on('connect', (req: IncomingMessage, socket: Socket, head: Buffer) => void this.tunnel(req, socket, head));
    await new Promise<void>((resolve, reject) => this.server!.once('error', reject).listen(path, resolve));
    chmodSync(path, 0o666);
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    this.server?.closeAllConnections();
  }

  private session(req: IncomingMessage): RunSession {
    const header = req.headers['proxy-authorization'] ?? '';
    const basic = /^Basic\s+(\S+)$/i.exec(header)?.[1];
    const password = basic ? Buffer.from(basic, 'base64').toString('utf8').split(':').slice(1).join(':') : '';
    const session = password ? this.broker.sessionFor(password) : null;
    if (!session) throw new Refusal(407, 'the egress proxy needs the run token as the password');
    return session;
  }

  /** Decides and resolves; answers the address to dial. */
  private async target(session: RunSession, rawHost: string, started: number): Promise<string> {
    const host = normalizeHost(rawHost);
    const { network, allowedDomains, allowPrivateNetwork } = session.options.egress;
    const refuse = (status: number, message: string): never => {
      session.record({ endpoint: `proxy ${host}`, ok: false, error: message }, Date.now() - started, 'plain');
      throw new Refusal(status, message);
    };
    if (network === 'none') refuse(403, 'the egress proxy does not serve jobs without network access');
    if (isIpLiteral(host)) refuse(403, `${host} is an IP address; the egress proxy only connects to host names`);
    if (network === 'allowlist' && !onAllowList(host, allowedDomains ?? [])) refuse(403, `${host} is not on this job's allow-list`);
    let addresses: Array<{ address: string }> = [];
    try {
      addresses = await lookup(host, { all: true });
    } catch {
      refuse(502, `${host} could not be resolved`);
    }
    const usable = addresses.find((a) => addressAllowed(a.address, allowPrivateNetwork));
    if (!usable) refuse(403, 'the egress proxy does not connect to this address');
    const seen = this.seen.get(session) ?? new Set<string>();
    if (!seen.has(host)) {
      seen.add(host);
      this.seen.set(session, seen);
      session.record({ endpoint: `proxy ${host}`, ok: true }, Date.now() - started, 'plain');
    }
    return usable!.address;
  }

  private refuseHttp(res: ServerResponse, err: unknown): void {
    const status = err instanceof Refusal ? err.status : 502;
    const headers: Record<string, string> = { 'content-type': 'text/plain; charset=utf-8' };
    if (status === 407) headers['proxy-authenticate'] = 'Basic realm="svc"';
    res.writeHead(status, headers);
    res.end(`${(err as Error).message}\n`);
  }

  private async forward(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const started = Date.now();
    try {
      const session = this.session(req);
      let url: URL;
      try {
        url = new URL(req.url ?? '');
      } catch {
        throw new Refusal(400, 'the egress proxy takes absolute http:// URLs or CONNECT');
      }
      if (url.protocol !== 'http:') throw new Refusal(400, 'use CONNECT for https');
      const address = await this.target(session, url.hostname, started);
      const headers = Object.fromEntries(Object.entries(req.headers).filter(([k]) => !hopByHop.includes(k)));
      const upstream = httpRequest({ host: address, port: Number(url.port || 80), method: req.method, path: url.pathname + url.search, headers: { ...headers, host: url.host }, timeout: 60_000 }, (up) => {
        const out = Object.fromEntries(Object.entries(up.headers).filter(([k]) => !hopByHop.includes(k)));
        res.writeHead(up.statusCode ?? 502, out as Record<string, string>);
        up.pipe(res);
      });
      upstream.on('timeout', () => upstream.destroy(new Error('the upstream did not answer within a minute')));
      upstream.on('error', (err) => (res.headersSent ? res.destroy() : this.refuseHttp(res, new Refusal(502, err.message))));
      req.pipe(upstream);
    } catch (err) {
      this.refuseHttp(res, err);
    }
  }

  private async tunnel(req: IncomingMessage, client: Socket, head: Buffer): Promise<void> {
    const started = Date.now();
    client.on('error', () => undefined);
    try {
      const session = this.session(req);
      const m = /^(.+):(\d+)$/.exec(req.url ?? '');
      if (!m) throw new Refusal(400, 'CONNECT needs host:port');
      const address = await this.target(session, m[1]!, started);
      const upstream = connect({ host: address, port: Number(m[2]), timeout: 15_000 });
      upstream.once('connect', () => {
        upstream.setTimeout(0);
        client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        if (head.length) upstream.write(head);
        upstream.pipe(client);
        client.pipe(upstream);
      });
      upstream.on('timeout', () => upstream.destroy(new Error('connection timed out')));
      upstream.on('error', (err) => {
        if (!client.writableEnded) client.end(`HTTP/1.1 502 Bad Gateway\r\ncontent-type: text/plain\r\n\r\n${err.message}\n`);
      });
    } catch (err) {
      const status = err instanceof Refusal ? err.status : 502;
      const auth = status === 407 ? 'Proxy-Authenticate: Basic realm="svc"\r\n' : '';
      client.end(`HTTP/1.1 ${status} Refused\r\n${auth}content-type: text/plain\r\n\r\n${(err as Error).message}\n`);
    }
  }
}
