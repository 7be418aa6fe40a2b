import { Ajv, type ValidateFunction } from 'ajv';
import fastJson from 'fast-json-stringify';
import type { FastifyInstance, FastifySchema } from 'fastify';

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
// coerced to the declared types.
const bodyAjv = new Ajv({ allErrors: true, coerceTypes: false, useDefaults: true, removeAdditional: false, strict: false });
const textAjv = new Ajv({ allErrors: true, coerceTypes: 'array', useDefaults: true, removeAdditional: false, strict: false });

const cache = new WeakMap<object, ValidateFunction>();

export function installCompilers(app: FastifyInstance): void {
  app.setValidatorCompiler(({ schema, httpPart }) => {
    const key = schema as object;
    let fn = cache.get(key);
    if (!fn) {
      fn = (httpPart === 'body' ? bodyAjv : textAjv).compile(stripIds(schema) as object);
      cache.set(key, fn);
    }
    return fn;
  });
  app.setSerializerCompiler(({ schema }) => fastJson(stripIds(schema) as Parameters<typeof fastJson>[0]));
}

export type RouteSchema = FastifySchema;
