import { Ajv, type ValidateFunction } from 'ajv';
import fastJson from 'fast-json-stringify';
import type { FastifyInstance, FastifySchema } from 'fastify';
import { maxReportedFields, summarizeAjvErrors, ValidationFailure } from './errors.js';
import { findOversize, tooManyValues } from './size-guard.js';

/**
 * TypeBox schemas carry `$id`s so the OpenAPI document can name them, but one schema object is embedded in many
 * routes; Ajv and fast-json-stringify would refuse the repeated ids. Validation works on copies without them.
 */
export function stripIds(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(stripIds);
  if (schema === null || typeof schema !== 'object') return schema;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(schema)) if (k !== '$id') out[k] = stripIds(v);
  return out;
}

// Bodies are JSON: a string "true" is not a boolean there. Query strings and path parameters are text and are
// coerced to the declared types. Each schema gets two validators: one that stops at the first error, for the
// common case of a valid request, and one that collects every error, run only on a request already known to fail
// and already within its size bounds (docs/design.md, "Validation cost").
const options = { useDefaults: true, removeAdditional: false, strict: false } as const;
const bodyAjv = {
  first: new Ajv({ ...options, allErrors: false, coerceTypes: false }),
  all: new Ajv({ ...options, allErrors: true, coerceTypes: false }),
};
const textAjv = {
  first: new Ajv({ ...options, allErrors: false, coerceTypes: 'array' }),
  all: new Ajv({ ...options, allErrors: true, coerceTypes: 'array' }),
};

type Validator = (data: unknown) => boolean | { error: ValidationFailure };

/**
 * Above this many values, a failing request part is not validated again for every error: Ajv spends microseconds
 * per error, and a body within its size bounds can still hold tens of thousands of wrong values. The answer then
 * names the first failing field only.
 */
export const fullReportNodes = 2_000;

/**
 * Answers true, or a failure holding the first fields that fail and how many fail in all. Both validators of a schema
 * are compiled at its first use, not at start: a process holds the compiled code of the routes and tools it serves
 * only (docs/design.md, "Validation cost").
 */
export function compileValidator(schema: object, part: 'body' | 'text'): Validator {
  let compiled: Validator | null = null;
  return (data) => (compiled ??= compileNow(schema, part))(data);
}

function compileNow(schema: object, part: 'body' | 'text'): Validator {
  const plain = stripIds(schema) as object;
  const pair = part === 'body' ? bodyAjv : textAjv;
  const first = pair.first.compile(plain);
  // Compiled with the first: compiling on the first refusal would hold the event loop for up to a hundred
  // milliseconds at a moment a caller chooses.
  const all: ValidateFunction = pair.all.compile(plain);
  return (data) => {
    if (first(data)) return true;
    const big = findOversize(plain, data, { nodes: 0, limit: fullReportNodes });
    if (big === tooManyValues) {
      return {
        error: new ValidationFailure({ fields: summarizeAjvErrors(first.errors ?? [], 1).fields, count: null }),
      };
    }
    if (big) {
      const field =
        big.path.reduce<string>((acc, p) => (typeof p === 'number' ? `${acc}[${p}]` : acc ? `${acc}.${p}` : p), '') ||
        'body';
      return { error: new ValidationFailure({ fields: [{ field, code: big.code, message: big.message }], count: 1 }) };
    }
    all(data);
    return { error: new ValidationFailure(summarizeAjvErrors(all.errors ?? [], maxReportedFields)) };
  };
}

const cache = { body: new WeakMap<object, Validator>(), text: new WeakMap<object, Validator>() };

export function installCompilers(app: FastifyInstance): void {
  app.setValidatorCompiler(({ schema, httpPart }) => {
    const key = schema as object;
    const part = httpPart === 'body' ? 'body' : 'text';
    let fn = cache[part].get(key);
    if (!fn) {
      fn = compileValidator(key, part);
      cache[part].set(key, fn);
    }
    return fn;
  });
  // Compiled at a route's first answer with that status, like the validators at their first use.
  app.setSerializerCompiler(({ schema }) => {
    let serialize: ((data: unknown) => string) | null = null;
    return (data: unknown) =>
      (serialize ??= fastJson(serializerSchema(schema) as Parameters<typeof fastJson>[0]) as (d: unknown) => string)(
        data,
      );
  });
}

const scalarTypes = new Set(['string', 'integer', 'number', 'boolean']);

/** The scalar type a branch of an `anyOf` writes, when it is a plain scalar or a union of string constants. */
function scalarOf(branch: unknown): string | null {
  if (branch === null || typeof branch !== 'object') return null;
  const b = branch as { type?: unknown; anyOf?: unknown[] };
  if (typeof b.type === 'string' && scalarTypes.has(b.type) && b.anyOf === undefined) return b.type;
  if (
    b.type === undefined &&
    Array.isArray(b.anyOf) &&
    b.anyOf.length > 0 &&
    b.anyOf.every((x) => scalarOf(x) === 'string')
  )
    return 'string';
  return null;
}

/**
 * The schema a response serializer is compiled from: without `$id`s, and with each `anyOf` of scalars of one type,
 * maybe null (TypeBox's nullable fields and enums), as that type or `[type, 'null']`. For an `anyOf`,
 * fast-json-stringify runs an Ajv validation of the value against every branch to choose how to write it: a job's
 * answer ran a dozen, a tenth of what a creation allocated (docs/performance.md, "Allocation, and a log that did not
 * start over (2026-11-27)"), to write a string, a number or null exactly as the type alone writes it. The document
 * (OpenAPI) and validation keep the schemas as they are.
 */
export function serializerSchema(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(serializerSchema);
  if (schema === null || typeof schema !== 'object') return schema;
  const s = schema as Record<string, unknown>;
  if (Array.isArray(s.anyOf) && s.anyOf.length > 0) {
    const types = new Set<string>();
    let nullable = false;
    let plain = true;
    for (const branch of s.anyOf) {
      if ((branch as { type?: unknown } | null)?.type === 'null' && Object.keys(branch as object).length === 1)
        nullable = true;
      else {
        const t = scalarOf(branch);
        if (t === null) plain = false;
        else types.add(t);
      }
    }
    if (plain && types.size === 1) {
      const [type] = types;
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(s)) if (k !== 'anyOf' && k !== '$id') out[k] = v;
      out.type = nullable ? [type, 'null'] : type;
      return out;
    }
  }
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(s)) if (k !== '$id') out[k] = serializerSchema(v);
  return out;
}

export type RouteSchema = FastifySchema;
