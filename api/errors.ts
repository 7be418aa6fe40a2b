import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ErrorObject } from 'ajv';
import { DomainError, type DomainErrorCode, type FieldError } from '../domain/decider.js';
import type { ErrorBody } from '../schemas/common.js';

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
      return { code: Number(p.limit) === 1 ? 'required' : 'too_short', message: Number(p.limit) === 1 ? 'must not be empty' : `must be at least ${String(p.limit)} characters` };
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

/**
 * Turns Ajv's errors into one entry per field. A union (`anyOf`) reports a failure per branch; the branches'
 * own errors are dropped in favour of one readable line built from the literals they allow.
 */
export function fieldErrorsFromAjv(errors: ErrorObject[]): FieldError[] {
  const byField = new Map<string, FieldError>();
  const unionPaths = new Set(errors.filter((e) => e.keyword === 'anyOf').map((e) => e.instancePath));
  for (const e of errors) {
    if (e.keyword === 'anyOf') {
      const consts = errors
        .filter((b) => b.instancePath === e.instancePath && b.keyword === 'const')
        .map((b) => JSON.stringify((b.params as { allowedValue: unknown }).allowedValue));
      const field = fieldPath(e.instancePath);
      const nonConst = errors.find((b) => b.instancePath === e.instancePath && b !== e && b.keyword !== 'const' && b.keyword !== 'type');
      const message = nonConst ? describe(nonConst).message : consts.length > 0 ? `must be one of ${consts.join(', ')}` : 'has an invalid value';
      byField.set(field, { field: field || 'body', code: 'invalid', message });
      continue;
    }
    if (unionPaths.has(e.instancePath) && e.keyword !== 'required' && e.keyword !== 'additionalProperties') continue;
    const d = describe(e);
    const field = fieldPath(e.instancePath, d.extra) || 'body';
    if (!byField.has(field)) byField.set(field, { field, code: d.code, message: d.message });
  }
  return [...byField.values()];
}

function send(reply: FastifyReply, status: number, body: ErrorBody): void {
  void reply.status(status).type('application/json; charset=utf-8').send(body);
}

export function registerErrorHandling(app: FastifyInstance): void {
  app.setNotFoundHandler((request: FastifyRequest, reply: FastifyReply) => {
    send(reply, 404, { code: 'not_found', message: `No route for ${request.method} ${request.url.split('?')[0]}`, requestId: request.id });
  });

  app.setErrorHandler((error: FastifyError & { validation?: ErrorObject[]; validationContext?: string }, request, reply) => {
    const requestId = request.id;
    if (error instanceof DomainError) {
      return send(reply, statusOf[error.code], { code: error.code, message: error.message, fields: error.fields, requestId });
    }
    if (error instanceof ApiError) {
      for (const [k, v] of Object.entries(error.headers)) void reply.header(k, v);
      return send(reply, error.statusCode, { code: error.code, message: error.message, fields: error.fields, requestId });
    }
    if (error.validation) {
      const fields = fieldErrorsFromAjv(error.validation);
      const where = error.validationContext === 'body' ? 'The request body' : 'The request';
      return send(reply, 400, { code: 'validation_failed', message: `${where} has ${fields.length === 1 ? 'an invalid field' : `${fields.length} invalid fields`}`, fields, requestId });
    }
    switch (error.code) {
      case 'FST_ERR_CTP_INVALID_JSON_BODY':
      case 'FST_ERR_CTP_EMPTY_JSON_BODY':
        return send(reply, 400, { code: 'invalid_request_body', message: 'The request body is not valid JSON', requestId });
      case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
        return send(reply, 400, { code: 'invalid_request_body', message: 'The request body must be JSON (Content-Type: application/json)', requestId });
      case 'FST_ERR_CTP_BODY_TOO_LARGE':
        return send(reply, 400, { code: 'invalid_request_body', message: 'The request body is too large', requestId });
    }
    if (error instanceof SyntaxError) {
      return send(reply, 400, { code: 'invalid_request_body', message: 'The request body is not valid JSON', requestId });
    }
    request.log.error({ err: error, requestId }, 'unhandled error');
    return send(reply, 500, { code: 'internal_error', message: 'Something went wrong on the server; the request id identifies it in the logs', requestId });
  });
}
