import Type, { type Static, type TSchema } from 'typebox';

/** One failing field or query parameter of an error answer. */
export const FieldError = Type.Object(
  {
    field: Type.String({ description: 'Dotted path of the field or query parameter, e.g. `limits.timeoutSeconds`' }),
    code: Type.String({ description: 'Machine-readable reason, e.g. `required`, `too_long`, `invalid`' }),
    message: Type.String(),
  },
  { $id: 'FieldError', additionalProperties: false },
);
export type FieldError = Static<typeof FieldError>;

/** The body of every error answer; `requestId` is the id the request was logged under. */
export const ErrorBody = Type.Object(
  {
    code: Type.String({
      description:
        'validation_failed, invalid_request_body, invalid_token, not_signed_in, forbidden, not_found, conflict, unsupported, rate_limited, internal_error; 502 answers name the upstream: provider_error, oauth_error, webhook_error; 503 projection_unavailable: the write was stored but a failing or lagging read model cannot show it yet (do not repeat the write); requests HTTP itself refuses: invalid_request (400), request_timeout (408), request_too_large (431)',
    }),
    message: Type.String(),
    fields: Type.Optional(Type.Union([Type.Array(FieldError), Type.Null()])),
    details: Type.Optional(Type.Record(Type.String(), Type.String())),
    requestId: Type.Optional(Type.String()),
  },
  { $id: 'ErrorBody', additionalProperties: false },
);
export type ErrorBody = Static<typeof ErrorBody>;

/** The envelope every list route answers: one page of items and how many there are in all. */
export function Envelope<T extends TSchema>(item: T, id: string) {
  return Type.Object(
    {
      items: Type.Array(item),
      page: Type.Integer({ minimum: 1 }),
      pageSize: Type.Integer({ minimum: 1, maximum: 100 }),
      total: Type.Integer({ minimum: 0 }),
    },
    { $id: id, additionalProperties: false },
  );
}

/**
 * Bounds of numbers a client sends (docs/security.md, "Requests: validation cost, bounds, access"): every one has
 * a minimum and a maximum, so no value reaches a store or an offset computation as 1e20 or 1e308.
 */
export const bounds = {
  /** The last page whose offset, at the largest page size, is still an exact integer. */
  page: Math.floor(Number.MAX_SAFE_INTEGER / 100),
  /** Unix ms: from 1970 up to the end of year 9999. */
  timestamp: { minimum: 0, maximum: 253_402_300_799_999 },
  /** Sequence and version numbers, counters: what a double holds exactly. */
  counter: { minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
  /** Dollar amounts of limits: a million dollars is no limit anyone sets by mistake. */
  usd: { minimum: 0, maximum: 1_000_000 },
} as const;

/** Query parameters shared by every list route: page, page size, sort keys and search text. */
export const listQueryProperties = {
  page: Type.Optional(
    Type.Integer({ minimum: 1, maximum: bounds.page, default: 1, description: 'Page number, from 1' }),
  ),
  pageSize: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 25 })),
  sort: Type.Optional(
    Type.String({
      maxLength: 200,
      description: 'Up to three comma-separated keys; prefix `-` for descending',
    }),
  ),
  search: Type.Optional(Type.String({ maxLength: 200, description: 'Case-insensitive literal text' })),
};

export const IdParams = Type.Object(
  { id: Type.String({ minLength: 1, maxLength: 100 }) },
  { additionalProperties: false },
);
export type IdParams = Static<typeof IdParams>;

export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

/**
 * True only when two types are identical (optional fields, nullability and literal unions included; mutual
 * assignability would let an added optional field through). Schemas that carry a domain type prove with it that the
 * API and what the domain stores agree (docs/events.md, "Stored shapes").
 */
export type Same<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
/** Fails to compile unless given `true`: `Agrees<Same<Static<typeof X>, domain.X>>`. */
export type Agrees<T extends true> = T;
