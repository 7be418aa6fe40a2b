import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Type from 'typebox';
import { OauthStepFailed } from '../../adapters/mcp/oauth-flow.js';
import { IdParams } from '../../schemas/common.js';
import { LoginOutputBody, OauthCallbackQuery } from '../../schemas/mcp.js';
import { principalOf } from '../auth.js';
import { requestContext } from '../context.js';
import type { AppDeps } from '../deps.js';
import { ApiError } from '../errors.js';

const tags = ['mcp'];

/** OAuth logins of HTTP MCP servers: start, the browser's return, logout (docs/design.md, MCP OAuth). */
export default function mcpOauthRoutes(fastify: FastifyInstance, deps: AppDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const mcp = deps.mcp;

  app.post(
    '/api/mcp-servers/:id/oauth/login',
    {
      schema: {
        summary: 'Start an OAuth login to an MCP server',
        description:
          "Session only. Discovers the authorization server from the MCP server's 401 challenge and metadata, registers a client unless a client id is configured, and answers the URL to send the browser to (PKCE S256, `resource`). The login must be finished within 10 minutes by the same user.",
        tags,
        params: IdParams,
        response: { 200: LoginOutputBody },
      },
    },
    async (request) => {
      const p = principalOf(request);
      try {
        return {
          authorizationUrl: await mcp.startLogin(requestContext(request), p.workspaceId, p.userId, request.params.id),
        };
      } catch (err) {
        // The authorization server's refusal, said as it said it: the operator has to act on it (e.g. set a client id).
        if (err instanceof OauthStepFailed) throw new ApiError(502, 'oauth_error', err.message);
        throw err;
      }
    },
  );

  app.get(
    '/api/mcp-servers/:id/oauth/callback',
    {
      schema: {
        summary: 'Return from the authorization server',
        description:
          'The redirect URI of every login. It needs no API credential: the `state` bound to the pending login, and to the signed-in user who started it, is what authorizes it. Redirects to `/mcp` with `login=ok`, or with `error` (such as `access_denied` or `invalid_state`).',
        tags,
        params: IdParams,
        querystring: OauthCallbackQuery,
        response: {
          302: Type.Null({
            description: 'Back to /mcp, or once more to the authorization server after `invalid_scope`',
          }),
        },
      },
    },
    async (request, reply) => {
      const p = request.principal;
      const userId = p && p.kind === 'session' ? p.userId : null;
      const location = await mcp.finishLogin(requestContext(request), request.params.id, userId, request.query);
      return reply.header('cache-control', 'no-store').redirect(location, 302);
    },
  );

  app.delete(
    '/api/mcp-servers/:id/oauth',
    {
      schema: {
        summary: 'Log out of an MCP server',
        description: 'Forgets the stored tokens; runs connect without them from then on.',
        tags,
        params: IdParams,
        response: { 204: Type.Null() },
      },
    },
    async (request, reply) => {
      await mcp.logout(requestContext(request), principalOf(request).workspaceId, request.params.id);
      return reply.status(204).send(null);
    },
  );
}
