import Type, { type Static } from 'typebox';
import { Envelope, Nullable, listQueryProperties, type Agrees, type Same } from './common.js';
import { limitBounds } from '../domain/job-types.js';
import type * as domain from '../domain/job-types.js';

export const Mode = Type.Union([Type.Literal('explore'), Type.Literal('assisted'), Type.Literal('scripted')], {
  $id: 'Mode',
});
export type Mode = Static<typeof Mode>;

export const Network = Type.Union([Type.Literal('none'), Type.Literal('internet'), Type.Literal('allowlist')]);
export type Network = Static<typeof Network>;

export const Concurrency = Type.Union([Type.Literal('skip'), Type.Literal('queue'), Type.Literal('parallel')]);
export type Concurrency = Static<typeof Concurrency>;

export const IOField = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 100 }),
    type: Type.String({ minLength: 1, maxLength: 100 }),
    description: Type.Optional(Type.String({ maxLength: 2000 })),
  },
  { $id: 'IOField', additionalProperties: false },
);
export type IOField = Static<typeof IOField>;

export const MCPNeed = Type.Object(
  { server: Type.String({ maxLength: 100 }), why: Type.String({ maxLength: 2000 }) },
  { $id: 'MCPNeed', additionalProperties: false },
);
export type MCPNeed = Static<typeof MCPNeed>;

export const SpecSchedule = Type.Object(
  {
    cron: Type.String({ maxLength: 100 }),
    timezone: Type.String({ maxLength: 100 }),
    human: Type.String({ maxLength: 500 }),
  },
  { $id: 'SpecSchedule', additionalProperties: false },
);

const shortList = { maxItems: 100 };
/** What a job declares about itself (docs/jobs.md, "Fields"); `inputs` are the run inputs it accepts. */
export const Spec = Type.Object(
  {
    title: Type.Optional(Type.String({ maxLength: 200 })),
    goal: Type.Optional(Type.String({ maxLength: 20000 })),
    schedule: Type.Optional(Nullable(SpecSchedule)),
    successCriteria: Type.Optional(Type.Array(Type.String({ maxLength: 2000 }), shortList)),
    inputs: Type.Optional(Type.Array(IOField, shortList)),
    outputs: Type.Optional(Type.Array(IOField, shortList)),
    mcp: Type.Optional(Type.Array(MCPNeed, shortList)),
    network: Type.Optional(Type.Union([Type.Literal('none'), Type.Literal('internet')])),
    dockerfile: Type.Optional(Nullable(Type.String({ maxLength: 65536 }))),
    sideEffects: Type.Optional(Type.Array(Type.String({ maxLength: 2000 }), shortList)),
    warnings: Type.Optional(Type.Array(Type.String({ maxLength: 2000 }), shortList)),
  },
  { $id: 'Spec', additionalProperties: false },
);
export type Spec = Static<typeof Spec>;

/** Per-job overrides; unset fields fall back to the workspace defaults. */
export const LimitOverrides = Type.Object(
  {
    timeoutSeconds: Type.Optional(Type.Integer(limitBounds.timeoutSeconds)),
    maxTurns: Type.Optional(Type.Integer(limitBounds.maxTurns)),
    maxCostUsd: Type.Optional(Type.Number(limitBounds.maxCostUsd)),
    cpus: Type.Optional(Type.Number(limitBounds.cpus)),
    memoryMb: Type.Optional(Type.Integer(limitBounds.memoryMb)),
    pidsLimit: Type.Optional(Type.Integer(limitBounds.pidsLimit)),
    diskMb: Type.Optional(Type.Integer(limitBounds.diskMb)),
  },
  { $id: 'LimitOverrides', additionalProperties: false },
);
export type LimitOverrides = Static<typeof LimitOverrides>;

/** Effective limits: every field set. */
export const Limits = Type.Object(
  {
    timeoutSeconds: Type.Integer(limitBounds.timeoutSeconds),
    maxTurns: Type.Integer(limitBounds.maxTurns),
    maxCostUsd: Type.Number(limitBounds.maxCostUsd),
    cpus: Type.Number(limitBounds.cpus),
    memoryMb: Type.Integer(limitBounds.memoryMb),
    pidsLimit: Type.Integer(limitBounds.pidsLimit),
    diskMb: Type.Integer(limitBounds.diskMb),
  },
  { $id: 'Limits', additionalProperties: false },
);
export type Limits = Static<typeof Limits>;

const jobFieldProperties = {
  name: Type.String({ minLength: 1, maxLength: 200 }),
  instruction: Type.String({ minLength: 1, maxLength: 20000 }),
  spec: Spec,
  modelId: Type.String({ maxLength: 100 }),
  image: Type.String({ maxLength: 500 }),
  network: Network,
  allowedDomains: Type.Array(Type.String({ maxLength: 253 }), { maxItems: 100 }),
  allowPrivateNetwork: Type.Boolean(),
  runAsRoot: Type.Boolean(),
  limits: LimitOverrides,
  selfImprove: Type.Boolean(),
  concurrency: Concurrency,
  cron: Type.String({ maxLength: 100 }),
  timezone: Type.String({ maxLength: 100 }),
  enabled: Type.Boolean(),
};

/** Create body: name and instruction required (docs/jobs.md, "Fields"). */
export const JobFields = Type.Object(
  {
    name: jobFieldProperties.name,
    instruction: jobFieldProperties.instruction,
    spec: Type.Optional(jobFieldProperties.spec),
    modelId: Type.Optional(Nullable(jobFieldProperties.modelId)),
    image: Type.Optional(Nullable(jobFieldProperties.image)),
    network: Type.Optional(jobFieldProperties.network),
    allowedDomains: Type.Optional(Nullable(jobFieldProperties.allowedDomains)),
    allowPrivateNetwork: Type.Optional(jobFieldProperties.allowPrivateNetwork),
    runAsRoot: Type.Optional(jobFieldProperties.runAsRoot),
    limits: Type.Optional(jobFieldProperties.limits),
    selfImprove: Type.Optional(jobFieldProperties.selfImprove),
    modePin: Type.Optional(Nullable(Mode)),
    concurrency: Type.Optional(jobFieldProperties.concurrency),
    cron: Type.Optional(Nullable(jobFieldProperties.cron)),
    timezone: Type.Optional(Nullable(jobFieldProperties.timezone)),
    enabled: Type.Optional(jobFieldProperties.enabled),
  },
  { $id: 'JobFields', additionalProperties: false },
);
export type JobFields = Static<typeof JobFields>;

/** Patch body: every field optional; an empty string clears modelId, image, cron, timezone and modePin. */
export const JobPatch = Type.Object(
  {
    name: Type.Optional(jobFieldProperties.name),
    instruction: Type.Optional(jobFieldProperties.instruction),
    spec: Type.Optional(jobFieldProperties.spec),
    modelId: Type.Optional(jobFieldProperties.modelId),
    image: Type.Optional(jobFieldProperties.image),
    network: Type.Optional(jobFieldProperties.network),
    allowedDomains: Type.Optional(jobFieldProperties.allowedDomains),
    allowPrivateNetwork: Type.Optional(jobFieldProperties.allowPrivateNetwork),
    runAsRoot: Type.Optional(jobFieldProperties.runAsRoot),
    limits: Type.Optional(jobFieldProperties.limits),
    selfImprove: Type.Optional(jobFieldProperties.selfImprove),
    modePin: Type.Optional(Type.Union([Mode, Type.Literal('')])),
    concurrency: Type.Optional(jobFieldProperties.concurrency),
    cron: Type.Optional(jobFieldProperties.cron),
    timezone: Type.Optional(jobFieldProperties.timezone),
    enabled: Type.Optional(jobFieldProperties.enabled),
  },
  { $id: 'JobPatch', additionalProperties: false },
);
export type JobPatch = Static<typeof JobPatch>;

/** The PATCH body: the patch, and whether a changed instruction recompiles the spec (docs/jobs.md, "Compile"). */
export const JobPatchBody = Type.Object(
  {
    ...JobPatch.properties,
    rebuildSpec: Type.Optional(
      Type.Boolean({
        description:
          'false keeps the spec when the instruction changes; by default a changed instruction recompiles it',
      }),
    ),
  },
  { $id: 'JobPatchBody', additionalProperties: false },
);
export type JobPatchBody = Static<typeof JobPatchBody>;

export const RunStatus = Type.Union(
  [
    Type.Literal('queued'),
    Type.Literal('provisioning'),
    Type.Literal('running'),
    Type.Literal('verifying'),
    Type.Literal('succeeded'),
    Type.Literal('failed'),
    Type.Literal('timed_out'),
    Type.Literal('cancelled'),
    Type.Literal('skipped'),
  ],
  { $id: 'RunStatus' },
);
export type RunStatus = Static<typeof RunStatus>;

export const LastRun = Type.Object(
  {
    id: Type.String(),
    number: Type.Integer(),
    status: RunStatus,
    queuedAt: Type.Integer(),
  },
  { $id: 'LastRun', additionalProperties: false },
);
export type LastRun = Static<typeof LastRun>;

export const JobDto = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    instruction: Type.String(),
    spec: Spec,
    modelId: Nullable(Type.String()),
    image: Nullable(Type.String()),
    network: Network,
    allowedDomains: Nullable(Type.Array(Type.String())),
    allowPrivateNetwork: Type.Boolean(),
    runAsRoot: Type.Boolean(),
    limits: LimitOverrides,
    selfImprove: Type.Boolean(),
    modePin: Nullable(Mode),
    concurrency: Concurrency,
    cron: Nullable(Type.String()),
    timezone: Nullable(Type.String()),
    nextRunAt: Nullable(Type.Integer()),
    enabled: Type.Boolean(),
    playbookVersion: Type.Integer({ minimum: 0 }),
    hasWebhookToken: Type.Boolean(),
    createdAt: Type.Integer(),
    updatedAt: Type.Integer(),
    lastRun: Nullable(LastRun),
    demoted: Type.Boolean(),
    graduatedVersion: Nullable(Type.Integer()),
    nextMode: Mode,
  },
  { $id: 'JobDto', additionalProperties: false },
);
export type JobDto = Static<typeof JobDto>;

export const JobListDto = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    cron: Nullable(Type.String()),
    timezone: Nullable(Type.String()),
    scheduleHuman: Nullable(Type.String()),
    nextRunAt: Nullable(Type.Integer()),
    enabled: Type.Boolean(),
    modePin: Nullable(Mode),
    createdAt: Type.Integer(),
    updatedAt: Type.Integer(),
    lastRun: Nullable(LastRun),
    lastMode: Nullable(Mode),
    runCount: Type.Integer({ minimum: 0 }),
    recentRuns: Nullable(Type.Array(LastRun, { maxItems: 10 })),
    nextMode: Mode,
    inputs: Nullable(Type.Array(IOField)),
  },
  { $id: 'JobListDto', additionalProperties: false },
);
export type JobListDto = Static<typeof JobListDto>;

export const JobListEnvelope = Envelope(JobListDto, 'JobListEnvelope');
export type JobListEnvelope = Static<typeof JobListEnvelope>;

export const JobListQuery = Type.Object(
  {
    ...listQueryProperties,
    enabled: Type.Optional(Type.String({ maxLength: 20, description: 'Comma-separated `true`/`false`' })),
  },
  { additionalProperties: false },
);
export type JobListQuery = Static<typeof JobListQuery>;

export { limitBounds };

// The API carries the domain's job values exactly (docs/events.md, "Stored shapes").
export type JobSchemasAgree = [
  Agrees<Same<Mode, domain.Mode>>,
  Agrees<Same<Network, domain.Network>>,
  Agrees<Same<Concurrency, domain.Concurrency>>,
  Agrees<Same<RunStatus, domain.RunStatus>>,
  Agrees<Same<IOField, domain.IOField>>,
  Agrees<Same<Spec, domain.Spec>>,
  Agrees<Same<LimitOverrides, domain.LimitOverrides>>,
  Agrees<Same<Limits, domain.Limits>>,
  Agrees<Same<JobFields, domain.JobFields>>,
  Agrees<Same<JobPatch, domain.JobPatch>>,
];
