import { FieldErrors, type Decider, type DomainEvent } from './decider.js';
import type { Limits } from './job-types.js';
import type { NotifyEvent } from './notification-types.js';
import type { Settings, SettingsPatch } from './settings-types.js';
import { streamCategory } from './stream.js';

/**
 * Workspace settings (docs/models.md, "Settings"): one stream per workspace. Each event carries only the keys that
 * changed, so every field is its own value and two admins changing different fields never overwrite each other.
 */
export type SettingsEvent = DomainEvent<'SettingsChanged', { changes: Partial<Settings>; changedAt: number }>;
export const settingsStream = streamCategory<SettingsEvent>('settings');
export const settingsStreamId = settingsStream.id;

export const notifyEvents: readonly NotifyEvent[] = ['run.failed', 'run.fell_back', 'job.demoted'];
export const defaultModelKeys = ['agentModelId', 'utilityModelId', 'reflectionModelId'] as const;
export type DefaultModelKey = (typeof defaultModelKeys)[number];

export const defaultLimits: Limits = {
  timeoutSeconds: 900,
  maxTurns: 60,
  maxCostUsd: 2,
  cpus: 1,
  memoryMb: 1024,
  pidsLimit: 256,
  diskMb: 4096,
};

/** What a workspace that never changed anything has. `defaultImage: null` means the server's sandbox image. */
export const defaultSettings: Settings = {
  agentModelId: null,
  utilityModelId: null,
  reflectionModelId: null,
  defaultImage: null,
  defaultLimits,
  dailySpendLimitUsd: 0,
  retentionDays: 90,
  notifyWebhookUrl: null,
  notifyOn: ['run.failed', 'job.demoted'],
  notifySecret: null,
};

/** The stored keys over the defaults; limits field by field, so a limit added later gets its default. */
export function withDefaults(stored: Partial<Settings>): Settings {
  const known = Object.fromEntries(
    Object.entries(stored).filter(([k, v]) => k in defaultSettings && v !== undefined),
  ) as Partial<Settings>;
  return { ...defaultSettings, ...known, defaultLimits: { ...defaultLimits, ...(known.defaultLimits ?? {}) } };
}

/** The name of a default for messages: `agentModelId` → `agent`. */
export const defaultRole = (key: DefaultModelKey) => key.replace('ModelId', '');

export interface SettingsCommand {
  type: 'ChangeSettings';
  patch: SettingsPatch;
  /** Facts the handler looked up: which of the patch's model ids are enabled, listed models of the workspace, and which secret names exist. */
  usableModelIds: string[];
  secretNames: string[];
  now: number;
}

const isHttpUrl = (text: string) => {
  try {
    const u = new URL(text);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname !== '';
  } catch {
    return false;
  }
};

/** Checks a patch against the rules the schema cannot say and turns it into stored values (empty text = unset). */
function normalize(command: SettingsCommand, state: Partial<Settings>): Partial<Settings> {
  const p = command.patch;
  const errors = new FieldErrors();
  const out: Partial<Settings> = {};
  for (const key of defaultModelKeys) {
    const id = p[key];
    if (id === undefined) continue;
    if (id !== null && id !== '' && !command.usableModelIds.includes(id))
      errors.add(key, 'invalid', 'must be an enabled model of this workspace');
    out[key] = id || null;
  }
  if (p.defaultImage !== undefined) out.defaultImage = p.defaultImage?.trim() || null;
  // Limits merge field by field over the current ones: a workspace default always has every field.
  if (p.defaultLimits !== undefined) out.defaultLimits = { ...withDefaults(state).defaultLimits, ...p.defaultLimits };
  if (p.dailySpendLimitUsd !== undefined) out.dailySpendLimitUsd = p.dailySpendLimitUsd;
  if (p.retentionDays !== undefined) out.retentionDays = p.retentionDays;
  if (p.notifyWebhookUrl !== undefined) {
    const url = p.notifyWebhookUrl?.trim() || null;
    if (url !== null && !isHttpUrl(url))
      errors.add('notifyWebhookUrl', 'invalid', 'must be an http or https URL, or empty to turn notifications off');
    out.notifyWebhookUrl = url;
  }
  if (p.notifyOn !== undefined) out.notifyOn = notifyEvents.filter((e) => p.notifyOn!.includes(e));
  if (p.notifySecret !== undefined) {
    const name = p.notifySecret?.trim() || null;
    if (name !== null && !command.secretNames.includes(name))
      errors.add(
        'notifySecret',
        'invalid',
        'must be the name of a secret of this workspace, or empty to send unsigned',
      );
    out.notifySecret = name;
  }
  errors.throwIfAny();
  return out;
}

export const settingsDecider: Decider<SettingsCommand, SettingsEvent, Partial<Settings>> = {
  initialState: {},
  evolve: (state, event) => ({ ...state, ...event.data.changes }),
  decide(command, state) {
    const effective = withDefaults(state);
    const changes = Object.fromEntries(
      Object.entries(normalize(command, state)).filter(
        ([k, v]) => JSON.stringify(effective[k as keyof Settings]) !== JSON.stringify(v),
      ),
    ) as Partial<Settings>;
    return Object.keys(changes).length ? [{ type: 'SettingsChanged', data: { changes, changedAt: command.now } }] : [];
  },
};
