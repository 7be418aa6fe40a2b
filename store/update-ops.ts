import type { Doc, DocValue, Filter, Update } from './document-store.js';

type Obj = { [key: string]: DocValue | undefined };

/**
 * The parent object of `path` in `doc`, made on the way when `create`. With `copyOnWay`, every object on the way is
 * copied first, so that nothing `doc` shares with another document is changed.
 */
function parentOf(doc: Obj, path: string, create: boolean, copyOnWay = false): { parent: Obj; key: string } | null {
  const parts = path.split('.');
  let cur: Obj = doc;
  for (let i = 0; i < parts.length - 1; i++) {
    const p = parts[i]!;
    const next = cur[p];
    if (next === undefined || next === null) {
      if (!create) return null;
      cur[p] = {};
    } else if (typeof next !== 'object' || Array.isArray(next)) {
      throw new Error(`cannot set ${path}: ${p} is not an object`);
    } else if (copyOnWay) cur[p] = { ...next };
    cur = cur[p] as Obj;
  }
  return { parent: cur, key: parts[parts.length - 1]! };
}

function get(doc: Obj, path: string): DocValue | undefined {
  let cur: DocValue | undefined = doc;
  for (const p of path.split('.')) {
    if (cur === null || typeof cur !== 'object' || Array.isArray(cur)) return undefined;
    cur = (cur as Obj)[p];
  }
  return cur;
}

const clone = <T>(v: T): T => (v === undefined ? v : (JSON.parse(JSON.stringify(v)) as T));

/**
 * What `clone` gives, without the JSON text in between: scalars as JSON keeps them (-0 is 0; NaN and ±∞ are null),
 * plain objects without their undefined fields, arrays with null for what JSON cannot hold. Anything else (a Date, a
 * class instance) takes the JSON round trip itself.
 */
function cloneValue(v: unknown): DocValue | undefined {
  if (v === null) return null;
  switch (typeof v) {
    case 'string':
    case 'boolean':
      return v;
    case 'number':
      return Number.isFinite(v) ? v + 0 : null;
    case 'undefined':
    case 'function':
    case 'symbol':
      return undefined;
    case 'object': {
      if (Array.isArray(v)) {
        const out: DocValue[] = new Array<DocValue>(v.length);
        for (let i = 0; i < v.length; i++) out[i] = cloneValue(v[i]) ?? null;
        return out;
      }
      const proto = Object.getPrototypeOf(v) as unknown;
      if ((proto !== Object.prototype && proto !== null) || 'toJSON' in v) return clone(v as DocValue);
      const out: Obj = {};
      for (const k of Object.keys(v)) {
        const x = cloneValue((v as Record<string, unknown>)[k]);
        if (x !== undefined) out[k] = x;
      }
      return out;
    }
    default:
      return clone(v as DocValue);
  }
}

/** Applies MongoDB update operators to a copy of a document. `inserting` enables `$setOnInsert`. */
export function applyUpdate(doc: Doc, update: Update, inserting: boolean): Doc {
  const out = clone(doc) as Obj;
  const sets = inserting ? { ...update.$setOnInsert, ...update.$set } : (update.$set ?? {});
  for (const [k, v] of Object.entries(sets)) {
    const at = parentOf(out, k, true)!;
    at.parent[at.key] = clone(v);
  }
  for (const k of Object.keys(update.$unset ?? {})) {
    const at = parentOf(out, k, false);
    if (at) delete at.parent[at.key];
  }
  for (const [k, v] of Object.entries(update.$inc ?? {})) {
    const current = get(out, k);
    if (current !== undefined && typeof current !== 'number') throw new Error(`cannot $inc ${k}: not a number`);
    const at = parentOf(out, k, true)!;
    at.parent[at.key] = (current ?? 0) + v;
  }
  for (const [k, v] of Object.entries(update.$push ?? {})) {
    const current = get(out, k);
    if (current !== undefined && !Array.isArray(current)) throw new Error(`cannot $push to ${k}: not an array`);
    const at = parentOf(out, k, true)!;
    at.parent[at.key] = [...(current ?? []), clone(v)];
  }
  return out as Doc;
}

/** The document an upsert starts from: the filter's plain equality fields (MongoDB semantics). */
export function documentFromFilter(filter: Filter): Obj {
  const out: Obj = {};
  for (const [k, v] of Object.entries(filter)) {
    if (k.startsWith('$') || v === undefined) continue;
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
      const keys = Object.keys(v);
      if (keys.length === 1 && keys[0] === '$eq') {
        const at = parentOf(out, k, true)!;
        at.parent[at.key] = clone((v as { $eq: DocValue }).$eq);
      }
      if (keys.some((x) => x.startsWith('$'))) continue;
    }
    const at = parentOf(out, k, true)!;
    at.parent[at.key] = clone(v as DocValue);
  }
  return out;
}

/** A value the store's round trip gives back the same (JSON's): a string, a boolean, null, a finite number but -0. */
function isKeptAsIs(v: unknown): boolean {
  return v === null || typeof v === 'string' || typeof v === 'boolean' || (Number.isFinite(v) && !Object.is(v, -0));
}

/** True when every field an update sets is a top-level one with a value (no dotted path, nothing undefined). */
function topLevelOnly(sets: Record<string, DocValue | undefined>): boolean {
  for (const k in sets) if (sets[k] === undefined || k.includes('.')) return false;
  return true;
}

/** Sets an own field, `__proto__` included (assigning that one would change the object's prototype instead). */
function setOwn(out: Obj, k: string, v: DocValue): void {
  if (k === '__proto__')
    Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
  else out[k] = v;
}

/**
 * `applyUpdate` without the deep copy of the whole document: the result shares every value the update leaves alone
 * with `doc`, which is left as it was, and its fields are in the same order. For a cache whose documents are never
 * changed in place (`store/write-back-documents.ts`).
 */
export function applyUpdateShared(doc: Doc, update: Update, inserting: boolean): Doc {
  const sets = inserting && update.$setOnInsert ? { ...update.$setOnInsert, ...update.$set } : (update.$set ?? {});
  // Copied by spreads, the document's and the update's, which keep V8's fast layout: a field set again keeps its
  // place, new ones follow in the update's order (a field named `__proto__`, own after JSON.parse, stays own). Fields
  // added one by one under computed names would make a document of more than about sixteen a slow dictionary
  // (docs/performance.md, "Replay").
  const out: Obj = topLevelOnly(sets) ? { ...doc, ...sets } : { ...doc };
  for (const k in sets) {
    const v = sets[k];
    // What the spread took as it is needs no copy: a string, a boolean, null, or a number JSON keeps as it is.
    if (out[k] === v && isKeptAsIs(v)) continue;
    if (!k.includes('.')) {
      // Serialised, an undefined value is no field at all: a later $set of it then goes last, as after the store's round trip.
      if (v === undefined) delete out[k];
      else setOwn(out, k, cloneValue(v)!);
      continue;
    }
    const at = parentOf(out, k, true, true)!;
    if (v === undefined) delete at.parent[at.key];
    else setOwn(at.parent, at.key, cloneValue(v)!);
  }
  for (const k in update.$unset ?? {}) {
    const at = parentOf(out, k, false, true);
    if (at) delete at.parent[at.key];
  }
  const inc = update.$inc ?? {};
  for (const k in inc) {
    const current = get(out, k);
    if (current !== undefined && typeof current !== 'number') throw new Error(`cannot $inc ${k}: not a number`);
    const at = parentOf(out, k, true, true)!;
    at.parent[at.key] = (current ?? 0) + inc[k]!;
  }
  const push = update.$push ?? {};
  for (const k in push) {
    const current = get(out, k);
    if (current !== undefined && !Array.isArray(current)) throw new Error(`cannot $push to ${k}: not an array`);
    const at = parentOf(out, k, true, true)!;
    at.parent[at.key] = [...(current ?? []), cloneValue(push[k]) ?? null];
  }
  return out as Doc;
}
