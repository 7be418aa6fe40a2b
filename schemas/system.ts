import Type, { type Static } from 'typebox';
import { Nullable } from './common.js';

export const LimitSet = Type.Object(
  { cpu: Type.Boolean(), memory: Type.Boolean(), pids: Type.Boolean() },
  { $id: 'LimitSet', additionalProperties: false },
);

export const Capabilities = Type.Object(
  {
    networks: Nullable(Type.Array(Type.String())),
    separateUsers: Type.Boolean(),
    limits: LimitSet,
  },
  { $id: 'Capabilities', additionalProperties: false },
);

export const SandboxInfo = Type.Object(
  {
    backend: Type.String({ description: '`bwrap` or `docker`' }),
    version: Type.String(),
    arch: Type.String(),
    isolation: Type.String({ description: '`namespaces` (bwrap) or `container` (docker)' }),
    capabilities: Capabilities,
    imageBuilds: Type.Boolean(),
    error: Nullable(Type.String({ description: 'Why the backend cannot run sandboxes now; runs fail with it' })),
  },
  { $id: 'SandboxInfo', additionalProperties: false },
);

export const ProjectionInfo = Type.Object(
  {
    name: Type.String({ description: 'The projector, named for its read model' }),
    position: Nullable(Type.String({ description: 'The last event it applied (opaque); null before the first' })),
    healthy: Type.Boolean({
      description: 'False while it fails; it is retried with backoff on its own and the others go on',
    }),
    lastError: Nullable(Type.String({ description: 'Why it fails; shown to instance admins only, null for others' })),
    retries: Type.Integer({ minimum: 0, description: 'Retries since the current failure began; 0 when healthy' }),
  },
  { $id: 'ProjectionInfo', additionalProperties: false },
);

export const SubscriptionsInfo = Type.Object(
  {
    open: Type.Integer({ minimum: 0, description: "This process's open subscriptions to the event log" }),
    retrying: Type.Integer({ minimum: 0, description: 'Of those, how many lost their connection and wait to reopen' }),
    resumed: Type.Integer({ minimum: 0, description: 'Reopenings since the process started' }),
    lastError: Nullable(Type.String({ description: 'The last loss; shown to instance admins only, null for others' })),
  },
  { $id: 'SubscriptionsInfo', additionalProperties: false },
);

export const InfoOutputBody = Type.Object(
  {
    version: Type.String(),
    database: Type.String({ description: 'Event store and document store in use, e.g. `sqlite`' }),
    allowPrivateNetworkTargets: Type.Boolean(),
    sandbox: Type.Optional(SandboxInfo),
    projections: Type.Array(ProjectionInfo, { description: 'Each read model: how far it is and whether it fails' }),
    subscriptions: SubscriptionsInfo,
  },
  { $id: 'InfoOutputBody', additionalProperties: false },
);
export type InfoOutputBody = Static<typeof InfoOutputBody>;
