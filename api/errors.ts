import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ErrorObject } from 'ajv';
import { DomainError, type DomainErrorCode, type FieldError } from '../domain/decider.js';
import type { ErrorBody } from '../schemas/common.js';
import { ProjectionUnavailable } from '../projections/engine.js';

const statusOf: Record<DomainErrorCode, number> = {
  validation_failed: 400,
  not_signed_in: 401,
  invalid_token: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  unsupported: 422,
  rate_limited: 429,
};

/** An error answer with an explicit status, for the few cases a DomainError code does not fix one. */
export class ApiError extends Error {
  constructor(
    readonly statusCode: number,
    readonly code: string,
    message: string,
    readonly fields: FieldError[] | null = null,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

/** Ajv reports `/limits/timeoutSeconds` or `/allowedDomains/2`; the API names them `limits.timeoutSeconds`, `allowedDomains[2]`. */
export function fieldPath(instancePath: string, extra?: string): string {
  const parts = instancePath.split('/').filter(Boolean);
  if (extra) parts.push(extra);
  return parts.reduce((acc, p) => (/^\d+$/.test(p) ? `${acc}[${p}]` : acc ? `${acc}.${p}` : p), '');
}

function describe(e: ErrorObject): { code: string; message: string; extra?: string } {
  const p = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case 'required':
      return { code: 'required', message: 'is required', extra: String(p.missingProperty) };
    case 'additionalProperties':
      return { code: 'unknown_field', message: 'is not a known field', extra: String(p.additionalProperty) };
    case 'maxLength':
      return { code: 'too_long', message: `must be at most ${String(p.limit)} characters` };
    case 'minLength':
      return {
        code: Number(p.limit) === 1 ? 'required' : 'too_short',
        message: Number(p.limit) === 1 ? 'must not be empty' : `must be at least ${String(p.limit)} characters`,
      };
    case 'maxItems':
      return { code: 'too_long', message: `must have at most ${String(p.limit)} items` };
    case 'minItems':
      return { code: 'too_short', message: `must have at least ${String(p.limit)} items` };
    case 'minimum':
    case 'maximum':
    case 'exclusiveMinimum':
    case 'exclusiveMaximum':
      return { code: 'out_of_range', message: `must be ${String(p.comparison)} ${String(p.limit)}` };
    case 'type':
      return { code: 'invalid_type', message: `must be ${String(p.type).replace(',', ' or ')}` };
    case 'enum':
      return { code: 'invalid', message: `must be one of ${(p.allowedValues as unknown[]).map(String).join(', ')}` };
    case 'const':
      return { code: 'invalid', message: `must be ${String(p.allowedValue)}` };
    case 'pattern':
      return { code: 'invalid', message: 'has an invalid format' };
    default:
      return { code: 'invalid', message: e.message ?? 'is not valid' };
  }
}

/** A request part's failing fields: the first ones, and how many fail in all. */
export interface FieldSummary {
  fields: FieldError[];
  /** Null when the part was too large to look for every error: `fields` holds the first one. */
  count: number | null;
}

/** At most this many field errors go into an answer; `details.fieldCount` tells how many there were. */
export const maxReportedFields = 20;

/**
 * Turns Ajv's errors into one entry per field. A union (`anyOf`) reports a failure per branch; the branches'
 * own errors are dropped in favour of one readable line built from the literals they allow. Linear in the number
 * of errors: errors are grouped by path once, and only the first `limit` fields are described
 * (docs/design.md, "Validation cost").
 */
export function summarizeAjvErrors(errors: ErrorObject[], limit = Number.POSITIVE_INFINITY): FieldSummary {
  const atPath = new Map<string, { consts: unknown[]; others: ErrorObject[]; union: boolean }>();
  for (const e of errors) {
    let group = atPath.get(e.instancePath);
    if (!group) atPath.set(e.instancePath, (group = { consts: [], others: [], union: false }));
    if (e.keyword === 'anyOf') group.union = true;
    if (e.keyword === 'const') group.consts.push((e.params as { allowedValue: unknown }).allowedValue);
    // Two suffice: the first that is not the union error itself.
    else if (e.keyword !== 'type' && group.others.length < 2) group.others.push(e);
  }
  const byField = new Map<string, { e: ErrorObject; union: boolean }>();
  for (const e of errors) {
    if (e.keyword === 'anyOf') {
      byField.set(`${e.instancePath}\u0000`, { e, union: true });
      continue;
    }
    if (atPath.get(e.instancePath)!.union && e.keyword !== 'required' && e.keyword !== 'additionalProperties') continue;
    const key = `${e.instancePath}\u0000${extraOf(e) ?? ''}`;
    if (!byField.has(key)) byField.set(key, { e, union: false });
  }
  const fields: FieldError[] = [];
  for (const { e, union } of byField.values()) {
    if (fields.length >= limit) break;
    if (union) {
      const group = atPath.get(e.instancePath)!;
      const nonConst = group.others.find((b) => b !== e);
      const consts = group.consts.map((c) => JSON.stringify(c));
      const message = nonConst
        ? describe(nonConst).message
        : consts.length > 0
          ? `must be one of ${consts.join(', ')}`
          : 'has an invalid value';
      fields.push({ field: fieldPath(e.instancePath) || 'body', code: 'invalid', message });
      continue;
    }
    const d = describe(e);
    fields.push({ field: fieldPath(e.instancePath, d.extra) || 'body', code: d.code, message: d.message });
  }
  return { fields, count: byField.size };
}

function extraOf(e: ErrorObject): string | undefined {
  const p = e.params as Record<string, unknown>;
  if (e.keyword === 'required') return String(p.missingProperty);
  if (e.keyword === 'additionalProperties') return String(p.additionalProperty);
  return undefined;
}

/** A request part refused by its schema, already summarized (api/validation.ts builds it). */
export class ValidationFailure extends Error {
  constructor(readonly summary: FieldSummary) {
    super('validation failed');
  }
}

/** The answer for failing fields: the first `maxReportedFields`, and the count of all when some were left out. */
function validationBody(where: string, summary: FieldSummary, requestId: string, message?: string): ErrorBody {
  const fields = summary.fields.slice(0, maxReportedFields);
  if (summary.count === null) {
    const text = message ?? `${where} has invalid fields; the first is listed (the body is too large to list them all)`;
    return { code: 'validation_failed', message: text, fields, details: { truncated: 'true' }, requestId };
  }
  const count = Math.max(summary.count, summary.fields.length);
  const text = message ?? `${where} has ${count === 1 ? 'an invalid field' : `${count} invalid fields`}`;
  return {
    code: 'validation_failed',
    message: text,
    fields,
    ...(count > fields.length ? { details: { fieldCount: String(count), truncated: 'true' } } : {}),
    requestId,
  };
}

function send(reply: FastifyReply, status: number, body: ErrorBody): void {
  void reply.status(status).type('application/json; charset=utf-8').send(body);
}

export function registerErrorHandling(app: FastifyInstance): void {
  app.setNotFoundHandler((request: FastifyRequest, reply: FastifyReply) => {
    send(reply, 404, {
      code: 'not_found',
      message: `No route for ${request.method} ${request.url.split('?')[0]}`,
      requestId: request.id,
    });
  });

  app.setErrorHandler(
    (error: FastifyError & { validation?: ErrorObject[]; validationContext?: string }, request, reply) => {
      const requestId = request.id;
      if (error instanceof DomainError) {
        if (error.code === 'validation_failed' && error.fields && error.fields.length > maxReportedFields) {
          return send(
            reply,
            400,
            validationBody(
              'The request',
              { fields: error.fields, count: error.fields.length },
              requestId,
              error.message,
            ),
          );
        }
        return send(reply, statusOf[error.code], {
          code: error.code,
          message: error.message,
          fields: error.fields,
          requestId,
        });
      }
      if (error instanceof ProjectionUnavailable) {
        // The write is stored: a client must not repeat it, only read again later (docs/design.md, "Failure handling").
        return send(reply, 503, { code: error.code, message: error.message, requestId });
      }
      if (error instanceof ApiError) {
        for (const [k, v] of Object.entries(error.headers)) void reply.header(k, v);
        return send(reply, error.statusCode, {
          code: error.code,
          message: error.message,
          fields: error.fields,
          requestId,
        });
      }
      if (error instanceof ValidationFailure || error.validation) {
        const summary =
          error instanceof ValidationFailure ? error.summary : summarizeAjvErrors(error.validation!, maxReportedFields);
        return send(
          reply,
          400,
          validationBody(error.validationContext === 'body' ? 'The request body' : 'The request', summary, requestId),
        );
      }
      switch (error.code) {
        case 'FST_ERR_CTP_INVALID_JSON_BODY':
        case 'FST_ERR_CTP_EMPTY_JSON_BODY':
          return send(reply, 400, {
            code: 'invalid_request_body',
            message: 'The request body is not valid JSON',
            requestId,
          });
        case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
          return send(reply, 400, {
            code: 'invalid_request_body',
            message: 'The request body must be JSON (Content-Type: application/json)',
            requestId,
          });
        case 'FST_ERR_CTP_BODY_TOO_LARGE':
          return send(reply, 400, {
            code: 'invalid_request_body',
            message: 'The request body is too large',
            requestId,
          });
      }
      if (error instanceof SyntaxError) {
        return send(reply, 400, {
          code: 'invalid_request_body',
          message: 'The request body is not valid JSON',
          requestId,
        });
      }
      request.log.error({ err: error, requestId }, 'unhandled error');
      return send(reply, 500, {
        code: 'internal_error',
        message: 'Something went wrong on the server; the request id identifies it in the logs',
        requestId,
      });
    },
  );
}
