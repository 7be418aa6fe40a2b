import Type, { type Static } from 'typebox';
import { Envelope, Nullable, bounds, listQueryProperties, type Agrees, type Same } from './common.js';
import type { Trigger as DomainTrigger } from '../domain/run.js';
import { Mode, RunStatus } from './job.js';
import { AppliedOp } from './playbook.js';

// Spelled out: a union built with `map` has no static type in TypeBox 1.x.
export const Trigger = Type.Union(
  [
    Type.Literal('manual'),
    Type.Literal('schedule'),
    Type.Literal('webhook'),
    Type.Literal('api'),
    Type.Literal('retry'),
  ],
  { $id: 'Trigger' },
);
// The API names the triggers the domain stores (docs/events.md, "Stored shapes").
export type TriggerAgrees = Agrees<Same<Static<typeof Trigger>, DomainTrigger>>;

/** A run: its status, mode, outcome, cost and timings, the job it belongs to and what it was started with. */
export const RunDto = Type.Object(
  {
    id: Type.String(),
    jobId: Type.String(),
    jobName: Type.String(),
    jobDeleted: Type.Boolean({ description: 'The job was archived after this run' }),
    number: Type.Integer({ description: 'Per-job run number, from 1' }),
    status: RunStatus,
    mode: Mode,
    trigger: Trigger,
    triggeredBy: Nullable(Type.String()),
    input: Type.Unknown({ description: 'The run input (webhook body, or the input of a manual or API start)' }),
    instructions: Nullable(Type.String()),
    summary: Nullable(Type.String({ description: 'Markdown' })),
    outputs: Type.Record(Type.String(), Type.Unknown()),
    error: Nullable(Type.String()),
    cost: Type.Integer({ description: 'micro-USD' }),
    turns: Type.Integer(),
    tokIn: Type.Integer(),
    tokOut: Type.Integer(),
    queuedAt: Type.Integer(),
    startedAt: Nullable(Type.Integer()),
    finishedAt: Nullable(Type.Integer()),
    msTotal: Nullable(Type.Integer({ description: 'ms from leaving the queue to the end' })),
    fellBack: Type.Boolean(),
    reflection: Type.Union([
      Type.Literal('skipped'),
      Type.Literal('pending'),
      Type.Literal('done'),
      Type.Literal('failed'),
    ]),
    reflectionCost: Type.Integer(),
    reflectionError: Nullable(Type.String({ description: 'Why the last reflection failed' })),
    reflectionSummary: Nullable(Type.String({ description: 'What the last reflection learned' })),
    reflectionVersion: Nullable(
      Type.Integer({ description: 'The playbook version the last reflection saved; null when it applied nothing' }),
    ),
    reflectionOps: Nullable(
      Type.Array(AppliedOp, { description: 'What became of each op the last reflection proposed' }),
    ),
    verifyCost: Type.Integer(),
    playbookVersion: Type.Integer(),
    modelId: Nullable(Type.String()),
  },
  { $id: 'RunDto', additionalProperties: false },
);
export type RunDto = Static<typeof RunDto>;

export const RunListEnvelope = Envelope(RunDto, 'RunListEnvelope');
export type RunListEnvelope = Static<typeof RunListEnvelope>;

export const RunListQuery = Type.Object(
  {
    ...listQueryProperties,
    status: Type.Optional(Type.String({ maxLength: 200, description: 'Comma-separated statuses' })),
    job: Type.Optional(Type.String({ maxLength: 2000, description: 'Comma-separated job ids' })),
    mode: Type.Optional(Type.String({ maxLength: 100 })),
    trigger: Type.Optional(Type.String({ maxLength: 100 })),
    from: Type.Optional(Type.Integer({ ...bounds.timestamp, description: 'Queued at or after (Unix ms)' })),
    to: Type.Optional(Type.Integer({ ...bounds.timestamp, description: 'Queued before (Unix ms, exclusive)' })),
  },
  { additionalProperties: false },
);
export type RunListQuery = Static<typeof RunListQuery>;

export const TriggerRunBody = Type.Object(
  {
    input: Type.Optional(Type.Unknown({ description: 'Any JSON; the sandbox sees it as /svc/input.json' })),
    instructions: Type.Optional(Type.String({ maxLength: 10000, description: 'Additional instructions for this run' })),
  },
  { $id: 'TriggerRunBody', additionalProperties: false },
);
export type TriggerRunBody = Static<typeof TriggerRunBody>;

export const TriggerRunOutput = Type.Object(
  {
    runId: Nullable(Type.String({ description: 'Null when a disabled job declined a schedule or webhook trigger' })),
    status: Type.Union([Type.Literal('queued'), Type.Literal('skipped')]),
  },
  { $id: 'TriggerRunOutput', additionalProperties: false },
);
export type TriggerRunOutput = Static<typeof TriggerRunOutput>;

/** A timeline entry: `seq` counts from 1 per run; `payload`'s shape depends on `type`. */
export const EventDto = Type.Object(
  {
    seq: Type.Integer(),
    ts: Type.Integer(),
    type: Type.String(),
    spanId: Nullable(Type.String()),
    parentSpanId: Nullable(Type.String()),
    ms: Nullable(Type.Integer()),
    payload: Type.Unknown(),
  },
  { $id: 'EventDto', additionalProperties: false },
);
export type EventDto = Static<typeof EventDto>;

export const EventsQuery = Type.Object(
  {
    after: Type.Optional(Type.Integer({ ...bounds.counter, description: 'Return events with a larger seq' })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 2000, default: 500 })),
  },
  { additionalProperties: false },
);

export const ArtifactDto = Type.Object(
  { name: Type.String({ description: 'Path relative to the outputs directory' }), size: Type.Integer() },
  { $id: 'ArtifactDto', additionalProperties: false },
);
export type ArtifactDto = Static<typeof ArtifactDto>;

export const ArtifactQuery = Type.Object(
  { path: Type.String({ minLength: 1, maxLength: 1000 }) },
  { additionalProperties: false },
);

export const WebhookTokenOutput = Type.Object(
  {
    token: Type.String({ description: 'Shown once; starts with svh_' }),
    url: Type.String({ description: 'Path /hooks/<jobId>' }),
  },
  { $id: 'WebhookTokenOutput', additionalProperties: false },
);

/** At most this many runs per bulk deletion. */
export const maxDeletedRuns = 100;

export const DeleteRunsBody = Type.Object(
  {
    ids: Type.Array(Type.String({ minLength: 1, maxLength: 100 }), {
      minItems: 1,
      maxItems: maxDeletedRuns,
      description: 'Run ids; duplicates count once',
    }),
  },
  { $id: 'DeleteRunsBody', additionalProperties: false },
);
export type DeleteRunsBody = Static<typeof DeleteRunsBody>;

export const DeleteRunsOutput = Type.Object(
  {
    deleted: Type.Array(Type.String(), { description: 'The runs deleted, in the order asked' }),
    skipped: Type.Array(
      Type.Object(
        {
          id: Type.String(),
          reason: Type.Union([
            Type.Literal('not_found'),
            Type.Literal('unfinished'),
            Type.Literal('reflection_pending'),
          ]),
        },
        { additionalProperties: false },
      ),
      { description: 'The runs left: not found in this workspace, not finished yet, or with a reflection pending' },
    ),
  },
  { $id: 'DeleteRunsOutput', additionalProperties: false },
);
export type DeleteRunsOutput = Static<typeof DeleteRunsOutput>;
