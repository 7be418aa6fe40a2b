import { DomainError, FieldErrors, type Decider, type DomainEvent } from './decider.js';
import * as fields from './job-fields.js';
import type { Concurrency, JobFields, JobPatch, LimitOverrides, Mode, Network, Spec } from './job-types.js';
import { streamCategory } from './stream.js';

export interface JobConfig {
  name: string;
  instruction: string;
  spec: Spec;
  modelId: string | null;
  image: string | null;
  network: Network;
  allowedDomains: string[] | null;
  allowPrivateNetwork: boolean;
  runAsRoot: boolean;
  limits: LimitOverrides;
  selfImprove: boolean;
  modePin: Mode | null;
  concurrency: Concurrency;
  cron: string | null;
  timezone: string | null;
  enabled: boolean;
}

export type JobEvent =
  | DomainEvent<'JobCreated', { jobId: string; workspaceId: string; config: JobConfig; createdAt: number }>
  /** Only the fields whose value changed. */
  | DomainEvent<'JobUpdated', { changes: Partial<Omit<JobConfig, 'enabled'>>; updatedAt: number }>
  | DomainEvent<'JobEnabled', { updatedAt: number }>
  | DomainEvent<'JobDisabled', { updatedAt: number }>
  | DomainEvent<'JobArchived', { archivedAt: number }>
  /** Only the SHA-256 of the webhook token is kept; a new one replaces the old at once. */
  | DomainEvent<'JobWebhookTokenSet', { tokenHash: string; updatedAt: number }>;

export type JobState =
  | { status: 'none' }
  | {
      status: 'active' | 'archived';
      jobId: string;
      workspaceId: string;
      config: JobConfig;
      createdAt: number;
      updatedAt: number;
      archivedAt: number | null;
    };

export type JobCommand =
  | { type: 'CreateJob'; jobId: string; workspaceId: string; fields: JobFields; now: number }
  | { type: 'PatchJob'; patch: JobPatch; now: number }
  | { type: 'ArchiveJob'; now: number }
  | { type: 'SetWebhookToken'; tokenHash: string; now: number };

export const jobStream = streamCategory<JobEvent>('job');
export const jobStreamId = jobStream.id;

const defaults: Omit<JobConfig, 'name' | 'instruction'> = {
  spec: {},
  modelId: null,
  image: null,
  network: 'internet',
  allowedDomains: null,
  allowPrivateNetwork: false,
  runAsRoot: false,
  limits: {},
  selfImprove: true,
  modePin: null,
  concurrency: 'skip',
  cron: null,
  timezone: null,
  enabled: true,
};

function checkAllowlist(errors: FieldErrors, config: Pick<JobConfig, 'network' | 'allowedDomains'>): void {
  if (config.network === 'allowlist' && (config.allowedDomains ?? []).length === 0) {
    errors.add('allowedDomains', 'required', 'must list at least one domain when network is allowlist');
  }
}

function createConfig(f: JobFields): JobConfig {
  const errors = new FieldErrors();
  // Every field is set here, so `defaults` is not spread in first: a spread followed by this many fields costs V8 a
  // new map per field (docs/performance.md, "Job creations through the API: CPU per creation").
  const config: JobConfig = {
    name: fields.text(errors, 'name', f.name, 200),
    instruction: fields.text(errors, 'instruction', f.instruction, 20000),
    spec: fields.spec(errors, f.spec ?? {}),
    modelId: fields.optionalText(errors, 'modelId', f.modelId, 100),
    image: fields.optionalText(errors, 'image', f.image, 500),
    network: f.network ?? defaults.network,
    allowedDomains:
      f.allowedDomains === null || f.allowedDomains === undefined ? null : fields.domains(errors, f.allowedDomains),
    allowPrivateNetwork: f.allowPrivateNetwork ?? false,
    runAsRoot: f.runAsRoot ?? false,
    limits: fields.limits(errors, f.limits ?? {}),
    selfImprove: f.selfImprove ?? true,
    modePin: f.modePin ?? null,
    concurrency: f.concurrency ?? defaults.concurrency,
    cron: fields.cron(errors, f.cron),
    timezone: fields.timezone(errors, f.timezone),
    enabled: f.enabled ?? true,
  };
  checkAllowlist(errors, config);
  errors.throwIfAny();
  return config;
}

/** The new values a patch asks for, normalised; `enabled` stays apart because it has events of its own. */
function patchedValues(
  p: JobPatch,
  current: JobConfig,
): { changes: Partial<Omit<JobConfig, 'enabled'>>; enabled: boolean | undefined } {
  const errors = new FieldErrors();
  const next: Partial<Omit<JobConfig, 'enabled'>> = {};
  if (p.name !== undefined) next.name = fields.text(errors, 'name', p.name, 200);
  if (p.instruction !== undefined) next.instruction = fields.text(errors, 'instruction', p.instruction, 20000);
  if (p.spec !== undefined) next.spec = fields.spec(errors, p.spec);
  if (p.modelId !== undefined) next.modelId = fields.optionalText(errors, 'modelId', p.modelId, 100);
  if (p.image !== undefined) next.image = fields.optionalText(errors, 'image', p.image, 500);
  if (p.network !== undefined) next.network = p.network;
  if (p.allowedDomains !== undefined) next.allowedDomains = fields.domains(errors, p.allowedDomains);
  if (p.allowPrivateNetwork !== undefined) next.allowPrivateNetwork = p.allowPrivateNetwork;
  if (p.runAsRoot !== undefined) next.runAsRoot = p.runAsRoot;
  // A job's overrides are one value: a patch replaces them whole, so one override can be removed by leaving it out.
  if (p.limits !== undefined) next.limits = fields.limits(errors, p.limits);
  if (p.selfImprove !== undefined) next.selfImprove = p.selfImprove;
  if (p.modePin !== undefined) next.modePin = p.modePin === '' ? null : p.modePin;
  if (p.concurrency !== undefined) next.concurrency = p.concurrency;
  if (p.cron !== undefined) next.cron = fields.cron(errors, p.cron);
  if (p.timezone !== undefined) next.timezone = fields.timezone(errors, p.timezone);
  checkAllowlist(errors, {
    network: next.network ?? current.network,
    allowedDomains: next.allowedDomains !== undefined ? next.allowedDomains : current.allowedDomains,
  });
  errors.throwIfAny();
  const changes: Partial<Omit<JobConfig, 'enabled'>> = {};
  for (const [key, value] of Object.entries(next) as Array<[keyof typeof next, unknown]>) {
    if (JSON.stringify(value) !== JSON.stringify(current[key])) (changes as Record<string, unknown>)[key] = value;
  }
  return { changes, enabled: p.enabled !== undefined && p.enabled !== current.enabled ? p.enabled : undefined };
}

export const jobDecider: Decider<JobCommand, JobEvent, JobState> = {
  initialState: { status: 'none' },
  evolve(state, event) {
    switch (event.type) {
      case 'JobCreated':
        return {
          status: 'active',
          jobId: event.data.jobId,
          workspaceId: event.data.workspaceId,
          config: event.data.config,
          createdAt: event.data.createdAt,
          updatedAt: event.data.createdAt,
          archivedAt: null,
        };
      case 'JobUpdated':
        return state.status === 'none'
          ? state
          : { ...state, config: { ...state.config, ...event.data.changes }, updatedAt: event.data.updatedAt };
      case 'JobEnabled':
      case 'JobDisabled':
        return state.status === 'none'
          ? state
          : {
              ...state,
              config: { ...state.config, enabled: event.type === 'JobEnabled' },
              updatedAt: event.data.updatedAt,
            };
      case 'JobArchived':
        return state.status === 'none'
          ? state
          : {
              ...state,
              status: 'archived',
              archivedAt: event.data.archivedAt,
              updatedAt: event.data.archivedAt,
              config: { ...state.config, enabled: false },
            };
      case 'JobWebhookTokenSet':
        return state;
    }
  },
  decide(command, state) {
    if (command.type === 'CreateJob') {
      if (state.status !== 'none') throw new DomainError('conflict', 'The job already exists');
      return [
        {
          type: 'JobCreated',
          data: {
            jobId: command.jobId,
            workspaceId: command.workspaceId,
            config: createConfig(command.fields),
            createdAt: command.now,
          },
        },
      ];
    }
    // Archived jobs answer 404 everywhere, exactly like jobs that never existed.
    if (state.status !== 'active') throw DomainError.notFound('Job');
    if (command.type === 'ArchiveJob') return [{ type: 'JobArchived', data: { archivedAt: command.now } }];
    if (command.type === 'SetWebhookToken')
      return [{ type: 'JobWebhookTokenSet', data: { tokenHash: command.tokenHash, updatedAt: command.now } }];
    const { changes, enabled } = patchedValues(command.patch, state.config);
    const events: JobEvent[] = [];
    if (Object.keys(changes).length > 0) events.push({ type: 'JobUpdated', data: { changes, updatedAt: command.now } });
    if (enabled !== undefined)
      events.push({ type: enabled ? 'JobEnabled' : 'JobDisabled', data: { updatedAt: command.now } });
    return events;
  },
};
