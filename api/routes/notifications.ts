import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { NotificationTestResult } from '../../schemas/notification.js';
import { NotificationFailed } from '../../app/workspace-settings.js';
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
      try {
        return { delivered: true as const, ...(await deps.settings.sendTest(principalOf(request).workspaceId)) };
      } catch (err) {
        if (err instanceof NotificationFailed) throw new ApiError(502, 'webhook_error', err.message);
        throw err;
      }
    },
  );
}
