import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { SettingsDto, SettingsPatch } from '../../schemas/settings.js';
import { principalOf } from '../auth.js';
import { requestContext } from '../context.js';
import type { AppDeps } from '../deps.js';

/** Workspace settings (BEHAVIOUR §9.2): readable by members, changed by admins. */
export default function settingsRoutes(fastify: FastifyInstance, deps: AppDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.get('/api/settings', { schema: { summary: 'Workspace settings', description: 'Every field with its effective value (defaults filled in).', tags: ['settings'], response: { 200: SettingsDto } } }, async (request) =>
    deps.models.settingsFor(principalOf(request).workspaceId));

  app.patch('/api/settings', {
    schema: {
      summary: 'Change workspace settings',
      description:
        'Only the fields given change. Default models must be enabled, listed models of the workspace; null unsets one. An empty defaultImage resets it to the server default. defaultLimits are merged field by field. An empty notifyWebhookUrl turns notifications off; notifySecret names a workspace secret (empty: unsigned).',
      tags: ['settings'],
      body: SettingsPatch,
      response: { 200: SettingsDto },
    },
  }, async (request) => {
    const p = principalOf(request);
    const secretName = request.body.notifySecret?.trim();
    const found = secretName ? await deps.secrets.byName(p.workspaceId, secretName) : null;
    return deps.models.changeSettings(requestContext(request), p.workspaceId, request.body, found ? [found.name] : []);
  });
}
