import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import Type from 'typebox';
import type { TextIndex } from '../../domain/text-search.js';
import { DomainError } from '../../domain/decider.js';
import { ignoreFailure } from '../../domain/ignore-failure.js';
import { principalOf } from '../auth.js';
import { requestContext } from '../context.js';
import type { AppDeps } from '../deps.js';
import { ApiError } from '../errors.js';
import { buildDocsIndex } from '../mcp/docs-index.js';
import { mcpServer } from '../mcp/server.js';
import type { OpenApiRegistry } from '../openapi.js';

const metadataPath = '/.well-known/oauth-protected-resource/api/mcp';
const maxBatch = 20;

/** The public address of this instance: the configured one, else the one the request came to. */
function baseUrl(deps: AppDeps, request: FastifyRequest): string {
  return deps.config.publicUrl || `${request.protocol}://${request.host}`;
}

/**
 * The service's own MCP server (docs/mcp-server.md): Streamable HTTP in stateless mode, one protocol server per
 * request, acting with the API token's principal through the same queries and services as the routes.
 */
export default function mcpRoutes(app: FastifyInstance, deps: AppDeps, openapi: OpenApiRegistry): void {
  let index: Promise<TextIndex> | null = null;
  const docs = () => (index ??= buildDocsIndex(openapi.document()));

  // RFC 9728: where a client learns how to authenticate to the endpoint. No authorization server is listed yet:
  // API tokens are the credential until the identity work offers OAuth (docs/mcp-server.md, "Authentication").
  app.get(metadataPath, async (request, reply) => {
    const base = baseUrl(deps, request);
    return reply.header('cache-control', 'public, max-age=3600').send({
      resource: `${base}/api/mcp`,
      resource_name: 'svc',
      bearer_methods_supported: ['header'],
      resource_documentation: `${base}/api/docs`,
    });
  });

  /** A 401 names the metadata document, so a client knows which credential to fetch (RFC 9728, section 5.1). */
  const challenge = (
    request: FastifyRequest,
    reply: FastifyReply,
    payload: unknown,
    done: (e: null, p: unknown) => void,
  ) => {
    if (reply.statusCode === 401) {
      const sent = request.headers.authorization !== undefined;
      void reply.header(
        'WWW-Authenticate',
        `Bearer resource_metadata="${baseUrl(deps, request)}${metadataPath}"${sent ? ', error="invalid_token"' : ''}`,
      );
    }
    done(null, payload);
  };

  app.post(
    '/api/mcp',
    {
      schema: {
        summary: 'The MCP server of this service (Streamable HTTP)',
        description:
          'JSON-RPC messages of the Model Context Protocol, stateless: every request stands alone. API tokens only (Authorization: Bearer svc_...); a 401 carries a WWW-Authenticate challenge naming /.well-known/oauth-protected-resource/api/mcp.',
        tags: ['mcp'],
        response: { 200: Type.Unknown({ description: 'A JSON-RPC answer' }) },
      },
      onSend: challenge,
    },
    async (request, reply) => {
      const principal = principalOf(request);
      // A batch is answered message by message, each a tool call: bounded like a list page, so one request cannot
      // queue thousands of calls (docs/mcp-server.md, "The endpoint").
      if (Array.isArray(request.body) && request.body.length > maxBatch)
        throw DomainError.validation([
          { field: 'body', code: 'too_long', message: `must hold at most ${maxBatch} messages` },
        ]);
      const server = await mcpServer(
        { deps, principal, command: requestContext(request), queries: deps.queries.forPrincipal(principal), docs },
        deps.version,
        request.log,
      );
      // Stateless with JSON answers: no session to keep between requests, no stream to hold open. Loaded at the first
      // request, like the server (docs/design.md, "The MCP SDK loaded at first use").
      const { StreamableHTTPServerTransport } = await import('@modelcontextprotocol/sdk/server/streamableHttp.js');
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      // The transport writes the answer itself; the headers every answer carries are copied onto it first.
      reply.hijack();
      for (const [name, value] of Object.entries(reply.getHeaders()))
        if (value !== undefined) reply.raw.setHeader(name, value);
      // Closing a stateless pair only drops its handlers: nothing is left to fail that anyone could act on.
      reply.raw.on('close', () => {
        transport.close().catch(ignoreFailure('a stateless transport holds no connection of its own'));
        server.close().catch(ignoreFailure('the server closes with its transport'));
      });
      try {
        await server.connect(transport);
        await transport.handleRequest(request.raw, reply.raw, request.body);
      } catch (err) {
        request.log.error({ err, requestId: request.id }, 'MCP request failed');
        if (!reply.raw.headersSent) {
          reply.raw.writeHead(500, { 'content-type': 'application/json; charset=utf-8' });
          reply.raw.end(
            JSON.stringify({ code: 'internal_error', message: 'Internal server error', requestId: request.id }),
          );
        }
      }
    },
  );

  // Stateless: there is no session to stream to (GET) or to end (DELETE). Clients read 405 as "not offered".
  const notOffered = async () => {
    throw new ApiError(405, 'method_not_allowed', 'This MCP server is stateless: send every message with POST', null, {
      Allow: 'POST',
    });
  };
  const documented = (method: string) => ({
    schema: {
      summary: `Not offered: ${method} on the MCP endpoint (405)`,
      description: 'The MCP server is stateless: there is no stream to open and no session to end.',
      tags: ['mcp'],
      response: {},
    },
  });
  app.get('/api/mcp', documented('GET'), notOffered);
  app.delete('/api/mcp', documented('DELETE'), notOffered);
}
