import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Type from 'typebox';
import type { UserDoc } from '../../projections/identity.js';
import { IdParams } from '../../schemas/common.js';
import { CreateSignInLinkInputBody, SignInLinkOutputBody } from '../../schemas/user.js';
import {
  AdminListQuery,
  AdminUserDto,
  AdminUserListEnvelope,
  AdminWorkspaceListEnvelope,
  UpdateAdminUserInputBody,
} from '../../schemas/workspace.js';
import { principalOf } from '../auth.js';
import { parseListQuery } from '../list-query.js';
import { requestContext } from '../context.js';
import type { AppDeps } from '../deps.js';

const userDto = (u: UserDoc): AdminUserDto => ({
  id: u._id,
  email: u.email,
  name: u.name,
  picture: u.picture,
  provider: u.provider,
  isAdmin: u.isAdmin,
  deactivated: u.deactivated,
  createdAt: u.createdAt,
  lastLoginAt: u.lastLoginAt,
});

/** The instance admin area (docs/api.md, "Workspaces and members"): instance admins with a session only. */
export default function adminRoutes(fastify: FastifyInstance, deps: AppDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.post(
    '/api/admin/sign-in-links',
    {
      schema: {
        summary: 'Create a single-use sign-in link for a person',
        description:
          'The person signs in as the user with this email (created on first use) and joins the default workspace. Instance admins only, with a session.',
        tags: ['admin'],
        body: CreateSignInLinkInputBody,
        response: { 201: SignInLinkOutputBody },
      },
    },
    async (request, reply) => {
      const path = await deps.identity.issueSignInLink(
        request.body.email,
        request.body.admin ?? false,
        requestContext(request),
      );
      const base = deps.config.publicUrl || `${request.protocol}://${request.host}`;
      return reply.status(201).send({ url: `${base}${path}` });
    },
  );

  app.get(
    '/api/admin/users',
    {
      schema: {
        summary: 'List every user of the instance',
        tags: ['admin'],
        querystring: AdminListQuery,
        response: { 200: AdminUserListEnvelope },
      },
    },
    async (request) => {
      const list = parseListQuery(request.query, {
        sortKeys: { createdAt: 'createdAt', lastLoginAt: 'lastLoginAt', email: 'email', name: 'name' },
        defaultSort: 'createdAt',
        searchFields: ['email', 'name'],
      });
      const { items, total } = await deps.queries.forPrincipal(principalOf(request)).identity.allUsers(list);
      return { items: items.map(userDto), page: list.page, pageSize: list.pageSize, total };
    },
  );

  app.patch(
    '/api/admin/users/:id',
    {
      schema: {
        summary: 'Deactivate or reactivate a user, or set the instance admin flag',
        description:
          'A deactivation signs the user out everywhere at once, stops their API tokens and revokes the invites they created.',
        tags: ['admin'],
        params: IdParams,
        body: UpdateAdminUserInputBody,
        response: { 200: AdminUserDto },
      },
    },
    async (request) => {
      const p = principalOf(request);
      await deps.workspaces.updateUser(p, request.params.id, request.body, requestContext(request));
      return userDto(await deps.queries.forPrincipal(p).identity.user(request.params.id));
    },
  );

  app.get(
    '/api/admin/workspaces',
    {
      schema: {
        summary: 'List every workspace of the instance',
        tags: ['admin'],
        querystring: AdminListQuery,
        response: { 200: AdminWorkspaceListEnvelope },
      },
    },
    async (request) => {
      const list = parseListQuery(request.query, {
        sortKeys: { createdAt: 'createdAt', name: 'name' },
        defaultSort: 'createdAt',
        searchFields: ['name'],
      });
      const { items, total } = await deps.queries.forPrincipal(principalOf(request)).identity.allWorkspaces(list);
      return {
        items: items.map(({ workspace: w, owner, members }) => ({
          id: w._id,
          name: w.name,
          ownerId: w.ownerId,
          owner: owner ? (owner.name ?? owner.email) : null,
          members,
          createdAt: w.createdAt,
        })),
        page: list.page,
        pageSize: list.pageSize,
        total,
      };
    },
  );

  app.delete(
    '/api/admin/workspaces/:id',
    {
      schema: {
        summary: 'Delete any workspace',
        description: 'As the owner would: refused with 409 while runs are active; Default cannot be deleted.',
        tags: ['admin'],
        params: IdParams,
        response: { 204: Type.Null({ description: 'Deleted' }) },
      },
    },
    async (request, reply) => {
      await deps.workspaces.deleteWorkspace(request.params.id, requestContext(request));
      return reply.status(204).send(null);
    },
  );
}
