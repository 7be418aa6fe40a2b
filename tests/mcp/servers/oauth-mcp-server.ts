import { createPublicKey, verify, type JsonWebKey, type KeyObject } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { buildTestServer, type ServerLog } from './tools.js';

/**
 * A real MCP server (SDK, Streamable HTTP) that is an OAuth resource server: it answers 401 with an RFC 9728
 * challenge naming its protected-resource metadata, and accepts only RS256 JWT access tokens that the given
 * authorization server signed for this resource (checked with the keys of its JWKS), unexpired and not revoked here.
 */
export interface ProtectedMcpServer {
  url: string;
  log: ServerLog;
  /** Access tokens it accepted, in order. */
  accepted: string[];
  /** Tokens it will refuse from now on, as a resource server does after a revocation it learned of. */
  refused: Set<string>;
  /** How many requests it answered 401. */
  unauthorized: number;
  close(): Promise<void>;
}

async function body(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  return text ? (JSON.parse(text) as unknown) : undefined;
}

const part = (s: string) => JSON.parse(Buffer.from(s, 'base64url').toString('utf8')) as Record<string, unknown>;

export async function startProtectedMcpServer(issuer: string): Promise<ProtectedMcpServer> {
  const log: ServerLog = { notes: [] };
  const accepted: string[] = [];
  const refused = new Set<string>();
  const discovery = (await (await fetch(`${issuer}/.well-known/openid-configuration`)).json()) as { jwks_uri: string };
  const jwks = (await (await fetch(discovery.jwks_uri)).json()) as { keys: Array<JsonWebKey & { kid?: string }> };
  const keys = new Map<string, KeyObject>(
    jwks.keys.map((k) => [k.kid ?? '', createPublicKey({ key: k, format: 'jwk' })]),
  );

  const http = createServer();
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  const resource = `${base}/mcp`;
  const metadataUrl = `${base}/.well-known/oauth-protected-resource/mcp`;

  const valid = (token: string): boolean => {
    const [h, p, s] = token.split('.');
    if (!h || !p || !s || refused.has(token)) return false;
    const header = part(h);
    const key = keys.get(String(header.kid));
    if (header.alg !== 'RS256' || !key || !verify('sha256', Buffer.from(`${h}.${p}`), key, Buffer.from(s, 'base64url')))
      return false;
    const claims = part(p);
    const audience = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
    return (
      claims.iss === issuer &&
      audience.includes(resource) &&
      typeof claims.exp === 'number' &&
      claims.exp * 1000 > Date.now()
    );
  };

  http.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const path = new URL(req.url ?? '/', base).pathname;
    void (async () => {
      if (path === '/.well-known/oauth-protected-resource/mcp') {
        res.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            resource,
            authorization_servers: [issuer],
            scopes_supported: ['mcp:tools'],
            bearer_methods_supported: ['header'],
          }),
        );
        return;
      }
      if (path !== '/mcp') return void res.writeHead(404).end();
      const token = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '';
      if (!valid(token)) {
        state.unauthorized++;
        const error = token ? ', error="invalid_token"' : '';
        res
          .writeHead(401, {
            'www-authenticate': `Bearer resource_metadata="${metadataUrl}", scope="mcp:tools"${error}`,
            'content-type': 'application/json',
          })
          .end('{"error":"unauthorized"}');
        return;
      }
      accepted.push(token);
      const server = buildTestServer('oauth', log);
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      res.on(
        'close',
        () =>
          void transport
            .close()
            .then(() => server.close())
            .catch(() => undefined),
      );
      await server.connect(transport);
      await transport.handleRequest(req, res, req.method === 'POST' ? await body(req) : undefined);
    })().catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500).end(String(err));
    });
  });
  const state: ProtectedMcpServer = {
    url: resource,
    log,
    accepted,
    refused,
    unauthorized: 0,
    async close() {
      http.closeAllConnections();
      await new Promise<void>((r) => http.close(() => r()));
    },
  };
  return state;
}
