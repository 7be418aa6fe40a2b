import Type, { type Static } from 'typebox';
import { actorTypes } from '../domain/audit.js';
import type * as domain from '../domain/audit.js';
import { Envelope, Nullable, bounds, listQueryProperties, type Agrees, type Same } from './common.js';

export const ActorType = Type.Union(
  [
    Type.Literal('user'),
    Type.Literal('token'),
    Type.Literal('run'),
    Type.Literal('reflection'),
    Type.Literal('scheduler'),
    Type.Literal('system'),
  ],
  { $id: 'ActorType', description: 'Who caused a change' },
);
export type ActorType = Static<typeof ActorType>;
// The API names exactly the actors the log records (docs/events.md, "Stored shapes").
export type ActorTypeAgrees = Agrees<Same<ActorType, domain.ActorType>>;

/** Who made a change; `name` when the log taught one (a user's name or email, a token's name, a run's number). */
export const AuditActor = Type.Object(
  {
    type: ActorType,
    id: Nullable(Type.String()),
    name: Nullable(Type.String()),
  },
  { $id: 'AuditActor', additionalProperties: false },
);
export type AuditActor = Static<typeof AuditActor>;

/** One change: never a secret, token or key (summaries are written from an allow list of fields). */
export const AuditEntryDto = Type.Object(
  {
    id: Type.String({ description: 'Stable: the stream and revision of the event' }),
    at: Type.Integer({ description: 'When the change was made (Unix ms)' }),
    actor: AuditActor,
    type: Type.String({ description: 'The event type, e.g. `JobUpdated`' }),
    summary: Type.String({ description: 'What changed, in one line' }),
    streamId: Type.String(),
    revision: Type.Integer({ minimum: 0 }),
    jobId: Nullable(Type.String()),
  },
  { $id: 'AuditEntryDto', additionalProperties: false },
);
export type AuditEntryDto = Static<typeof AuditEntryDto>;

export const AuditListEnvelope = Envelope(AuditEntryDto, 'AuditListEnvelope');
export type AuditListEnvelope = Static<typeof AuditListEnvelope>;

const timeRange = {
  from: Type.Optional(Type.Integer({ ...bounds.timestamp, description: 'Changes at or after (Unix ms)' })),
  to: Type.Optional(Type.Integer({ ...bounds.timestamp, description: 'Changes before (Unix ms, exclusive)' })),
};

const filters = {
  actor: Type.Optional(
    Type.String({ maxLength: 100, description: `Comma-separated actor types: ${actorTypes.join(', ')}` }),
  ),
  actorId: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'One user, token or run id' })),
  type: Type.Optional(Type.String({ maxLength: 1000, description: 'Comma-separated event types' })),
  ...timeRange,
};

export const AuditListQuery = Type.Object(
  {
    ...listQueryProperties,
    job: Type.Optional(Type.String({ maxLength: 2000, description: 'Comma-separated job ids' })),
    ...filters,
  },
  { additionalProperties: false },
);
export type AuditListQuery = Static<typeof AuditListQuery>;

export const JobHistoryQuery = Type.Object({ ...listQueryProperties, ...filters }, { additionalProperties: false });
export type JobHistoryQuery = Static<typeof JobHistoryQuery>;

/** `at`: answer the record as it was at that instant, folded from the event log (docs/api.md, "Time travel"). */
export const AtQuery = Type.Object(
  {
    at: Type.Optional(
      Type.Integer({ ...bounds.timestamp, description: 'Unix ms; the record as it was then (not in the future)' }),
    ),
  },
  { additionalProperties: false },
);
export type AtQuery = Static<typeof AtQuery>;
