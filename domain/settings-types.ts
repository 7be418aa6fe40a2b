import type { LimitOverrides, Limits } from './job-types.js';
import type { NotifyEvent } from './notification-types.js';

/**
 * Workspace settings as settings events store them (docs/events.md), every field with its effective value;
 * `schemas/settings.ts` proves the API carries the same shapes.
 */
export interface Settings {
  /** Default model of agent runs; null = unset. */
  agentModelId: string | null;
  /** `svc llm` and small calls; null = the run's own model. */
  utilityModelId: string | null;
  /** Reflection after runs; null = the job's or the agent model. */
  reflectionModelId: string | null;
  /** Sandbox image of jobs without one; null = the server default. */
  defaultImage: string | null;
  defaultLimits: Limits;
  /** 0 = no limit. */
  dailySpendLimitUsd: number;
  retentionDays: number;
  /** Where notifications are posted; null = off. */
  notifyWebhookUrl: string | null;
  notifyOn: NotifyEvent[];
  /** Name of the secret that signs notifications; null = unsigned. */
  notifySecret: string | null;
}

/** Every field optional. Null or empty text unsets; `defaultLimits` is merged field by field over the current ones. */
export interface SettingsPatch {
  agentModelId?: string | null;
  utilityModelId?: string | null;
  reflectionModelId?: string | null;
  defaultImage?: string | null;
  defaultLimits?: LimitOverrides;
  dailySpendLimitUsd?: number;
  retentionDays?: number;
  notifyWebhookUrl?: string | null;
  notifyOn?: NotifyEvent[];
  notifySecret?: string | null;
}
