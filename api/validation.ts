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
      (serialize ??= fastJson(stripIds(schema) as Parameters<typeof fastJson>[0]) as (d: unknown) => string)(data);
  });
}

export type RouteSchema = FastifySchema;
