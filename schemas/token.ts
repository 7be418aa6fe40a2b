import Type, { type Static } from 'typebox';
import { Envelope, Nullable, bounds, listQueryProperties } from './common.js';

export const ApiTokenDto = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    createdAt: Type.Integer(),
    lastUsedAt: Nullable(Type.Integer({ description: 'Accurate to the minute' })),
    expiresAt: Nullable(Type.Integer({ description: 'Null: never expires' })),
    createdBy: Nullable(Type.String({ description: 'Name or email of the user whose role the token acts with' })),
  },
  { $id: 'ApiTokenDto', additionalProperties: false },
);
export type ApiTokenDto = Static<typeof ApiTokenDto>;

export const ApiTokenEnvelope = Envelope(ApiTokenDto, 'ApiTokenListEnvelope');

export const CreateTokenInputBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 100 }),
    expiresAt: Type.Optional(
      Type.Integer({ ...bounds.timestamp, description: 'Unix ms; omit for a token that never expires' }),
    ),
  },
  { $id: 'CreateInputBody', additionalProperties: false },
);
export type CreateTokenInputBody = Static<typeof CreateTokenInputBody>;

export const CreateTokenOutputBody = Type.Object(
  {
    token: Type.String({ description: 'Shown once; starts with svc_' }),
    apiToken: ApiTokenDto,
  },
  { $id: 'CreateOutputBody', additionalProperties: false },
);
export type CreateTokenOutputBody = Static<typeof CreateTokenOutputBody>;

export const TokenListQuery = Type.Object({ ...listQueryProperties }, { additionalProperties: false });
export type TokenListQuery = Static<typeof TokenListQuery>;
