import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { InfoOutputBody } from '../../schemas/system.js';
import { MeOutputBody } from '../../schemas/user.js';
import { principalOf } from '../auth.js';
import type { AppDeps } from '../deps.js';

export default function systemRoutes(fastify: FastifyInstance, deps: AppDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const database = deps.queries.database();

  app.get(
    '/api/system/info',
    {
      schema: {
        summary: 'Version, database, sandbox backend and read-model health of this instance',
        tags: ['system'],
        response: { 200: InfoOutputBody },
      },
    },
    async (request) => {
      const sandbox = deps.sandbox();
      // Store errors can name internal details: the reason is for instance admins, the health for every member.
      const admin = principalOf(request).isAdmin;
      const projections = (await deps.engine.storedStatus()).map((s) => ({
        ...s,
        lastError: admin ? s.lastError : null,
      }));
      return {
        version: deps.version,
        database,
        allowPrivateNetworkTargets: deps.config.allowPrivateNetworkTargets,
        ...(sandbox ? { sandbox } : {}),
        projections,
        subscriptions: { ...deps.subscriptions(), ...(admin ? {} : { lastError: null }) },
      };
    },
  );

  app.get(
    '/api/users/me',
    {
      schema: {
        summary: 'The signed-in user (or the creator of the token) and the current workspace',
        tags: ['users'],
        response: { 200: MeOutputBody },
      },
    },
    async (request) => {
      const p = principalOf(request);
      const { user, workspace } = await deps.queries.forPrincipal(p).identity.me();
      return {
        id: user._id,
        email: user.email,
        name: user.name,
        picture: user.picture,
        isAdmin: user.isAdmin,
        ...(p.loginProvider ? { loginProvider: p.loginProvider } : {}),
        viaToken: p.kind === 'token',
        workspaceId: workspace._id,
        // Usage is shown as a price until the workspace settings offer a choice.
        workspace: { id: workspace._id, name: workspace.name, role: p.role, usageUnit: 'price' as const },
        workspacesEnabled: deps.config.workspacesEnabled,
      };
    },
  );
}
