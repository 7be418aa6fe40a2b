import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Type from 'typebox';
import { DomainError } from '../../domain/decider.js';
import { membershipDecider, membershipStreamId } from '../../domain/membership.js';
import type { MemberDoc, UserDoc } from '../../projections/identity.js';
import { memberId } from '../../projections/identity.js';
import { MemberDto, MemberListEnvelope, MemberListQuery, UpdateMemberInputBody } from '../../schemas/user.js';
import { principalOf } from '../auth.js';
import { requestContext } from '../context.js';
import { parseListQuery } from '../list-query.js';
import type { AppDeps } from '../deps.js';

export default function memberRoutes(fastify: FastifyInstance, deps: AppDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const members = () => deps.stores.docs.collection<MemberDoc>('members');
  const users = () => deps.stores.docs.collection<UserDoc>('users');

  async function toDtos(docs: MemberDoc[]): Promise<MemberDto[]> {
    const found = docs.length === 0 ? [] : await users().find({ _id: { $in: docs.map((m) => m.userId) } });
    const byId = new Map(found.map((u) => [u._id, u]));
    return docs.map((m) => {
      const u = byId.get(m.userId);
      return {
        userId: m.userId,
        name: u?.name ?? null,
        email: u?.email ?? null,
        picture: u?.picture ?? null,
        role: m.role,
        joinedAt: m.joinedAt,
        lastLoginAt: u?.lastLoginAt ?? null,
        deactivated: u?.deactivated ?? false,
      };
    });
  }

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
      const filter = { workspaceId: p.workspaceId };
      const [docs, total] = await Promise.all([members().find(filter, list.find), members().count(filter)]);
      return { items: await toDtos(docs), page: list.page, pageSize: list.pageSize, total };
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
      const target = await members().findOne({ _id: memberId(p.workspaceId, request.params.userId) });
      if (!target) throw DomainError.notFound('Member');
      if (target.role === 'owner')
        throw new DomainError('forbidden', "The owner's role can only change through an ownership transfer");
      const r = await deps.bus.execute(
        membershipStreamId(p.workspaceId, target.userId),
        membershipDecider,
        { type: 'ChangeRole', role: request.body.role, now: Date.now() },
        requestContext(request),
      );
      await deps.engine.waitFor(r.position);
      const updated = await members().findOne({ _id: target._id });
      const [dto] = await toDtos(updated ? [updated] : []);
      if (!dto) throw DomainError.notFound('Member');
      return dto;
    },
  );
}
