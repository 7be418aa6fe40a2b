import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Type from 'typebox';
import type { TokenView } from '../../app/queries/index.js';
import { IdParams } from '../../schemas/common.js';
import {
  ApiTokenEnvelope,
  CreateTokenInputBody,
  CreateTokenOutputBody,
  TokenListQuery,
  type ApiTokenDto,
} from '../../schemas/token.js';
import { principalOf } from '../auth.js';
import { requestContext } from '../context.js';
import { parseListQuery } from '../list-query.js';
import type { AppDeps } from '../deps.js';

const toDto = ({ token: d, createdBy }: TokenView): ApiTokenDto => ({
  id: d._id,
  name: d.name,
  createdAt: d.createdAt,
  lastUsedAt: d.lastUsedAt,
  expiresAt: d.expiresAt,
  createdBy,
});

export default function tokenRoutes(fastify: FastifyInstance, deps: AppDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.get(
    '/api/tokens',
    {
      schema: {
        summary: 'List API tokens',
        description: 'Members see their own tokens; admins and owners see every token of the workspace.',
        tags: ['tokens'],
        querystring: TokenListQuery,
        response: { 200: ApiTokenEnvelope },
      },
    },
    async (request) => {
      const list = parseListQuery(request.query, {
        sortKeys: { createdAt: 'createdAt', name: 'name', lastUsedAt: 'lastUsedAt', expiresAt: 'expiresAt' },
        defaultSort: '-createdAt',
        searchFields: ['name'],
      });
      const { items, total } = await deps.queries.forPrincipal(principalOf(request)).identity.tokens(list);
      return { items: items.map(toDto), page: list.page, pageSize: list.pageSize, total };
    },
  );

  app.post(
    '/api/tokens',
    {
      schema: {
        summary: 'Create an API token',
        description: 'The token is shown once, in this answer. Needs a session.',
        tags: ['tokens'],
        body: CreateTokenInputBody,
        response: { 201: CreateTokenOutputBody },
      },
    },
    async (request, reply) => {
      const p = principalOf(request);
      const { token, tokenId, position } = await deps.identity.createApiToken(
        p,
        request.body.name,
        request.body.expiresAt ?? null,
        requestContext(request),
      );
      await deps.engine.readYourWrites(position);
      const apiToken = toDto(await deps.queries.forPrincipal(p).identity.token(tokenId));
      return reply.status(201).send({ token, apiToken });
    },
  );

  app.delete(
    '/api/tokens/:id',
    {
      schema: {
        summary: 'Delete an API token',
        description: 'Every later call with the token answers 401. Needs a session.',
        tags: ['tokens'],
        params: IdParams,
        response: { 204: Type.Null({ description: 'Deleted' }) },
      },
    },
    async (request, reply) => {
      const position = await deps.identity.deleteApiToken(
        principalOf(request),
        request.params.id,
        requestContext(request),
      );
      await deps.engine.readYourWrites(position);
      return reply.status(204).send(null);
    },
  );
}
