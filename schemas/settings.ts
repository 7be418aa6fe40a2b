import Type, { type Static } from 'typebox';
import { Nullable, bounds, type Agrees, type Same } from './common.js';
import type * as domain from '../domain/settings-types.js';
import type { NotifyEvent as DomainNotifyEvent } from '../domain/notification-types.js';
import { LimitOverrides, Limits } from './job.js';

export const NotifyEvent = Type.Union(
  [Type.Literal('run.failed'), Type.Literal('run.fell_back'), Type.Literal('job.demoted')],
  { $id: 'NotifyEvent' },
);
export type NotifyEvent = Static<typeof NotifyEvent>;

/** Workspace settings (docs/models.md, "Settings"), every field with its effective value. */
export const SettingsDto = Type.Object(
  {
    agentModelId: Nullable(Type.String({ description: 'Default model of agent runs; null = unset' })),
    utilityModelId: Nullable(Type.String({ description: "`svc llm` and small calls; null = the run's own model" })),
    reflectionModelId: Nullable(
      Type.String({ description: "Reflection after runs; null = the job's or the agent model" }),
    ),
    defaultImage: Nullable(
      Type.String({ description: 'Sandbox image of jobs without one; null = the server default' }),
    ),
    defaultLimits: Limits,
    dailySpendLimitUsd: Type.Number({ minimum: 0, description: '0 = no limit' }),
    retentionDays: Type.Integer({ minimum: 1, maximum: 3650 }),
    notifyWebhookUrl: Nullable(Type.String({ description: 'Where notifications are posted; null = off' })),
    notifyOn: Type.Array(NotifyEvent),
    notifySecret: Nullable(
      Type.String({ description: 'Name of the secret that signs notifications; null = unsigned' }),
    ),
  },
  { $id: 'SettingsDto', additionalProperties: false },
);
export type SettingsDto = Static<typeof SettingsDto>;

/** Every field optional. Null or empty text unsets; `defaultLimits` is merged field by field over the current limits. */
export const SettingsPatch = Type.Object(
  {
    agentModelId: Type.Optional(Nullable(Type.String({ maxLength: 100 }))),
    utilityModelId: Type.Optional(Nullable(Type.String({ maxLength: 100 }))),
    reflectionModelId: Type.Optional(Nullable(Type.String({ maxLength: 100 }))),
    defaultImage: Type.Optional(Nullable(Type.String({ maxLength: 500 }))),
    defaultLimits: Type.Optional(LimitOverrides),
    dailySpendLimitUsd: Type.Optional(Type.Number(bounds.usd)),
    retentionDays: Type.Optional(Type.Integer({ minimum: 1, maximum: 3650 })),
    notifyWebhookUrl: Type.Optional(Nullable(Type.String({ maxLength: 2000 }))),
    notifyOn: Type.Optional(Type.Array(NotifyEvent, { maxItems: 3 })),
    notifySecret: Type.Optional(Nullable(Type.String({ maxLength: 100 }))),
  },
  { $id: 'SettingsPatch', additionalProperties: false },
);
export type SettingsPatch = Static<typeof SettingsPatch>;

// The API carries the domain's settings exactly (docs/events.md, "Stored shapes").
export type SettingsSchemasAgree = [
  Agrees<Same<NotifyEvent, DomainNotifyEvent>>,
  Agrees<Same<SettingsDto, domain.Settings>>,
  Agrees<Same<SettingsPatch, domain.SettingsPatch>>,
];
