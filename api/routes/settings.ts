import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { roleRank } from '../../domain/membership.js';
import { SettingsDto, SettingsPatch } from '../../schemas/settings.js';
import { principalOf } from '../auth.js';
import { requestContext } from '../context.js';
import type { AppDeps } from '../deps.js';

/**
 * What a member sees of the webhook URL: its origin only. The path and query of a webhook often carry its credential
 * (a chat service's hook key), which only those who may change the URL need (docs/design.md "Notifications").
 */
export function maskedWebhookUrl(url: string): string {
  try {
    const origin = new URL(url).origin;
    return origin === 'null' ? '…' : `${origin}/…`;
  } catch {
    return '…';
  }
}

/** Workspace settings: readable by members, changed by admins (docs/api.md). */
export default function settingsRoutes(fastify: FastifyInstance, deps: AppDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.get(
    '/api/settings',
    {
      schema: {
        summary: 'Workspace settings',
        description:
          'Every field with its effective value (defaults filled in). Members see notifyWebhookUrl masked to its origin (`https://hooks.example.com/…`); admins and the owner see it whole.',
        tags: ['settings'],
        response: { 200: SettingsDto },
      },
    },
    async (request) => {
      const p = principalOf(request);
      const settings = await deps.settings.read(p.workspaceId);
      if (roleRank[p.role] >= roleRank.admin || settings.notifyWebhookUrl === null) return settings;
      return { ...settings, notifyWebhookUrl: maskedWebhookUrl(settings.notifyWebhookUrl) };
    },
  );

  app.patch(
    '/api/settings',
    {
      schema: {
        summary: 'Change workspace settings',
        description:
          'Only the fields given change. Default models must be enabled, listed models of the workspace; null unsets one. An empty defaultImage resets it to the server default. defaultLimits are merged field by field. An empty notifyWebhookUrl turns notifications off; a URL naming a loopback or private address is refused unless the operator allows private targets, one naming a link-local or metadata address always; notifySecret names a workspace secret (empty: unsigned).',
        tags: ['settings'],
        body: SettingsPatch,
        response: { 200: SettingsDto },
      },
    },
    async (request) => {
      return deps.settings.change(requestContext(request), principalOf(request).workspaceId, request.body);
    },
  );
}
