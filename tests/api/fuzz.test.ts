import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { writeFileSync } from 'node:fs';
import { adminSession, Client, startTestServer, type TestServer } from './harness.js';
import { errorMessage } from '../../domain/error-message.js';

/**
 * Schema-driven fuzzing of every operation of the OpenAPI document with parameters or a body (docs/security.md,
 * "Requests: validation cost, bounds, access"): values that follow the schema, mixed with hostile ones (huge and
 * odd numbers, numeric-looking strings, deep nesting, long and broken unicode strings, wrong types, unknown fields,
 * arrays of 10,000 items, raw text). Every answer must come within a second, never be a 5xx, and every error must
 * be `{code, message, requestId}` (with `fields` for validation_failed).
 *
 * SVC_FUZZ_SEED fixes the seed (printed on failure); SVC_FUZZ_RUNS the cases per operation; SVC_FUZZ_ONLY limits the
 * run to operations whose `METHOD /path` contains it; SVC_FUZZ_DUMP names a file that receives a failing request whole.
 */

type Json = Record<string, any>;
const seed = Number(process.env.SVC_FUZZ_SEED ?? 20261123);
const runsPerOperation = Number(process.env.SVC_FUZZ_RUNS ?? 32);
/** Replays one operation: the seeds of the others do not change. */
const only = process.env.SVC_FUZZ_ONLY;
const answerWithinMs = 1000;

let t: TestServer;
let admin: Client;
let doc: Json;
/** Ids of things that exist, so generated requests reach past the not-found checks. */
const ids: Record<string, string[]> = { any: [] };

before(async () => {
  // No runner role: started runs stay queued, so no sandbox is started by the fuzzer.
  t = await startTestServer({ SVC_ROLES: 'api,projector' });
  admin = await adminSession(t);
  doc = (await admin.get('/api/openapi.json')).body;
  const add = (kind: string, id: string | undefined) => {
    assert.ok(id, `fixture ${kind} was not created`);
    (ids[kind] ??= []).push(id);
    ids.any!.push(id);
  };
  const provider = await admin.post<{ id: string }>('/api/providers', { name: 'Fake', kind: 'fake' });
  add('provider', provider.body.id);
  add('model', (await admin.get('/api/models')).body.items[0]?.id);
  const job = await admin.post<{ id: string }>('/api/jobs', { name: 'fuzzed', instruction: 'echo hi' });
  add('job', job.body.id);
  add('run', (await admin.post<{ runId: string }>(`/api/jobs/${job.body.id}/runs`, {})).body.runId);
  add('secret', (await admin.post<{ id: string }>('/api/secrets', { name: 'FUZZ_SECRET', value: 'v' })).body.id);
  // A reserved name (RFC 2606): resolvers answer at once that it does not exist, so testing it never waits on a network.
  add(
    'mcp',
    (
      await admin.post<{ id: string }>('/api/mcp-servers', {
        name: 'fuzz',
        transport: 'http',
        url: 'https://fuzz.invalid/mcp',
      })
    ).body.id,
  );
  add('user', (await admin.get<{ id: string }>('/api/users/me')).body.id);
  assert.equal((await admin.request('PUT', `/api/jobs/${job.body.id}/state/k`, { value: 'v' })).status, 200);
});
after(async () => t?.stop());

function resolve(s: Json): Json {
  if (s && typeof s.$ref === 'string') return resolve(doc.components.schemas[s.$ref.split('/').pop()!]);
  return s ?? {};
}

function nest(depth: number, leaf: unknown, asObject: boolean): unknown {
  let v = leaf;
  for (let i = 0; i < depth; i++) v = asObject ? { a: v } : [v];
  return v;
}

const hostileStrings = [
  '',
  ' ',
  'NaN',
  'Infinity',
  '-Infinity',
  '1e308',
  '-0',
  '1e20',
  '9007199254740993',
  '0x10',
  'true',
  'null',
  '[]',
  '{}',
  '\u0000',
  '\ud800',
  '\udfff\ud800',
  '🙂'.repeat(50),
  '\u202e\u0644\u0627',
  'e\u0301'.repeat(30),
  '../../../etc/passwd',
  '%2e%2e%2f%00',
  '{{secret:FUZZ_SECRET}}',
  '<script>alert(1)</script>',
  "' OR 1=1 --",
  '__proto__',
  'constructor',
  'a'.repeat(10_000),
  'ß'.repeat(70_000),
];

/** Values that no schema asks for. */
const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.constantFrom<unknown>(
      1e308,
      -1e308,
      1e20,
      -0,
      0.5,
      -1,
      2 ** 53,
      Number.MAX_SAFE_INTEGER,
      Number.MIN_SAFE_INTEGER,
      5e-324,
      true,
      false,
      null,
      {},
      [],
      0,
    ),
  },
  { weight: 4, arbitrary: fc.constantFrom(...hostileStrings) },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 200 }) },
  { weight: 1, arbitrary: fc.constantFrom<unknown>(nest(60, 1, false), nest(60, 'x', true), nest(200, 1, false)) },
  {
    weight: 1,
    arbitrary: fc.constantFrom<unknown>(
      Array.from({ length: 10_000 }, () => 1),
      Array.from({ length: 10_000 }, () => 'x'),
      Array.from({ length: 10_000 }, () => ({})),
      Object.fromEntries(Array.from({ length: 2_000 }, (_, i) => [`k${i}`, i])),
    ),
  },
);

const idLike = /(^id$|Id$|^jobId$|^userId$)/;

/** A value that follows `schema` most of the time, and a hostile one otherwise. */
function valueOf(schema: Json, depth: number, name = ''): fc.Arbitrary<unknown> {
  return fc.oneof({ weight: 6, arbitrary: validish(schema, depth, name) }, { weight: 1, arbitrary: hostileValue });
}

function validish(raw: Json, depth: number, name: string): fc.Arbitrary<unknown> {
  const s = resolve(raw);
  if ('const' in s) return fc.constant(s.const);
  if (Array.isArray(s.enum)) return fc.constantFrom(...(s.enum as unknown[]));
  for (const key of ['anyOf', 'oneOf'] as const)
    if (Array.isArray(s[key])) return fc.oneof(...(s[key] as Json[]).map((b) => validish(b, depth, name)));
  if (Array.isArray(s.allOf)) return validish(s.allOf[0] as Json, depth, name);
  const type = Array.isArray(s.type) ? s.type[0] : s.type;
  switch (type) {
    case 'string': {
      const max = Math.min(s.maxLength ?? 50, 300);
      const min = Math.min(s.minLength ?? 0, max);
      const options: fc.Arbitrary<string>[] = [
        fc.string({ minLength: min, maxLength: max }),
        fc.string({ unit: 'grapheme', minLength: min, maxLength: Math.min(max, 40) }),
      ];
      if (typeof s.pattern === 'string')
        options.push(fc.stringMatching(new RegExp(s.pattern)).filter((v) => v.length >= min && v.length <= max));
      if (idLike.test(name) && ids.any!.length > 0) options.push(fc.constantFrom(...ids.any!));
      const weighted = options.map((arbitrary) => ({ weight: 4, arbitrary }));
      // At the bound and one past it; megabyte strings are rarer, so the run stays fast.
      if (typeof s.maxLength === 'number')
        weighted.push({
          weight: s.maxLength > 10_000 ? 1 : 4,
          arbitrary: fc.constantFrom('x'.repeat(s.maxLength), 'x'.repeat(s.maxLength + 1)),
        });
      return fc.oneof(...weighted);
    }
    case 'integer': {
      const lo = typeof s.minimum === 'number' ? s.minimum : -1_000_000;
      const hi = typeof s.maximum === 'number' ? s.maximum : 1_000_000;
      const near = fc.integer({
        min: Math.max(lo, -(2 ** 31)),
        max: Math.min(hi, 2 ** 31 - 1, Math.max(lo, -(2 ** 31)) + 1_000),
      });
      return fc.oneof(near, fc.constantFrom(lo, hi, lo - 1, hi + 1));
    }
    case 'number': {
      const lo = typeof s.minimum === 'number' ? s.minimum : -1e6;
      const hi = typeof s.maximum === 'number' ? s.maximum : 1e6;
      return fc.oneof(
        fc.double({ min: lo, max: hi, noNaN: true, noDefaultInfinity: true }),
        fc.constantFrom(lo, hi, hi * 2 + 1),
      );
    }
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array': {
      if (depth > 4) return fc.constant([]);
      const max = Math.min(s.maxItems ?? 3, 3);
      return fc.array(valueOf(s.items ?? {}, depth + 1), { maxLength: max });
    }
    case 'object': {
      if (depth > 4) return fc.constant({});
      const props = (s.properties ?? {}) as Record<string, Json>;
      const model: Record<string, fc.Arbitrary<unknown>> = {};
      for (const [k, v] of Object.entries(props)) model[k] = valueOf(v, depth + 1, k);
      const required = ((s.required ?? []) as string[]).filter((k) => k in model);
      const record = fc.record(model, { requiredKeys: required });
      const extra = s.patternProperties
        ? Object.values(s.patternProperties as Record<string, Json>)[0]
        : typeof s.additionalProperties === 'object'
          ? s.additionalProperties
          : null;
      const withMap = extra
        ? fc
            .tuple(
              record,
              fc.dictionary(fc.string({ maxLength: 20 }), valueOf(extra as Json, depth + 1), { maxKeys: 3 }),
            )
            .map(([r, d]) => ({ ...d, ...r }))
        : record;
      // Now and then a field the schema does not know.
      return fc.oneof(
        { weight: 5, arbitrary: withMap },
        {
          weight: 1,
          arbitrary: fc
            .tuple(withMap, fc.string({ maxLength: 10 }), hostileValue)
            .map(([r, k, v]) => ({ ...r, [`x_${k}`]: v })),
        },
      );
    }
    default:
      return fc.jsonValue({ maxDepth: 3 });
  }
}

interface Operation {
  method: string;
  path: string;
  key: string;
  params: Json[];
  body: Json | null;
}

interface FuzzRequest {
  url: string;
  body: string | undefined;
  contentType: string;
}

const rawBodies = [
  '',
  'not json',
  '[',
  '{"a":',
  'null',
  '"text"',
  '1e999',
  '{"__proto__":{"polluted":true}}',
  '{"constructor":{"prototype":{"polluted":true}}}',
  '\uFEFF{}',
];

function asText(v: unknown): string {
  return typeof v === 'string' ? v : (JSON.stringify(v) ?? '');
}

/** Percent-encodes the UTF-8 bytes of `s`; a lone surrogate becomes U+FFFD, as a client's encoder would send it. */
function encodeSegment(s: string): string {
  return [...Buffer.from(s, 'utf8')]
    .map((b) =>
      /[A-Za-z0-9\-_.~]/.test(String.fromCharCode(b))
        ? String.fromCharCode(b)
        : `%${b.toString(16).toUpperCase().padStart(2, '0')}`,
    )
    .join('');
}

function requestOf(op: Operation): fc.Arbitrary<FuzzRequest> {
  const pathParams = op.params.filter((p) => p.in === 'path');
  const query = op.params.filter((p) => p.in === 'query');
  const pathArb = fc.tuple(
    ...pathParams.map((p) => {
      const own = ids[p.name === 'jobId' ? 'job' : 'any'] ?? [];
      return fc.oneof(
        { weight: 3, arbitrary: own.length > 0 ? fc.constantFrom(...own) : fc.uuid() },
        { weight: 2, arbitrary: validish(p.schema as Json, 0, p.name).map(asText) },
        { weight: 1, arbitrary: fc.constantFrom(...hostileStrings.slice(0, 28)) },
      );
    }),
  );
  const queryArb = fc.tuple(
    ...query.map((p) =>
      fc.option(
        fc
          .oneof(
            { weight: 4, arbitrary: validish(p.schema as Json, 0, p.name) },
            { weight: 1, arbitrary: hostileValue },
          )
          .map(asText),
        { nil: undefined },
      ),
    ),
    fc.option(fc.tuple(fc.string({ maxLength: 10 }), fc.constantFrom(...hostileStrings.slice(0, 20))), {
      nil: undefined,
    }),
  );
  const bodyArb: fc.Arbitrary<{ text: string | undefined; contentType: string }> = op.body
    ? fc.oneof(
        {
          weight: 12,
          arbitrary: valueOf(op.body, 0).map((v) => ({
            text: JSON.stringify(v) ?? 'null',
            contentType: 'application/json',
          })),
        },
        {
          weight: 1,
          arbitrary: fc.constantFrom(...rawBodies).map((text) => ({ text, contentType: 'application/json' })),
        },
        {
          weight: 1,
          arbitrary: fc
            .constantFrom('text/plain', 'application/x-www-form-urlencoded', 'application/json; charset=latin1')
            .map((contentType) => ({ text: 'a=1', contentType })),
        },
      )
    : fc.constant({ text: op.method === 'POST' ? '{}' : undefined, contentType: 'application/json' });
  return fc.tuple(pathArb, queryArb, bodyArb).map(([values, q, body]) => {
    let i = 0;
    const path = op.path.replace(/\{[^}]+\}/g, () => encodeSegment(values[i++] as string));
    const search = new URLSearchParams();
    query.forEach((p, j) => {
      const v = q[j] as string | undefined;
      if (v !== undefined) search.append(p.name as string, v);
    });
    const unknown = q[query.length] as [string, string] | undefined;
    if (unknown) search.append(`x${unknown[0]}`, unknown[1]);
    const qs = search.toString();
    return { url: path + (qs ? `?${qs}` : ''), body: body.text, contentType: body.contentType };
  });
}

/** Routes whose answer is a stream that stays open: only the status and headers are waited for. */
const streaming = new Set(['GET /api/runs/{id}/stream', 'GET /api/events']);
/** Ends the fuzzing admin's session. */
const skipped = new Set(['POST /api/auth/logout']);

/** Slow answers that were fast when sent again: the machine was busy, not the route (reported, not failed). */
let noisy = 0;

async function send(op: Operation, req: FuzzRequest, retried = false): Promise<string | null> {
  const headers: Record<string, string> = { cookie: (admin.credential as { cookie: string }).cookie };
  if (req.body !== undefined) headers['content-type'] = req.contentType;
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), 10_000);
  const started = performance.now();
  let status: number;
  let text = '';
  let contentType = '';
  let requestIdHeader: string | null = null;
  try {
    // A DELETE of a fixture would leave the rest of the run with nothing to reach: deletes get unknown ids only.
    const url =
      op.method === 'DELETE'
        ? req.url.replace(new RegExp(ids.any!.join('|') || '^$', 'g'), '00000000-0000-7000-8000-00000000beef')
        : req.url;
    const res = await fetch(t.url + url, {
      method: op.method,
      headers,
      body: req.body,
      redirect: 'manual',
      signal: abort.signal,
    });
    status = res.status;
    contentType = res.headers.get('content-type') ?? '';
    requestIdHeader = res.headers.get('x-request-id');
    if (streaming.has(op.key) && contentType.includes('text/event-stream')) abort.abort();
    else text = await res.text();
  } catch (err) {
    return `no answer: ${errorMessage(err)}`;
  } finally {
    clearTimeout(timer);
  }
  const ms = performance.now() - started;
  if (status >= 500) return `answered ${status}: ${text.slice(0, 300)}`;
  if (ms > answerWithinMs) {
    // On two busy cores a pause of the whole process can hit any request; a route that is slow is slow again.
    if (retried) return `answered ${status} after ${Math.round(ms)} ms, twice`;
    noisy++;
    return send(op, req, true);
  }
  if (status >= 400) {
    let body: Json;
    try {
      body = JSON.parse(text) as Json;
    } catch {
      return `error ${status} is not JSON: ${text.slice(0, 200)}`;
    }
    if (typeof body.code !== 'string' || typeof body.message !== 'string' || typeof body.requestId !== 'string')
      return `error ${status} lacks code, message or requestId: ${text.slice(0, 200)}`;
    if (body.requestId !== requestIdHeader) return `error ${status} requestId differs from X-Request-ID`;
    const extra = Object.keys(body).filter((k) => !['code', 'message', 'fields', 'details', 'requestId'].includes(k));
    if (extra.length > 0) return `error ${status} has unknown members ${extra.join(', ')}`;
    if (body.code === 'validation_failed') {
      if (!Array.isArray(body.fields) || body.fields.length === 0 || body.fields.length > 20)
        return `validation_failed with fields ${JSON.stringify(body.fields)?.slice(0, 200)}`;
      for (const f of body.fields as Json[])
        if (typeof f.field !== 'string' || typeof f.code !== 'string' || typeof f.message !== 'string')
          return `a field error is not {field, code, message}: ${JSON.stringify(f)}`;
    }
  }
  return null;
}

function operations(): Operation[] {
  const out: Operation[] = [];
  for (const [path, ops] of Object.entries(doc.paths as Json)) {
    for (const [method, op] of Object.entries(ops as Json)) {
      const key = `${method.toUpperCase()} ${path}`;
      const params = (op.parameters ?? []) as Json[];
      const body = (op.requestBody?.content?.['application/json']?.schema ?? null) as Json | null;
      if (params.length === 0 && !body) continue;
      out.push({ method: method.toUpperCase(), path, key, params, body });
    }
  }
  return out;
}

describe('fuzz', () => {
  it('answers every generated request within a second, never with a 5xx, with well-formed errors', async (tc) => {
    const ops = operations();
    assert.ok(ops.length > 40, `only ${ops.length} operations with parameters or a body`);
    const failures: string[] = [];
    const durations: [string, number][] = [];
    let cases = 0;
    let index = 0;
    for (const op of ops) {
      index++;
      if (only && !op.key.includes(only)) continue;
      if (skipped.has(op.key)) {
        tc.diagnostic(`skipped ${op.key}: it ends the session the fuzzer uses (covered by the access matrix)`);
        continue;
      }
      const opSeed = seed + index;
      const opStarted = performance.now();
      let problem: string | null = null;
      try {
        await fc.assert(
          fc.asyncProperty(requestOf(op), async (req) => {
            cases++;
            const found = await send(op, req);
            if (found) {
              problem = `${op.key}: ${found}\n  request: ${op.method} ${req.url.slice(0, 300)} body (${req.body?.length ?? 0} characters) ${String(req.body).slice(0, 300)}`;
              if (process.env.SVC_FUZZ_DUMP)
                writeFileSync(process.env.SVC_FUZZ_DUMP, JSON.stringify({ method: op.method, ...req }));
              throw new Error(problem);
            }
          }),
          { seed: opSeed, numRuns: runsPerOperation, endOnFailure: true },
        );
      } catch (err) {
        failures.push(
          `${problem ?? `${op.key}: ${errorMessage(err).slice(0, 500)}`}\n  replay: SVC_FUZZ_SEED=${seed} (this operation's fast-check seed: ${opSeed})`,
        );
      }
      durations.push([op.key, performance.now() - opStarted]);
    }
    durations.sort((a, b) => b[1] - a[1]);
    tc.diagnostic(
      `slowest operations: ${durations
        .slice(0, 6)
        .map(([k, ms]) => `${k} ${Math.round(ms)} ms`)
        .join(', ')}`,
    );
    tc.diagnostic(
      `${cases} cases over ${ops.length} operations, seed ${seed}; ${noisy} slow answers were fast when sent again`,
    );
    if (!only) assert.ok(cases >= ops.length * Math.min(runsPerOperation, 10), `only ${cases} cases ran`);
    assert.equal(failures.length, 0, `seed ${seed}; ${failures.length} operations failed:\n${failures.join('\n')}`);
  });
});
