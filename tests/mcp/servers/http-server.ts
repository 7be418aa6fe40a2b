import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { buildTestServer, type ServerLog } from './tools.js';

export interface TestHttpServer {
  /** Streamable HTTP endpoint. */
  url: string;
  /** An endpoint that speaks only the older HTTP+SSE transport. */
  sseUrl: string;
  /** Answers 401 with a challenge unless the bearer token is sent. */
  protectedUrl: string;
  /** Accepts connections and never answers. */
  hangUrl: string;
  log: ServerLog;
  /** Authorization headers the protected endpoint saw. */
  authorizations: string[];
  close(): Promise<void>;
}

async function body(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  return text ? (JSON.parse(text) as unknown) : undefined;
}

/**
 * A real MCP server over HTTP on loopback, built with the SDK: Streamable HTTP (stateless, a server per request as the
 * SDK documents), the legacy SSE transport on its own path, a bearer-protected path and a path that hangs.
 */
export async function startHttpMcpServer(
  options: { token?: string; extraTools?: number } = {},
): Promise<TestHttpServer> {
  const log: ServerLog = { notes: [] };
  const authorizations: string[] = [];
  const sse = new Map<string, SSEServerTransport>();
  const token = options.token ?? 'test-bearer';
  const streamable = async (req: IncomingMessage, res: ServerResponse) => {
    const server = buildTestServer('http', log, options);
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
  };
  const http = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    void (async () => {
      if (path === '/mcp') return streamable(req, res);
      if (path === '/protected') {
        authorizations.push(req.headers.authorization ?? '');
        if (req.headers.authorization !== `Bearer ${token}`) {
          res
            .writeHead(401, { 'www-authenticate': 'Bearer realm="test"', 'content-type': 'application/json' })
            .end('{"error":"unauthorized"}');
          return;
        }
        return streamable(req, res);
      }
      if (path === '/hang') return; // never answers
      if (path === '/sse' && req.method === 'GET') {
        const server = buildTestServer('sse', log, options);
        const transport = new SSEServerTransport('/messages', res);
        sse.set(transport.sessionId, transport);
        res.on('close', () => sse.delete(transport.sessionId));
        await server.connect(transport);
        return;
      }
      if (path === '/messages' && req.method === 'POST') {
        const t = sse.get(new URL(req.url ?? '/', 'http://x').searchParams.get('sessionId') ?? '');
        if (!t) return void res.writeHead(404).end();
        return t.handlePostMessage(req, res, await body(req));
      }
      res.writeHead(405, { allow: 'GET' }).end();
    })().catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500).end(String(err));
    });
  });
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  return {
    url: `${base}/mcp`,
    sseUrl: `${base}/sse`,
    protectedUrl: `${base}/protected`,
    hangUrl: `${base}/hang`,
    log,
    authorizations,
    async close() {
      http.closeAllConnections();
      await new Promise<void>((r) => http.close(() => r()));
    },
  };
}
