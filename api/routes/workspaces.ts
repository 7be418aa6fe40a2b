import type { FastifyInstance, FastifyReply } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Type from 'typebox';
import type { SessionClaims } from '../../app/identity.js';
import type { InviteDoc } from '../../projections/identity.js';
import {
  CreateInviteInputBody,
  CreateInviteOutputBody,
  CreateWorkspaceInputBody,
  CurrentWorkspaceDto,
  InviteListEnvelope,
  InviteListQuery,
  InviteLookupOutputBody,
  InviteTokenInputBody,
  RenameWorkspaceInputBody,
  SwitchedOutputBody,
  TransferWorkspaceInputBody,
  WorkspaceListOutputBody,
  type InviteDto,
} from '../../schemas/workspace.js';
import { IdParams } from '../../schemas/common.js';
import { principalOf, sessionClaimsOf } from '../auth.js';
import { requestContext } from '../context.js';
import { parseListQuery } from '../list-query.js';
import type { AppDeps } from '../deps.js';
import { sessionCookie } from './auth.js';

const inviteDto = (invite: InviteDoc, invitedBy: string | null): InviteDto => ({
  id: invite._id,
  email: invite.email,
  role: invite.role,
  invitedBy,
  createdAt: invite.createdAt,
  expiresAt: invite.expiresAt,
  expired: invite.expiresAt <= Date.now(),
});

/** Workspaces, the current workspace, and invites (docs/api.md, "Workspaces and members"). */
export default function workspaceRoutes(fastify: FastifyInstance, deps: AppDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const secure = deps.config.publicUrl.startsWith('https://');
  /** The session cookie again, for another workspace: the same sid and the same expiry. */
  const reissue = (reply: FastifyReply, claims: SessionClaims) =>
    reply.header(
      'Set-Cookie',
      sessionCookie(deps.identity.encodeSession(claims), Math.max(0, claims.exp - Date.now()), secure),
    );

  app.get(
    '/api/workspaces',
    {
      schema: {
        summary: 'List my workspaces',
        description: 'Every workspace the signed-in user is a member of, oldest membership first (at most 1000).',
        tags: ['workspace'],
        response: { 200: WorkspaceListOutputBody },
      },
    },
    async (request) => {
      const p = principalOf(request);
      const mine = await deps.queries.forPrincipal(p).identity.myWorkspaces();
      return {
        items: mine.map(({ workspace: w, role }) => ({
          id: w._id,
          name: w.name,
          role,
          ownerId: w.ownerId,
          createdAt: w.createdAt,
          current: w._id === p.workspaceId,
        })),
      };
    },
  );

  app.post(
    '/api/workspaces',
    {
      schema: {
        summary: 'Create a workspace',
        description: 'The caller owns it. The session stays where it is; switch to use it.',
        tags: ['workspace'],
        body: CreateWorkspaceInputBody,
        response: { 201: SwitchedOutputBody },
      },
    },
    async (request, reply) => {
      const p = principalOf(request);
      const workspaceId = await deps.workspaces.create(p, request.body.name, requestContext(request));
      return reply.status(201).send({ workspaceId });
    },
  );

  app.post(
    '/api/workspaces/:id/switch',
    {
      schema: {
        summary: 'Switch the session to another workspace',
        description:
          'Re-issues the session cookie for the workspace (the same session and expiry). The web app calls it for links that carry `?workspace=<id>`.',
        tags: ['workspace'],
        params: IdParams,
        response: { 200: SwitchedOutputBody },
      },
    },
    async (request, reply) => {
      const p = principalOf(request);
      const claims = await deps.workspaces.switchTo(
        p,
        sessionClaimsOf(request, deps.identity),
        request.params.id,
        requestContext(request),
      );
      reissue(reply, claims);
      return { workspaceId: claims.wid };
    },
  );

  app.get(
    '/api/workspace',
    {
      schema: {
        summary: 'The current workspace',
        tags: ['workspace'],
        response: { 200: CurrentWorkspaceDto },
      },
    },
    async (request) => {
      const p = principalOf(request);
      const { workspace: w, members } = await deps.queries.forPrincipal(p).identity.workspace();
      return { id: w._id, name: w.name, role: p.role, ownerId: w.ownerId, createdAt: w.createdAt, members };
    },
  );

  app.patch(
    '/api/workspace',
    {
      schema: {
        summary: 'Rename the current workspace',
        tags: ['workspace'],
        body: RenameWorkspaceInputBody,
        response: { 200: CurrentWorkspaceDto },
      },
    },
    async (request) => {
      const p = principalOf(request);
      await deps.workspaces.rename(p, request.body.name, requestContext(request));
      const { workspace: w, members } = await deps.queries.forPrincipal(p).identity.workspace();
      return { id: w._id, name: w.name, role: p.role, ownerId: w.ownerId, createdAt: w.createdAt, members };
    },
  );

  app.delete(
    '/api/workspace',
    {
      schema: {
        summary: 'Delete the current workspace',
        description:
          'Refused with 409 while runs are active. Every record of the workspace goes; its files are removed in the background. The session moves to another workspace of the caller.',
        tags: ['workspace'],
        response: { 200: SwitchedOutputBody },
      },
    },
    async (request, reply) => {
      const moved = await deps.workspaces.deleteCurrent(
        principalOf(request),
        sessionClaimsOf(request, deps.identity),
        requestContext(request),
      );
      reissue(reply, moved);
      return { workspaceId: moved.wid };
    },
  );

  app.post(
    '/api/workspace/transfer',
    {
      schema: {
        summary: 'Transfer the ownership of the current workspace',
        description: 'The member becomes the owner; the old owner becomes an admin.',
        tags: ['workspace'],
        body: TransferWorkspaceInputBody,
        response: { 204: Type.Null({ description: 'Transferred' }) },
      },
    },
    async (request, reply) => {
      await deps.workspaces.transfer(principalOf(request), request.body.userId, requestContext(request));
      return reply.status(204).send(null);
    },
  );

  app.post(
    '/api/workspace/leave',
    {
      schema: {
        summary: 'Leave the current workspace',
        description:
          'Not for the owner (transfer the ownership first). The session moves to another workspace of the caller, a new personal one when none is left.',
        tags: ['workspace'],
        response: { 200: SwitchedOutputBody },
      },
    },
    async (request, reply) => {
      const claims = await deps.workspaces.leave(
        principalOf(request),
        sessionClaimsOf(request, deps.identity),
        requestContext(request),
      );
      reissue(reply, claims);
      return { workspaceId: claims.wid };
    },
  );

  app.get(
    '/api/workspace/invites',
    {
      schema: {
        summary: 'List the pending invites of the current workspace',
        tags: ['workspace'],
        querystring: InviteListQuery,
        response: { 200: InviteListEnvelope },
      },
    },
    async (request) => {
      const p = principalOf(request);
      const list = parseListQuery(request.query, {
        sortKeys: { createdAt: 'createdAt', expiresAt: 'expiresAt', email: 'email' },
        defaultSort: '-createdAt',
        searchFields: [],
      });
      const { items, total } = await deps.queries.forPrincipal(p).identity.invites(list);
      return {
        items: items.map(({ invite, invitedBy }) => inviteDto(invite, invitedBy)),
        page: list.page,
        pageSize: list.pageSize,
        total,
      };
    },
  );

  app.post(
    '/api/workspace/invites',
    {
      schema: {
        summary: 'Invite someone to the current workspace',
        description:
          'With `email`, the person joins when they sign in with that verified address. Without it, the answer carries a link (`/invite/<token>`) shown this once.',
        tags: ['workspace'],
        body: CreateInviteInputBody,
        response: { 201: CreateInviteOutputBody },
      },
    },
    async (request, reply) => {
      const p = principalOf(request);
      const { inviteId, token } = await deps.workspaces.createInvite(p, request.body, requestContext(request));
      const created = await deps.queries.forPrincipal(p).identity.invite(inviteId);
      const base = deps.config.publicUrl || `${request.protocol}://${request.host}`;
      return reply.status(201).send({
        invite: inviteDto(created.invite, created.invitedBy),
        ...(request.body.email === undefined ? { url: `${base}/invite/${token}` } : {}),
      });
    },
  );

  app.delete(
    '/api/workspace/invites/:id',
    {
      schema: {
        summary: 'Revoke an invite',
        tags: ['workspace'],
        params: IdParams,
        response: { 204: Type.Null({ description: 'Revoked' }) },
      },
    },
    async (request, reply) => {
      await deps.workspaces.revokeInvite(principalOf(request), request.params.id, requestContext(request));
      return reply.status(204).send(null);
    },
  );

  app.post(
    '/api/invites/lookup',
    {
      schema: {
        summary: 'What an invite link leads to',
        description: 'For the page that asks to confirm an invite. An unknown, used or revoked token answers 404.',
        tags: ['workspace'],
        body: InviteTokenInputBody,
        response: { 200: InviteLookupOutputBody },
      },
    },
    async (request) => deps.queries.forPrincipal(principalOf(request)).identity.inviteLookup(request.body.token),
  );

  app.post(
    '/api/invites/accept',
    {
      schema: {
        summary: 'Accept an invite',
        description: "Joins the invite's workspace (an email invite only for its own address) and switches to it.",
        tags: ['workspace'],
        body: InviteTokenInputBody,
        response: { 200: SwitchedOutputBody },
      },
    },
    async (request, reply) => {
      const claims = await deps.workspaces.acceptInvite(
        principalOf(request),
        sessionClaimsOf(request, deps.identity),
        request.body.token,
        requestContext(request),
      );
      reissue(reply, claims);
      return { workspaceId: claims.wid };
    },
  );
}
