/**
 * A walk of a request part along its schema that finds the first array or object over its size bound, before the
 * validator that reports every error runs: a container over its bound is reported alone, and a part with more
 * values than the budget is not validated for every error at all (docs/design.md, "Validation cost"). The walk
 * stops at the budget, so it costs at most that many steps whatever the body.
 */

type Schema = Record<string, unknown>;

export interface Oversize {
  /** Path segments from the root: property names and item indexes. */
  path: (string | number)[];
  code: 'too_long' | 'too_many_fields';
  message: string;
}

/**
 * An object that declares its properties and refuses others gets this many unknown fields reported one by one;
 * past that, it is refused as a whole.
 */
export const unknownFieldAllowance = 20;

const patternCache = new WeakMap<object, [RegExp, Schema][]>();

function patterns(schema: Schema): [RegExp, Schema][] {
  const pp = schema.patternProperties as Record<string, Schema> | undefined;
  if (!pp) return [];
  let list = patternCache.get(pp);
  if (!list) {
    list = Object.entries(pp).map(([p, s]) => [new RegExp(p, 'u'), s]);
    patternCache.set(pp, list);
  }
  return list;
}

function jsonType(data: unknown): string {
  if (data === null) return 'null';
  if (Array.isArray(data)) return 'array';
  return typeof data;
}

/** Whether a union branch can describe `data` at all: branches of another type fail on their own, cheaply. */
function admits(schema: Schema, type: string): boolean {
  const declared = schema.type;
  if (declared === undefined) return true;
  const list = Array.isArray(declared) ? (declared as string[]) : [declared as string];
  return list.some((t) => t === type || (t === 'integer' && type === 'number'));
}

function isSchema(s: unknown): s is Schema {
  return typeof s === 'object' && s !== null && !Array.isArray(s);
}

/** The walk's budget: past `limit` values it gives up, answering `tooManyValues`. */
export interface WalkBudget {
  nodes: number;
  limit: number;
}

/** The part holds more values than the budget: reporting every error would cost too much. */
export const tooManyValues = 'too_many_values';

type Found = Oversize | typeof tooManyValues | null;

export function findOversize(
  schema: unknown,
  data: unknown,
  budget: WalkBudget = { nodes: 0, limit: Number.POSITIVE_INFINITY },
): Found {
  if (++budget.nodes > budget.limit) return tooManyValues;
  if (!isSchema(schema) || typeof data !== 'object' || data === null) return null;
  const type = jsonType(data);
  for (const key of ['anyOf', 'oneOf'] as const) {
    const branches = schema[key];
    if (!Array.isArray(branches)) continue;
    let first: Oversize | null = null;
    let fits = false;
    for (const b of branches) {
      if (!isSchema(b) || !admits(b, type)) continue;
      const found = findOversize(b, data, budget);
      if (found === tooManyValues) return found;
      if (!found) {
        fits = true;
        break;
      }
      first ??= found;
    }
    if (!fits && first) return first;
  }
  if (Array.isArray(schema.allOf)) {
    for (const s of schema.allOf) {
      const found = findOversize(s, data, budget);
      if (found) return found;
    }
  }
  if (!admits(schema, type)) return null;

  if (Array.isArray(data)) {
    const max = schema.maxItems;
    if (typeof max === 'number' && data.length > max)
      return { path: [], code: 'too_long', message: `must have at most ${max} items` };
    const items = schema.items;
    if (!isSchema(items)) return null;
    for (let i = 0; i < data.length; i++) {
      const found = findOversize(items, data[i], budget);
      if (found === tooManyValues) return found;
      if (found) {
        found.path.unshift(i);
        return found;
      }
    }
    return null;
  }

  const obj = data as Record<string, unknown>;
  const keys = Object.keys(obj);
  const max = schema.maxProperties;
  if (typeof max === 'number' && keys.length > max)
    return { path: [], code: 'too_many_fields', message: `must have at most ${max} fields` };
  const props = isSchema(schema.properties) ? schema.properties : {};
  const extra = schema.additionalProperties;
  const pats = patterns(schema);
  if (extra === false && pats.length === 0) {
    const known = Object.keys(props).length;
    if (keys.length > known + unknownFieldAllowance)
      return { path: [], code: 'too_many_fields', message: `has ${keys.length} fields; it takes at most ${known}` };
  }
  for (const k of keys) {
    let sub: unknown = Object.hasOwn(props, k) ? props[k] : undefined;
    if (sub === undefined)
      for (const [re, s] of pats)
        if (re.test(k)) {
          sub = s;
          break;
        }
    if (sub === undefined && isSchema(extra)) sub = extra;
    if (sub === undefined) continue;
    const found = findOversize(sub, obj[k], budget);
    if (found === tooManyValues) return found;
    if (found) {
      found.path.unshift(k);
      return found;
    }
  }
  return null;
}
