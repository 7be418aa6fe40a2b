import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { adminSession, Client, startTestServer, type TestServer } from './harness.js';

/**
 * Every number, string, array and map a client sends has bounds (docs/security.md, "Requests: validation cost,
 * bounds, access"): walked over the OpenAPI document, so a new route or field without them fails here.
 */
let t: TestServer;
let admin: Client;
type Json = Record<string, any>;
let doc: Json;

before(async () => {
  t = await startTestServer();
  admin = await adminSession(t);
  doc = (await admin.get('/api/openapi.json')).body;
});
after(async () => t?.stop());

function resolve(s: Json): Json {
  if (typeof s.$ref === 'string') return resolve(doc.components.schemas[s.$ref.split('/').pop()!]);
  return s;
}

/** Collects `where: problem` for every unbounded part of an input schema. */
function unbounded(schema: Json, where: string, out: string[], seen = new Set<Json>()): void {
  const s = resolve(schema);
  if (seen.has(s)) return;
  seen.add(s);
  for (const key of ['anyOf', 'oneOf', 'allOf'] as const)
    for (const b of (s[key] ?? []) as Json[]) unbounded(b, where, out, seen);
  const types: string[] = Array.isArray(s.type) ? s.type : s.type ? [s.type] : [];
  if (types.includes('integer') || types.includes('number')) {
    if (typeof s.minimum !== 'number' && typeof s.exclusiveMinimum !== 'number')
      out.push(`${where}: number without a minimum`);
    if (typeof s.maximum !== 'number' && typeof s.exclusiveMaximum !== 'number')
      out.push(`${where}: number without a maximum`);
  }
  if (types.includes('string') && typeof s.maxLength !== 'number' && !('const' in s) && !Array.isArray(s.enum))
    out.push(`${where}: string without maxLength`);
  if (types.includes('array')) {
    if (typeof s.maxItems !== 'number') out.push(`${where}: array without maxItems`);
    if (s.items) unbounded(s.items, `${where}[]`, out, seen);
  }
  if (types.includes('object')) {
    for (const [k, v] of Object.entries((s.properties ?? {}) as Json)) unbounded(v, `${where}.${k}`, out, seen);
    const open = s.patternProperties || (s.additionalProperties && typeof s.additionalProperties === 'object');
    if (open && typeof s.maxProperties !== 'number') out.push(`${where}: map without maxProperties`);
    for (const v of Object.values((s.patternProperties ?? {}) as Json)) unbounded(v, `${where}.*`, out, seen);
    if (s.additionalProperties && typeof s.additionalProperties === 'object')
      unbounded(s.additionalProperties, `${where}.*`, out, seen);
  }
}

describe('bounds', () => {
  it('bounds every number, string, array and map of every path, query and body', () => {
    const problems: string[] = [];
    let checked = 0;
    for (const [path, ops] of Object.entries(doc.paths as Json)) {
      for (const [method, op] of Object.entries(ops as Json)) {
        for (const p of (op.parameters ?? []) as Json[]) {
          checked++;
          unbounded(p.schema, `${method.toUpperCase()} ${path} ${p.in} ${p.name}`, problems);
        }
        const body = op.requestBody?.content?.['application/json']?.schema;
        if (body) {
          checked++;
          unbounded(body, `${method.toUpperCase()} ${path} body`, problems);
        }
      }
    }
    assert.ok(checked > 50, `only ${checked} parameters and bodies found`);
    assert.deepEqual(problems, []);
  });

  it('answers 400 naming the field for huge numbers in path, query and body', async () => {
    const job = await admin.post<{ id: string }>('/api/jobs', { name: 'bounds', instruction: 'x' });
    assert.equal(job.status, 201);
    const cases: [string, string, unknown, string][] = [
      ['GET', '/api/jobs?page=1e20', undefined, 'page'],
      ['GET', '/api/runs?page=1e20', undefined, 'page'],
      ['GET', '/api/secrets?page=99999999999999999', undefined, 'page'],
      ['GET', '/api/runs?from=1e300', undefined, 'from'],
      ['GET', `/api/runs/x/events?after=1e300`, undefined, 'after'],
      ['GET', `/api/jobs/${job.body.id}/playbook/versions/1e20`, undefined, 'version'],
      ['POST', '/api/tokens', { name: 'far', expiresAt: 1e308 }, 'expiresAt'],
      ['POST', '/api/tokens', { name: 'far', expiresAt: -1 }, 'expiresAt'],
      ['PATCH', `/api/jobs/${job.body.id}`, { limits: { maxCostUsd: 1e308 } }, 'limits.maxCostUsd'],
      ['PATCH', '/api/settings', { dailySpendLimitUsd: 1e308 }, 'dailySpendLimitUsd'],
      ['POST', `/api/jobs/${job.body.id}/playbook/rollback`, { version: 1e20 }, 'version'],
      // Names of Object.prototype's members are no sort keys (found by tests/api/fuzz.test.ts: a 500).
      ['GET', '/api/mcp-servers?sort=constructor', undefined, 'sort'],
      ['GET', '/api/jobs?sort=-toString', undefined, 'sort'],
      ['GET', '/api/runs?sort=__proto__', undefined, 'sort'],
    ];
    const failures: string[] = [];
    for (const [method, path, body, field] of cases) {
      const res = await admin.request(method, path, body);
      const named =
        Array.isArray(res.body?.fields) && res.body.fields.some((f: { field: string }) => f.field === field);
      if (res.status !== 400 || res.body.code !== 'validation_failed' || !named)
        failures.push(`${method} ${path}: ${res.status} ${res.text.slice(0, 200)}`);
    }
    assert.deepEqual(failures, []);
  });

  it('still takes the largest page whose offset is exact, and an expiry in year 9999', async () => {
    const far = await admin.get('/api/jobs?page=90071992547409');
    assert.equal(far.status, 200, far.text);
    assert.deepEqual(far.body.items, []);
    const token = await admin.post('/api/tokens', { name: 'late', expiresAt: Date.UTC(9999, 11, 31) });
    assert.equal(token.status, 201, token.text);
  });
});
