import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { FetchLike, Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { McpServerConfig, McpToolInfo } from '../../domain/mcp-server.js';
import { renderToolResult } from '../../domain/mcp-result.js';
import type { Sandbox } from '../sandbox/types.js';
import { AddressRefused } from '../egress/guarded-fetch.js';
import { bearerFetch, type BearerSource } from './oauth-fetch.js';
import { SandboxStdioTransport } from './sandbox-stdio.js';
import { ignoreFailure } from '../../domain/ignore-failure.js';

/**
 * A server's config with every `{{secret:NAME}}` replaced by its value: it exists only in memory, on the host.
 * `bearer` hands out the access tokens of a stored OAuth login (adapters/mcp/oauth-fetch.ts).
 */
export type ResolvedConfig = McpServerConfig & { bearer?: BearerSource };

export interface ConnectOptions {
  /** For stdio servers: the sandbox the server runs in. */
  sandbox: Sandbox | null;
  /** For HTTP servers: the guarded fetch (adapters/egress/guarded-fetch.ts). */
  fetch: FetchLike;
  /** Connecting and listing, and each call: a server that hangs fails within these. */
  connectTimeoutMs?: number;
  callTimeoutMs?: number;
}

/** A refusal worth telling apart: the server wants a login (HTTP 401). */
export class LoginRequired extends Error {
  constructor(readonly challenge: string | null) {
    super('login required: the server answered 401 Unauthorized');
    this.name = 'LoginRequired';
  }
}

/** The server accepted the connection and never answered: trying the older transport would only wait again. */
class NoAnswer extends Error {}

/**
 * The SDK's client, its transports and its zod schemas are loaded at the first connection, not at start: a service
 * that never uses MCP never pays their memory (docs/design.md, "The MCP SDK loaded at first use").
 */
async function clientSdk() {
  const [{ Client }, { SSEClientTransport }, { StreamableHTTPClientTransport }] = await Promise.all([
    import('@modelcontextprotocol/sdk/client/index.js'),
    import('@modelcontextprotocol/sdk/client/sse.js'),
    import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
  ]);
  return { Client, SSEClientTransport, StreamableHTTPClientTransport };
}

const maxPages = 100;
const clientInfo = { name: 'svc', version: '1' };

/** The server's `tools/list`, every page (at most 100, stopping at a repeated cursor), names deduplicated. */
async function listAll(client: Client, timeout: number): Promise<McpToolInfo[]> {
  const tools = new Map<string, McpToolInfo>();
  const cursors = new Set<string>();
  let cursor: string | undefined;
  for (let page = 0; page < maxPages; page++) {
    const answer = await client.listTools(cursor ? { cursor } : {}, { timeout });
    for (const t of answer.tools) {
      if (tools.has(t.name)) continue;
      const schema =
        t.inputSchema && typeof t.inputSchema === 'object'
          ? (t.inputSchema as Record<string, unknown>)
          : { type: 'object', properties: {} };
      tools.set(t.name, {
        name: t.name,
        description: t.description ?? '',
        inputSchema: schema,
        readOnly: t.annotations?.readOnlyHint === true,
        destructive: t.annotations?.destructiveHint !== false,
      });
    }
    cursor = answer.nextCursor;
    if (!cursor || cursors.has(cursor)) break;
    cursors.add(cursor);
  }
  return [...tools.values()];
}

/** Why closing a client whose connect failed is best effort: the caller must see the connect error, not this one. */
const connectFailed = 'the connect error is the one to report';

function status401(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown; name?: unknown };
  return (
    e?.code === 401 || e?.name === 'UnauthorizedError' || (typeof e?.message === 'string' && /\b401\b/.test(e.message))
  );
}

function describe(err: unknown): string {
  const e = err as Error & { cause?: unknown };
  const cause = e?.cause instanceof Error ? `: ${e.cause.message}` : '';
  return `${e?.message ?? String(err)}${cause}`;
}

/** One open connection to one server, for a run or for a test. */
export class McpConnection {
  private constructor(
    readonly config: ResolvedConfig,
    readonly kind: 'HTTP' | 'SSE' | 'stdio',
    private readonly client: Client,
    readonly tools: McpToolInfo[],
    private readonly callTimeoutMs: number,
  ) {}

  /** Connects, initializes and lists the tools; throws with a message a person can act on. */
  static async open(config: ResolvedConfig, options: ConnectOptions): Promise<McpConnection> {
    const timeout = options.connectTimeoutMs ?? 30_000;
    const callTimeout = options.callTimeoutMs ?? 60_000;
    const { Client, SSEClientTransport, StreamableHTTPClientTransport } = await clientSdk();
    if (config.transport === 'stdio') {
      if (!options.sandbox) throw new Error('a stdio server runs inside a sandbox, and none is available here');
      const transport = new SandboxStdioTransport({
        sandbox: options.sandbox,
        command: config.command ?? '',
        args: config.args,
        env: config.env,
      });
      const client = new Client(clientInfo);
      try {
        await client.connect(transport, { timeout });
        return new McpConnection(config, 'stdio', client, await listAll(client, timeout), callTimeout);
      } catch (err) {
        await client.close().catch(ignoreFailure(connectFailed));
        await new Promise((r) => setTimeout(r, 50));
        const exit = transport.exit;
        const why = exit
          ? ` (the server exited with status ${exit.code}${exit.stderr ? `; its stderr ends with:\n${exit.stderr}` : ''})`
          : '';
        throw new Error(`could not start ${config.command}: ${describe(err)}${why}`);
      }
    }

    const url = new URL(config.url ?? '');
    const requestInit: RequestInit = { headers: config.headers };
    const fetch = config.bearer ? bearerFetch(options.fetch, config.bearer) : options.fetch;
    const attempt = async (transport: Transport, kind: 'HTTP' | 'SSE') => {
      const client = new Client(clientInfo);
      let timer: NodeJS.Timeout | undefined;
      // The SDK times out requests, but not the wait for the SSE stream's first event: one deadline covers it all.
      const deadline = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new NoAnswer(`${url.host} did not answer within ${Math.round(timeout / 1000)} s`)),
          timeout,
        );
      });
      try {
        const open = (async () => {
          await client.connect(transport, { timeout });
          return new McpConnection(config, kind, client, await listAll(client, timeout), callTimeout);
        })();
        // No catch of `open` is needed: the race handles its rejection even when the deadline wins.
        return await Promise.race([open, deadline]);
      } catch (err) {
        await client.close().catch(ignoreFailure(connectFailed));
        throw err;
      } finally {
        clearTimeout(timer);
      }
    };
    try {
      return await attempt(new StreamableHTTPClientTransport(url, { requestInit, fetch }), 'HTTP');
    } catch (first) {
      if (first instanceof AddressRefused || (first as Error)?.cause instanceof AddressRefused) throw first;
      if (status401(first)) throw new LoginRequired(null);
      if (first instanceof NoAnswer)
        throw new Error(`could not connect to ${url.origin}${url.pathname}: ${first.message}`);
      // Servers of the older protocol answer the Streamable POST with 4xx; they speak SSE.
      try {
        return await attempt(new SSEClientTransport(url, { requestInit, fetch }), 'SSE');
      } catch (second) {
        if (status401(second)) throw new LoginRequired(null);
        throw new Error(
          `could not connect to ${url.origin}${url.pathname}: ${describe(first)} (and over the older SSE transport: ${describe(second)})`,
        );
      }
    }
  }

  /** Calls a tool; a protocol error or a timeout comes back as an error result, not a throw. */
  async call(tool: string, args: unknown, signal?: AbortSignal): Promise<{ output: string; isError: boolean }> {
    try {
      const result = await this.client.callTool(
        { name: tool, arguments: (args ?? {}) as Record<string, unknown> },
        undefined,
        { timeout: this.callTimeoutMs, ...(signal ? { signal } : {}) },
      );
      return renderToolResult(result);
    } catch (err) {
      return {
        output: `The MCP server ${this.config.name} failed the call of ${tool}: ${describe(err)}`,
        isError: true,
      };
    }
  }

  async close(): Promise<void> {
    await this.client
      .close()
      .catch(ignoreFailure('a stdio server ends with its sandbox, a remote one forgets an idle session'));
  }
}
