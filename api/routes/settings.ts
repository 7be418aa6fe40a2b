import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { DomainError } from '../../domain/decider.js';
import { SettingsDto, SettingsPatch } from '../../schemas/settings.js';
import { webhookUrlRefusal } from '../../server/notifications.js';
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
        'Only the fields given change. Default models must be enabled, listed models of the workspace; null unsets one. An empty defaultImage resets it to the server default. defaultLimits are merged field by field. An empty notifyWebhookUrl turns notifications off; a URL naming a loopback or private address is refused unless the operator allows private targets, one naming a link-local or metadata address always; notifySecret names a workspace secret (empty: unsigned).',
      tags: ['settings'],
      body: SettingsPatch,
      response: { 200: SettingsDto },
    },
  }, async (request) => {
    const p = principalOf(request);
    // The egress guard judges the webhook URL at save as far as its name allows, and again when it is dialled.
    const refusal = request.body.notifyWebhookUrl ? webhookUrlRefusal(request.body.notifyWebhookUrl.trim(), deps.config.allowPrivateNetworkTargets) : null;
    if (refusal) throw DomainError.validation([{ field: 'notifyWebhookUrl', code: 'not_allowed', message: refusal }]);
    const secretName = request.body.notifySecret?.trim();
    const found = secretName ? await deps.secrets.byName(p.workspaceId, secretName) : null;
    return deps.models.changeSettings(requestContext(request), p.workspaceId, request.body, found ? [found.name] : []);
  });
}
