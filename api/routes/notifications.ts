import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { DomainError } from '../../domain/decider.js';
import { testNotificationBody, verdict } from '../../domain/notification.js';
import { NotificationTestResult } from '../../schemas/notification.js';
import { NotificationSender } from '../../app/notifications.js';
import { principalOf } from '../auth.js';
import { ApiError } from '../errors.js';
import type { AppDeps } from '../deps.js';

/**
 * `POST /api/settings/notifications/test` (docs/design.md, Notifications): one attempt, made by this API process and
 * answered directly, since a person is waiting for it; run notifications go through the runners' durable queue
 * instead.
 */
export default function notificationRoutes(fastify: FastifyInstance, deps: AppDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const sender = new NotificationSender(
    { settings: (ws) => deps.models.settingsFor(ws), secretValue: (ws, name) => deps.secrets.valueOf(ws, name) },
    { allowPrivateTargets: deps.config.allowPrivateNetworkTargets, version: deps.version },
  );

  app.post(
    '/api/settings/notifications/test',
    {
      schema: {
        summary: 'Send a test notification',
        description:
          'Posts `event: "test"` to the workspace webhook, signed like every notification when notifySecret is set. Without a webhook URL: 400 on notifyWebhookUrl. When the webhook does not take it (no answer, or not 2xx): 502 `webhook_error`.',
        tags: ['settings'],
        response: { 200: NotificationTestResult },
      },
    },
    async (request) => {
      const ws = principalOf(request).workspaceId;
      if (!(await deps.models.settingsFor(ws)).notifyWebhookUrl) {
        throw DomainError.validation([
          { field: 'notifyWebhookUrl', code: 'required', message: 'must be set to send a test notification' },
        ]);
      }
      const body = testNotificationBody(Date.now());
      const started = Date.now();
      const result = await sender.send(ws, body);
      const v = verdict(result);
      if (!v.delivered)
        throw new ApiError(502, 'webhook_error', `The webhook did not accept the notification: ${v.error}`);
      return { delivered: true as const, status: v.status, ms: Date.now() - started, body };
    },
  );
}
