import Type, { type Static } from 'typebox';
import { envNamePattern, secretNamePattern } from '../domain/secret.js';
import { Envelope } from './common.js';

/** A secret as the API answers it: never its value. */
export const SecretDto = Type.Object(
  { id: Type.String(), name: Type.String(), createdAt: Type.Integer(), updatedAt: Type.Integer() },
  { $id: 'SecretDto', additionalProperties: false },
);
export type SecretDto = Static<typeof SecretDto>;
export const SecretListEnvelope = Envelope(SecretDto, 'SecretListEnvelope');

/** The create body; its component name, `CreateInputBody1`, is the one the API contract gives it. */
export const CreateSecretInputBody = Type.Object(
  {
    name: Type.String({
      minLength: 1,
      maxLength: 100,
      pattern: secretNamePattern.source,
      description: 'Letters, digits, `.`, `-` and `_`; unique in the workspace',
    }),
    value: Type.String({ maxLength: 65536, description: 'Encrypted at rest, never returned' }),
  },
  { $id: 'CreateInputBody1', additionalProperties: false },
);
export const SecretValueBody = Type.Object(
  { value: Type.String({ maxLength: 65536 }) },
  { $id: 'SecretValueBody', additionalProperties: false },
);
export const SecretIdOutputBody = Type.Object(
  { id: Type.String() },
  { $id: 'SecretIdOutputBody', additionalProperties: false },
);

/** A job's secret as an environment variable of its runs. `secretName` is answered and ignored on PUT. */
export const JobSecret = Type.Object(
  {
    secretId: Type.String({ minLength: 1, maxLength: 100 }),
    envName: Type.String({ minLength: 1, maxLength: 100, pattern: envNamePattern.source }),
    secretName: Type.Optional(Type.String({ maxLength: 200, description: 'Read-only' })),
  },
  { $id: 'JobSecret', additionalProperties: false },
);
export type JobSecret = Static<typeof JobSecret>;
