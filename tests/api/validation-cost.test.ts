import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ErrorBody } from '../../schemas/common.js';
import { waitFor } from '../wait.js';
import { adminSession, Client, startTestServer, type Answer, type TestServer } from './harness.js';

/**
 * Refusing a body costs time linear in its size and reports a bounded list of fields (docs/security.md, "Requests:
 * validation cost, bounds, access"). Each hostile body is close to the 1 MiB body limit and fails on every item;
 * meanwhile a second stream of requests measures how long the server keeps everyone else waiting.
 */
let t: TestServer;
let admin: Client;
let jobId: string;
let hookToken: string;

before(async () => {
  t = await startTestServer();
  admin = await adminSession(t);
  const job = await admin.post<{ id: string }>('/api/jobs', { name: 'cost', instruction: 'say hi' });
  assert.equal(job.status, 201, job.text);
  jobId = job.body.id;
  const hook = await admin.post<{ token: string }>(`/api/jobs/${jobId}/webhook-token`);
  assert.equal(hook.status, 201, hook.text);
  hookToken = hook.body.token;
});
after(async () => t?.stop());

/** Repeats `item` (already JSON) into a JSON array of about `bytes`. */
function bigArray(item: string, bytes = 950_000): string {
  return `[${Array.from({ length: Math.floor(bytes / (item.length + 1)) }, () => item).join(',')}]`;
}

/** A JSON object with about `bytes` of `"kN":<value>` members. */
function bigObject(value: string, bytes = 950_000): string {
  const n = Math.floor(bytes / (value.length + 10));
  return `{${Array.from({ length: n }, (_, i) => `"k${i}":${value}`).join(',')}}`;
}

type Hostile = {
  name: string;
  method: string;
  path: () => string;
  body: string;
  code: 'validation_failed' | 'invalid_request_body';
  webhook?: boolean;
};

const hostile: Hostile[] = [
  // The body of the report: 50,000 grants whose tool list is a number. Too many objects to parse.
  {
    name: 'job MCP grants, wrong type in every item',
    method: 'PUT',
    path: () => `/api/jobs/${jobId}/mcp-servers`,
    body: bigArray('{"allowedTools":1}'),
    code: 'invalid_request_body',
  },
  // The same within the parser's limits: refused by maxItems before any item is looked at.
  {
    name: '19,000 job MCP grants',
    method: 'PUT',
    path: () => `/api/jobs/${jobId}/mcp-servers`,
    body: bigArray('{"allowedTools":1}', 19_000 * 19),
    code: 'validation_failed',
  },
  {
    name: 'job MCP grants, empty objects',
    method: 'PUT',
    path: () => `/api/jobs/${jobId}/mcp-servers`,
    body: bigArray('{}'),
    code: 'invalid_request_body',
  },
  {
    name: 'job secrets, numbers',
    method: 'PUT',
    path: () => `/api/jobs/${jobId}/secrets`,
    body: bigArray('1'),
    code: 'invalid_request_body',
  },
  {
    name: 'job secrets, 99,000 numbers',
    method: 'PUT',
    path: () => `/api/jobs/${jobId}/secrets`,
    body: bigArray('1', 99_000 * 2),
    code: 'validation_failed',
  },
  {
    name: 'job allowed domains, numbers',
    method: 'POST',
    path: () => '/api/jobs',
    body: `{"name":1,"instruction":2,"allowedDomains":${bigArray('1', 190_000)}}`,
    code: 'validation_failed',
  },
  {
    name: 'MCP server env, numbers',
    method: 'POST',
    path: () => '/api/mcp-servers',
    body: `{"name":"x","transport":"stdio","env":${bigObject('1', 9_000)}}`,
    code: 'validation_failed',
  },
  {
    name: 'job, unknown fields',
    method: 'PATCH',
    path: () => `/api/jobs/${jobId}`,
    body: bigObject('1', 9_000),
    code: 'validation_failed',
  },
  {
    name: 'object with 90,000 fields',
    method: 'PATCH',
    path: () => `/api/jobs/${jobId}`,
    body: bigObject('1'),
    code: 'invalid_request_body',
  },
  {
    name: 'playbook learnings, wrong types',
    method: 'PUT',
    path: () => `/api/jobs/${jobId}/playbook`,
    body: `{"content":{"learnings":${bigArray('{"text":1,"hits":-1}', 19_000 * 21)}}}`,
    code: 'validation_failed',
  },
  // Within every size bound, yet 90,000 wrong values: listing them all would cost a second.
  {
    name: 'playbook sources, 90,000 numbers',
    method: 'PUT',
    path: () => `/api/jobs/${jobId}/playbook`,
    body: `{"content":{"learnings":${bigArray(`{"text":"x","sources":${bigArray('1', 180)}}`, 1000 * 190)}}}`,
    code: 'validation_failed',
  },
  {
    name: 'playbook script args, numbers',
    method: 'PUT',
    path: () => `/api/jobs/${jobId}/playbook`,
    body: `{"content":{"toolkit":[{"name":"a","content":"x","args":${bigObject('1', 9_000)}}]}}`,
    code: 'validation_failed',
  },
  {
    name: 'deep nesting',
    method: 'POST',
    path: () => `/api/jobs/${jobId}/runs`,
    body: `{"input":${'['.repeat(400_000)}${']'.repeat(400_000)}}`,
    code: 'invalid_request_body',
  },
  {
    name: 'deep nesting in a webhook',
    method: 'POST',
    path: () => `/hooks/${jobId}`,
    body: `${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}`,
    code: 'invalid_request_body',
    webhook: true,
  },
];

interface Run {
  res: Answer<ErrorBody>;
  ms: number;
  maxStallMs: number;
  slowest: number;
  others: number;
}

const describeRun = (m: Run) =>
  `answered in ${m.ms.toFixed(0)} ms; event loop stalled at most ${m.maxStallMs.toFixed(0)} ms; other requests: ${m.others}, slowest ${m.slowest.toFixed(0)} ms`;

/** Sends the hostile request while another stream of requests runs and a 2 ms tick watches the event loop. */
async function measure(h: Hostile): Promise<Run> {
  let stop = false;
  const otherLatencies: number[] = [];
  // The other stream: cheap authenticated reads, one after another, for as long as the hostile request lasts.
  const other = (async () => {
    while (!stop) {
      const started = performance.now();
      const res = await admin.get('/api/users/me');
      otherLatencies.push(performance.now() - started);
      assert.equal(res.status, 200);
    }
  })();
  await waitFor('the other stream to be answered once', () => otherLatencies.length > 0);
  // The largest gap between ticks is the longest the event loop was held.
  let last = performance.now();
  let maxStallMs = 0;
  const tick = setInterval(() => {
    const now = performance.now();
    maxStallMs = Math.max(maxStallMs, now - last);
    last = now;
  }, 2);
  const started = performance.now();
  const caller = h.webhook ? new Client(t.url) : admin;
  const res = await caller.request<ErrorBody>(
    h.method,
    h.path(),
    h.body,
    h.webhook ? { authorization: `Bearer ${hookToken}` } : {},
  );
  const ms = performance.now() - started;
  clearInterval(tick);
  stop = true;
  await other;
  return { res, ms, maxStallMs, slowest: Math.max(...otherLatencies), others: otherLatencies.length };
}

describe('validation cost', () => {
  for (const h of hostile) {
    it(`refuses ${h.name} fast, with at most 20 fields, without stalling other requests`, async (tc) => {
      // A route's validators are compiled at its first request (docs/design.md, "API"): a refused string first, so
      // the measure is of the hostile body and not of that one-time compile.
      if (!h.webhook) assert.equal((await admin.request(h.method, h.path(), '"x"')).status, 400);
      // Measured twice at most: on two busy cores a pause of the whole process can hit one attempt, while a cost
      // that grows with the body shows in both.
      let m = await measure(h);
      if (m.ms >= 1000 || m.maxStallMs >= 200 || m.slowest >= 500) {
        tc.diagnostic(`first attempt: ${describeRun(m)}; measuring again`);
        m = await measure(h);
      }
      const { res } = m;
      assert.equal(res.status, 400, `${h.name}: ${res.text.slice(0, 300)}`);
      assert.equal(res.body.code, h.code, res.text.slice(0, 300));
      if (h.code === 'validation_failed') {
        assert.ok(
          Array.isArray(res.body.fields) && res.body.fields.length >= 1 && res.body.fields.length <= 20,
          `fields: ${res.body.fields?.length}`,
        );
      }
      assert.equal(typeof res.body.requestId, 'string');
      tc.diagnostic(describeRun(m));
      assert.ok(m.ms < 1000, `${h.name} took ${m.ms.toFixed(0)} ms`);
      // The longest stall of the event loop the test process shares with the server (client work included).
      assert.ok(m.maxStallMs < 200, `${h.name}: the event loop stalled for ${m.maxStallMs.toFixed(0)} ms`);
      assert.ok(m.slowest < 500, `${h.name}: another request waited ${m.slowest.toFixed(0)} ms`);
    });
  }

  it('reports the first 20 fields of many and counts them all', async () => {
    const res = await admin.request(
      'PUT',
      `/api/jobs/${jobId}/mcp-servers`,
      bigArray('{"allowedTools":1,"serverId":"x"}', 10_000),
    );
    assert.equal(res.status, 400);
    assert.equal(res.body.fields.length, 1, 'an array over its maxItems is refused as a whole, before its items');
    assert.equal(res.body.fields[0].field, 'body');
    assert.equal(res.body.fields[0].code, 'too_long');

    const fifty = JSON.stringify(Array.from({ length: 50 }, () => ({ allowedTools: 1, serverId: 'x' })));
    const many = await admin.request('PUT', `/api/jobs/${jobId}/mcp-servers`, fifty);
    assert.equal(many.status, 400);
    assert.equal(many.body.fields.length, 20);
    assert.deepEqual(many.body.fields[0], {
      field: '[0].allowedTools',
      code: 'invalid',
      message: 'has an invalid value',
    });
    assert.equal(many.body.details?.fieldCount, '50', 'the count of every failing field');
    assert.equal(many.body.details?.truncated, 'true');
    assert.match(many.body.message, /50 invalid fields/);
  });
});
