import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Type from 'typebox';
import { DomainError } from '../../domain/decider.js';
import { apiTokenDecider, apiTokenStreamId } from '../../domain/api-token.js';
import type { ApiTokenDoc, UserDoc } from '../../projections/identity.js';
import { IdParams } from '../../schemas/common.js';
import {
  ApiTokenEnvelope,
  CreateTokenInputBody,
  CreateTokenOutputBody,
  TokenListQuery,
  type ApiTokenDto,
} from '../../schemas/token.js';
import type { Filter } from '../../store/document-store.js';
import { principalOf } from '../auth.js';
import { requestContext } from '../context.js';
import { parseListQuery } from '../list-query.js';
import type { AppDeps } from '../deps.js';
import type { Principal } from '../principal.js';

const canSeeAll = (p: Principal) => p.role === 'admin' || p.role === 'owner';

export default function tokenRoutes(fastify: FastifyInstance, deps: AppDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const tokens = () => deps.stores.docs.collection<ApiTokenDoc>('api_tokens');

  async function toDtos(docs: ApiTokenDoc[]): Promise<ApiTokenDto[]> {
    const userIds = [...new Set(docs.map((d) => d.userId))];
    const users =
      userIds.length === 0 ? [] : await deps.stores.docs.collection<UserDoc>('users').find({ _id: { $in: userIds } });
    const byId = new Map(users.map((u) => [u._id, u.name ?? u.email]));
    return docs.map((d) => ({
      id: d._id,
      name: d.name,
      createdAt: d.createdAt,
      lastUsedAt: d.lastUsedAt,
      expiresAt: d.expiresAt,
      createdBy: byId.get(d.userId) ?? null,
    }));
  }

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
      const p = principalOf(request);
      const list = parseListQuery(request.query, {
        sortKeys: { createdAt: 'createdAt', name: 'name', lastUsedAt: 'lastUsedAt', expiresAt: 'expiresAt' },
        defaultSort: '-createdAt',
        searchFields: ['name'],
      });
      const filter: Filter = { workspaceId: p.workspaceId };
      if (!canSeeAll(p)) filter.userId = p.userId;
      const [docs, total] = await Promise.all([
        tokens().find(filter, list.find),
        tokens().count(filter, { search: list.search }),
      ]);
      return { items: await toDtos(docs), page: list.page, pageSize: list.pageSize, total };
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
      await deps.engine.waitFor(position);
      const doc = await tokens().findOne({ _id: tokenId });
      if (!doc) throw new Error('token not projected in time');
      const [apiToken] = await toDtos([doc]);
      return reply.status(201).send({ token, apiToken: apiToken! });
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
      const p = principalOf(request);
      const doc = await tokens().findOne({ _id: request.params.id, workspaceId: p.workspaceId });
      // A member cannot even learn that someone else's token exists.
      if (!doc || (!canSeeAll(p) && doc.userId !== p.userId)) throw DomainError.notFound('API token');
      const r = await deps.bus.execute(
        apiTokenStreamId(doc._id),
        apiTokenDecider,
        { type: 'DeleteApiToken', now: Date.now() },
        requestContext(request),
      );
      await deps.engine.waitFor(r.position);
      return reply.status(204).send(null);
    },
  );
}
