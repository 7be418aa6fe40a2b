import { Trigger } from './run.js';
import Type, { type Static } from 'typebox';
import { Nullable, type Agrees, type Same } from './common.js';
import type * as domain from '../domain/notification-types.js';
import { Mode, RunStatus } from './job.js';

/** What a notification is about: a failed run, a fallback, a demotion, or the settings page's test. */
export const NotificationEvent = Type.Union(
  [Type.Literal('run.failed'), Type.Literal('run.fell_back'), Type.Literal('job.demoted'), Type.Literal('test')],
  { $id: 'NotificationEvent' },
);
export type NotificationEvent = Static<typeof NotificationEvent>;

/**
 * The JSON body every notification posts (docs/design.md, "Notifications"). `text` is for Slack (escaped `&<>`),
 * `content` for Discord (plain); `allowed_mentions` keeps Discord from pinging anyone a job name or an error happens to
 * name. A test notification has no job and no run.
 */
export const NotificationBody = Type.Object(
  {
    event: NotificationEvent,
    text: Type.String({ description: 'The message for Slack: `&`, `<` and `>` escaped; at most 2000 bytes' }),
    content: Type.String({ description: 'The same message, plain (Discord); at most 2000 bytes' }),
    job: Nullable(Type.Object({ id: Type.String(), name: Type.String() }, { additionalProperties: false })),
    run: Nullable(
      Type.Object(
        {
          id: Type.String(),
          number: Type.Integer(),
          status: RunStatus,
          mode: Mode,
          trigger: Trigger,
          fellBack: Type.Boolean(),
          error: Nullable(Type.String()),
          url: Type.String({ description: '`<public URL>/runs/<id>?workspace=<workspace id>`' }),
        },
        { additionalProperties: false },
      ),
    ),
    timestamp: Type.String({ description: 'RFC 3339, when the event happened' }),
    allowed_mentions: Type.Object(
      { parse: Type.Array(Type.String(), { maxItems: 0 }) },
      { additionalProperties: false },
    ),
  },
  { $id: 'NotificationBody', additionalProperties: false },
);
export type NotificationBody = Static<typeof NotificationBody>;

/** `POST /api/settings/notifications/test` answers this when the webhook took the notification. */
export const NotificationTestResult = Type.Object(
  {
    delivered: Type.Literal(true),
    status: Type.Integer({ description: 'The HTTP status the webhook answered' }),
    ms: Type.Integer({ description: 'How long the delivery took' }),
    body: NotificationBody,
  },
  { $id: 'NotificationTestResult', additionalProperties: false },
);
export type NotificationTestResult = Static<typeof NotificationTestResult>;

// The API carries the domain's notification body exactly (docs/events.md, "Stored shapes").
export type NotificationSchemasAgree = [
  Agrees<Same<NotificationEvent, domain.NotificationEvent>>,
  Agrees<Same<NotificationBody, domain.NotificationBody>>,
];
