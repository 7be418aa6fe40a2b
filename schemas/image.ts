import Type, { type Static } from 'typebox';
import { Envelope, Nullable, listQueryProperties } from './common.js';

const imageFields = {
  id: Type.String(),
  dockerfileHash: Type.String({ description: 'sha256 hex of the trimmed Dockerfile text' }),
  status: Type.String({ description: '`queued`, `building`, `ready` or `failed`' }),
  ref: Nullable(
    Type.String({ description: 'The tag runs use, `svc/job-<jobId>:<hash[:16]>-<id suffix>`; set once ready' }),
  ),
  digest: Nullable(Type.String({ description: "The engine's image id (sha256:…) once ready" })),
  baseDigest: Nullable(
    Type.String({ description: 'Digest the first FROM was pinned to; null when it could not be pinned' }),
  ),
  sizeBytes: Nullable(Type.Integer()),
  error: Nullable(Type.String({ description: 'Why the build failed' })),
  createdAt: Type.Integer(),
  startedAt: Nullable(Type.Integer()),
  finishedAt: Nullable(Type.Integer()),
};

/** One build of a job's Dockerfile. */
export const ImageDto = Type.Object(imageFields, { $id: 'ImageDto', additionalProperties: false });
export type ImageDto = Static<typeof ImageDto>;

/** An image with its Dockerfile and build log; the component keeps its contract name (docs/design.md, "Images"). */
export const ImageGetOutputBody = Type.Object(
  {
    ...imageFields,
    dockerfile: Type.String(),
    log: Type.String({ description: 'The build log; beyond 4 MiB only its last 2 MiB are kept' }),
  },
  { $id: 'GetOutputBody', additionalProperties: false },
);
export type ImageGetOutputBody = Static<typeof ImageGetOutputBody>;

/** The image a rebuild queued. */
export const ImageIDOutputBody = Type.Object(
  { id: Type.String() },
  { $id: 'ImageIDOutputBody', additionalProperties: false },
);

export const ImageListEnvelope = Envelope(ImageDto, 'ImageListEnvelope');
export type ImageListEnvelope = Static<typeof ImageListEnvelope>;

export const ImageListQuery = Type.Object(
  {
    ...listQueryProperties,
    status: Type.Optional(Type.String({ maxLength: 100, description: 'Comma-separated statuses' })),
  },
  { additionalProperties: false },
);
export type ImageListQuery = Static<typeof ImageListQuery>;

export const ImageParams = Type.Object(
  { id: Type.String({ minLength: 1, maxLength: 100 }), imageId: Type.String({ minLength: 1, maxLength: 100 }) },
  { additionalProperties: false },
);
