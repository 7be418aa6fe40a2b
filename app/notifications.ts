import { createHmac } from 'node:crypto';
import { outboundUrlRefusal } from '../adapters/egress/address-guard.js';
import {
  eventHeader,
  notificationTimeoutMs,
  productName,
  signatureHeader,
  type AttemptResult,
} from '../domain/notification.js';
import type { NotificationBody } from '../schemas/notification.js';
import type { SettingsDto } from '../schemas/settings.js';
import { AddressRefused, guardedFetch } from '../adapters/egress/guarded-fetch.js';

/** What a delivery reads, on every attempt: the settings as they are now and the signing secret's value. */
export interface NotificationSources {
  settings(workspaceId: string): Promise<Pick<SettingsDto, 'notifyWebhookUrl' | 'notifySecret'>>;
  /** The opened value of a workspace secret by name, or null when there is none. */
  secretValue(workspaceId: string, name: string): Promise<string | null>;
}

export interface SenderOptions {
  /** SVC_ALLOW_PRIVATE_NETWORK_TARGETS: webhooks on private networks and on this host may be reached. */
  allowPrivateTargets: boolean;
  version: string;
}

/** Why the egress guard refuses `url` as a webhook at save, or null: the host's one outbound URL rule. */
export function webhookUrlRefusal(url: string, allowPrivateTargets: boolean): string | null {
  return outboundUrlRefusal(url, allowPrivateTargets);
}

/** The signature header's value: `sha256=` and the hex HMAC-SHA256 of the exact body bytes. */
export const signature = (secret: string, body: string) =>
  `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;

/** A short, single-line excerpt of what a webhook answered, for logs and the test route's message. */
async function answerExcerpt(res: Response): Promise<string> {
  const text = await res.text().catch(() => '');
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length <= 200 ? line : `${line.slice(0, 200)}…`;
}

/**
 * Posts notification bodies to the workspace's webhook from the host, through the egress guard (loopback and
 * private targets only with SVC_ALLOW_PRIVATE_NETWORK_TARGETS; link-local and metadata never). Redirects are not
 * followed: a 3xx is an answer like any other non-2xx.
 */
export class NotificationSender {
  private readonly fetch;
  private readonly userAgent: string;

  constructor(
    private readonly sources: NotificationSources,
    options: SenderOptions,
  ) {
    this.fetch = guardedFetch(options.allowPrivateTargets, notificationTimeoutMs);
    this.userAgent = `${productName}/${options.version}`;
  }

  /** One attempt, never throwing: the result says what happened, `verdict` what it means. */
  async send(workspaceId: string, body: NotificationBody): Promise<AttemptResult> {
    const settings = await this.sources.settings(workspaceId);
    if (!settings.notifyWebhookUrl)
      return { kind: 'unsendable', error: 'notifications are off: no webhook URL is set' };
    const payload = JSON.stringify(body);
    const headers: Record<string, string> = {
      'Content-Type': 'application/json',
      'User-Agent': this.userAgent,
      [eventHeader]: body.event,
    };
    if (settings.notifySecret) {
      let key: string | null;
      try {
        key = await this.sources.secretValue(workspaceId, settings.notifySecret);
      } catch {
        key = null; // a value sealed under another master key reads as missing: the message below says what to fix
      }
      if (key === null)
        return {
          kind: 'unsendable',
          error: `the signing secret ${settings.notifySecret} cannot be read; create it again or change notifySecret`,
        };
      headers[signatureHeader] = signature(key, payload);
    }
    try {
      const res = await this.fetch(settings.notifyWebhookUrl, {
        method: 'POST',
        headers,
        body: payload,
        signal: AbortSignal.timeout(notificationTimeoutMs),
      });
      // Read to the end either way, so the connection is released.
      const detail = await answerExcerpt(res);
      return { kind: 'answered', status: res.status, detail: res.ok ? '' : detail };
    } catch (err) {
      if (err instanceof AddressRefused) return { kind: 'unsendable', error: err.message };
      const e = err as Error;
      const reason =
        e.name === 'TimeoutError' || e.name === 'AbortError'
          ? `no answer within ${notificationTimeoutMs / 1000} s`
          : e.message || e.name;
      return { kind: 'network', error: `could not reach the webhook: ${reason}` };
    }
  }
}
