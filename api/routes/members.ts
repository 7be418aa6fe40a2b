import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Type from 'typebox';
import { DomainError } from '../../domain/decider.js';
import type { MemberView } from '../../app/queries/index.js';
import { MemberDto, MemberListEnvelope, MemberListQuery, UpdateMemberInputBody } from '../../schemas/user.js';
import { principalOf } from '../auth.js';
import { requestContext } from '../context.js';
import { parseListQuery } from '../list-query.js';
import type { AppDeps } from '../deps.js';

const toDto = ({ member: m, user: u }: MemberView): MemberDto => ({
  userId: m.userId,
  name: u?.name ?? null,
  email: u?.email ?? null,
  picture: u?.picture ?? null,
  role: m.role,
  joinedAt: m.joinedAt,
  lastLoginAt: u?.lastLoginAt ?? null,
  deactivated: u?.deactivated ?? false,
});

export default function memberRoutes(fastify: FastifyInstance, deps: AppDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.get(
    '/api/workspace/members',
    {
      schema: {
        summary: 'List the members of the current workspace',
        tags: ['workspace'],
        querystring: MemberListQuery,
        response: { 200: MemberListEnvelope },
      },
    },
    async (request) => {
      const p = principalOf(request);
      const list = parseListQuery(request.query, {
        sortKeys: { joinedAt: 'joinedAt', role: 'role' },
        defaultSort: 'joinedAt',
        searchFields: [],
      });
      if (list.search)
        throw DomainError.validation([{ field: 'search', code: 'invalid', message: 'is not supported on this list' }]);
      const { items, total } = await deps.queries.forPrincipal(p).identity.members(list);
      return { items: items.map(toDto), page: list.page, pageSize: list.pageSize, total };
    },
  );

  app.patch(
    '/api/workspace/members/:userId',
    {
      schema: {
        summary: "Change a member's role",
        description:
          'Admins can make another member an admin or a member; the owner keeps their role until a transfer.',
        tags: ['workspace'],
        params: Type.Object({ userId: Type.String({ minLength: 1, maxLength: 100 }) }, { additionalProperties: false }),
        body: UpdateMemberInputBody,
        response: { 200: MemberDto },
      },
    },
    async (request) => {
      const p = principalOf(request);
      await deps.workspaces.changeRole(p, request.params.userId, request.body.role, requestContext(request));
      return toDto(await deps.queries.forPrincipal(p).identity.member(request.params.userId));
    },
  );

  app.delete(
    '/api/workspace/members/:userId',
    {
      schema: {
        summary: 'Remove a member from the current workspace',
        description:
          'Not the owner. Their sessions in the workspace end and the invites they created are revoked. Refused (403) while workspaces are disabled: deactivate the user instead.',
        tags: ['workspace'],
        params: Type.Object({ userId: Type.String({ minLength: 1, maxLength: 100 }) }, { additionalProperties: false }),
        response: { 204: Type.Null({ description: 'Removed' }) },
      },
    },
    async (request, reply) => {
      await deps.workspaces.removeMember(principalOf(request), request.params.userId, requestContext(request));
      return reply.status(204).send(null);
    },
  );
}
