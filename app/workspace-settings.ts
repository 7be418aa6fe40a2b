import { DomainError } from '../domain/decider.js';
import { testNotificationBody, verdict } from '../domain/notification.js';
import type { NotificationBody } from '../domain/notification-types.js';
import type { SettingsDto, SettingsPatch } from '../schemas/settings.js';
import type { CommandContext } from './commands.js';
import type { Models } from './models.js';
import { webhookUrlRefusal, type NotificationSender } from './notifications.js';
import type { Secrets } from './secrets.js';

/** The webhook refused the test notification or could not be reached: the API answers 502 `webhook_error`. */
export class NotificationFailed extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NotificationFailed';
  }
}

/** Changing a workspace's settings, and the test notification an admin sends from the settings page. */
export class WorkspaceSettings {
  constructor(
    private readonly models: Models,
    private readonly secrets: Secrets,
    /** One attempt, made by this process, since a person waits for the answer (docs/design.md, Notifications). */
    private readonly sender: NotificationSender,
    private readonly allowPrivateTargets: boolean,
    private readonly clock: () => number = Date.now,
  ) {}

  read(workspaceId: string): Promise<SettingsDto> {
    return this.models.settingsFor(workspaceId);
  }

  /**
   * The egress guard judges a webhook URL at save as far as its name allows (and again when it is dialled); the
   * signing secret is named, and stored by its workspace name.
   */
  async change(ctx: CommandContext, workspaceId: string, patch: SettingsPatch): Promise<SettingsDto> {
    const refusal = patch.notifyWebhookUrl
      ? webhookUrlRefusal(patch.notifyWebhookUrl.trim(), this.allowPrivateTargets)
      : null;
    if (refusal) throw DomainError.validation([{ field: 'notifyWebhookUrl', code: 'not_allowed', message: refusal }]);
    const secretName = patch.notifySecret?.trim();
    const found = secretName ? await this.secrets.byName(workspaceId, secretName) : null;
    return this.models.changeSettings(ctx, workspaceId, patch, found ? [found.name] : []);
  }

  /** Posts a test notification to the workspace's webhook once and answers what was sent and how it went. */
  async sendTest(workspaceId: string): Promise<{ status: number; ms: number; body: NotificationBody }> {
    if (!(await this.models.settingsFor(workspaceId)).notifyWebhookUrl) {
      throw DomainError.validation([
        { field: 'notifyWebhookUrl', code: 'required', message: 'must be set to send a test notification' },
      ]);
    }
    const body = testNotificationBody(this.clock());
    const started = this.clock();
    const v = verdict(await this.sender.send(workspaceId, body));
    if (!v.delivered) throw new NotificationFailed(`The webhook did not accept the notification: ${v.error}`);
    return { status: v.status, ms: this.clock() - started, body };
  }
}
