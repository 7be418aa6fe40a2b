import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { statSync } from 'node:fs';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { brokerLimits, costLimitMessage } from '../../broker/limits.js';
import type { RunSession } from '../../broker/run-session.js';
import { jobStateStreamId, stateLimits } from '../../domain/job-state.js';
import { runSessionHooks } from '../../server/broker-hooks.js';
import { TimelineWriter } from '../../app/timeline.js';
import { FakeClient, fakeScripts, type FakeResponse } from '../../adapters/models/fake.js';
import type { ModelClient, ModelRequest, Price } from '../../adapters/models/types.js';
import { waitFor } from '../wait.js';
import { brokerFixture } from './fixture.js';

/**
 * The broker (docs/sandbox.md) as a sandbox sees it: a real Broker on a Unix socket, sessions over a real
 * JobStateStore and TimelineWriter on in-memory stores, and models backed by the product's fake provider.
 */
const price: Price = { in: 1_000_000, out: 1_000_000, cacheRead: 0, cacheWrite: 0 }; // 1 micro-USD per token
const MiB = 1024 * 1024;
const workspaceId = 'ws-broker';
const fixture = brokerFixture('broker');
const { broker } = fixture;

interface ModelCall {
  req: ModelRequest;
  start: number;
  end: number | null;
}

interface Run {
  session: RunSession;
  token: string;
  runId: string;
  jobId: string;
  timeline: TimelineWriter;
  /** Fake provider ids of the agent and utility models; each run has its own script queues. */
  agent: string;
  utility: string;
  calls: ModelCall[];
  /** Model calls running right now, and the most at once. */
  live: { now: number; max: number };
  call(method: string, path: string, body?: unknown): Promise<Answer>;
  entries(): Promise<Array<{ type: string; payload: Record<string, any>; ms: number | null }>>;
}

/** A FakeClient that also notes every request and how many run at once. */
function recording(providerId: string, calls: ModelCall[], live: Run['live']): ModelClient {
  const fake = new FakeClient(providerId);
  return {
    async complete(req) {
      const entry: ModelCall = { req, start: performance.now(), end: null };
      calls.push(entry);
      live.now++;
      live.max = Math.max(live.max, live.now);
      try {
        return await fake.complete(req);
      } finally {
        live.now--;
        entry.end = performance.now();
      }
    },
  };
}

async function openRun(options: { costLimit?: number; agentSpend?: () => number } = {}): Promise<Run> {
  const runId = `run-${randomUUID()}`;
  const jobId = `job-${randomUUID()}`;
  const token = `tok-${randomUUID()}`;
  const agent = `fake-agent-${randomUUID()}`;
  const utility = `fake-utility-${randomUUID()}`;
  const calls: ModelCall[] = [];
  const live = { now: 0, max: 0 };
  const timeline = new TimelineWriter(fixture.stores.events, runId, workspaceId);
  const session = broker.open({
    runId,
    jobId,
    workspaceId,
    token,
    costLimit: options.costLimit ?? 0,
    jobState: fixture.jobState,
    egress: { network: 'none', allowedDomains: null, allowPrivateNetwork: false },
    hooks: runSessionHooks({
      timeline,
      agentModel: { client: recording(agent, calls, live), name: 'agent-model', price },
      utilityModel: { client: recording(utility, calls, live), name: 'utility-model', price },
      agentSpend: options.agentSpend ?? (() => 0),
    }),
  });
  await fixture.serve(session, token);
  return {
    session,
    token,
    runId,
    jobId,
    timeline,
    agent,
    utility,
    calls,
    live,
    call: (method, path, body) => send(method, path, body, token),
    async entries() {
      await timeline.flush();
      const events = await fixture.stores.events.readStream(`timeline-${runId}`);
      return events.map((e) => {
        const data = e.data as { payload: Record<string, any>; ms: number | null };
        return { type: e.type, payload: data.payload, ms: data.ms };
      });
    },
  };
}

interface Answer {
  status: number;
  body: any;
  text: string;
  headers: IncomingHttpHeaders;
}

/** One request over the Unix socket; `body` a string or Buffer is sent as is, anything else as JSON. */
function send(
  method: string,
  path: string,
  body?: unknown,
  token?: string | null,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const payload =
    body === undefined
      ? null
      : typeof body === 'string' || Buffer.isBuffer(body)
        ? Buffer.from(body)
        : Buffer.from(JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        socketPath: fixture.socketFor(token),
        method,
        path,
        agent: false,
        headers: {
          ...(token ? { authorization: `Bearer ${token}` } : {}),
          ...(payload ? { 'content-type': 'application/json', 'content-length': String(payload.length) } : {}),
          ...headers,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: unknown = text;
          try {
            parsed = JSON.parse(text);
          } catch {
            // keep the text
          }
          resolve({ status: res.statusCode ?? 0, body: parsed, text, headers: res.headers });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(payload ?? undefined);
  });
}

/** 400 validation_failed whose one field has this name (and this code, when given). */
function assertInvalid(res: Answer, field: string, code?: string): void {
  assert.equal(res.status, 400, res.text);
  assert.equal(res.body.code, 'validation_failed');
  assert.equal(res.body.fields?.[0]?.field, field, res.text);
  if (code) assert.equal(res.body.fields[0].code, code, res.text);
}

const script = (providerId: string, responses: FakeResponse[]) => fakeScripts.push(providerId, responses);
const key = (n: number, c = 'k') => c.repeat(n);
const path = (k: string) => `/v1/state/${encodeURIComponent(k)}`;

describe('broker: transport and auth', () => {
  it('listens on sockets the sandbox user can open', async () => {
    assert.equal(statSync(fixture.socket).mode & 0o777, 0o666);
    const run = await openRun();
    assert.equal(statSync(fixture.socketFor(run.token)).mode & 0o777, 0o666);
    run.session.close();
  });

  it('answers 401 invalid_token without a token, with an unknown one, and after the session closes', async () => {
    const run = await openRun();
    assert.equal((await run.call('GET', '/v1/state')).status, 200);
    for (const token of [null, 'not-a-token', `${run.token}x`]) {
      const res = await send('GET', '/v1/state', undefined, token);
      assert.equal(res.status, 401);
      assert.equal(res.body.code, 'invalid_token');
      assert.equal(res.body.requestId, res.headers['x-request-id'], 'the error body repeats the request id');
    }
    assert.equal(
      (await send('GET', '/v1/state', undefined, null, { authorization: `Basic ${run.token}` })).status,
      401,
      'only a Bearer token',
    );
    assert.deepEqual(run.session.close(), { llmSpend: 0 });
    for (const [method, p] of [
      ['GET', '/v1/state'],
      ['PUT', '/v1/state/a'],
      ['POST', '/v1/output'],
      ['POST', '/v1/llm'],
      ['POST', '/v1/fail'],
    ] as const) {
      // The run's socket goes with its session: a call after close cannot connect, or is refused if it raced in.
      const res = await run
        .call(method, p, { value: 'v', key: 'k', prompt: 'p' })
        .catch((err: NodeJS.ErrnoException) => err.code);
      assert.ok(
        res === 'ENOENT' ||
          res === 'ECONNREFUSED' ||
          (typeof res === 'object' && res.status === 401 && res.body.code === 'invalid_token'),
        `${method} ${p} after close: ${JSON.stringify(res)}`,
      );
    }
    assert.equal(broker.sessionFor(run.token), null);
    assert.equal(await fixture.jobState.get(workspaceId, run.jobId, 'a'), null, 'nothing was written after close');
    assert.deepEqual(run.session.close(), { llmSpend: 0 }, 'closing twice is harmless');
  });

  it('refuses unknown routes, MCP without servers, and bodies that are not JSON or too large', async () => {
    const run = await openRun();
    const unknown = await run.call('GET', '/v1/nope');
    assert.equal(unknown.status, 404);
    assert.equal(unknown.body.code, 'not_found');
    assert.equal(
      (await run.call('DELETE', '/v1/state/a')).status,
      404,
      'state keys are not deleted through the broker',
    );
    assert.equal((await run.call('GET', '/v1/mcp/tools')).status, 404);
    assert.equal((await run.call('POST', '/v1/mcp/call', { server: 's', tool: 't', arguments: {} })).status, 404);
    const broken = await run.call('POST', '/v1/step', '{"name":');
    assert.equal(broken.status, 400);
    assert.equal(broken.body.code, 'invalid_request_body');
    const array = await run.call('POST', '/v1/step', '["name"]');
    assert.equal(array.status, 400);
    assert.equal(array.body.code, 'invalid_request_body', 'the body must be an object');
    assert.equal(run.session.steps.count, 0);

    const atCap = Buffer.alloc(8 * MiB, ' ');
    Buffer.from('{"name":"at the cap"}').copy(atCap);
    assert.equal((await run.call('POST', '/v1/step', atCap)).status, 200, 'a body of exactly 8 MiB is read');
    const overCap = Buffer.alloc(8 * MiB + 1, ' ');
    Buffer.from('{"name":"over the cap"}').copy(overCap);
    assertInvalid(await run.call('POST', '/v1/step', overCap), 'body', 'too_large');
    assert.equal(run.session.steps.last, 'at the cap');
    assert.equal((await run.call('GET', '/v1/state')).status, 200, 'the broker still answers after a refused body');
  });
});

describe('broker: state', () => {
  it('gets, sets and lists through the job state store, and records a state event', async () => {
    const run = await openRun();
    assert.deepEqual((await run.call('GET', '/v1/state/missing')).body, { key: 'missing', value: null, found: false });
    for (const [k, v] of [
      ['zeta', '1'],
      ['alpha', 'two'],
      ['mid dle/é', ''],
      ['9', 'nine'],
      ['10', 'ten'],
    ])
      assert.deepEqual((await run.call('PUT', path(k!), { value: v })).body, { ok: true });
    assert.deepEqual(
      (await run.call('GET', path('mid dle/é'))).body,
      { key: 'mid dle/é', value: '', found: true },
      'an empty value is found',
    );
    const listed = await run.call('GET', '/v1/state');
    assert.equal(listed.status, 200);
    assert.equal(
      listed.text,
      '{"10":"ten","9":"nine","alpha":"two","mid dle/é":"","zeta":"1"}',
      'one object, keys sorted as strings',
    );
    assert.equal((await fixture.jobState.get(workspaceId, run.jobId, 'alpha'))?.value, 'two');
    const events = await fixture.stores.events.readStream(jobStateStreamId(run.jobId));
    assert.deepEqual(
      events.map((e) => [e.type, (e.data as { key: string }).key]),
      [
        ['JobStateSet', 'zeta'],
        ['JobStateSet', 'alpha'],
        ['JobStateSet', 'mid dle/é'],
        ['JobStateSet', '9'],
        ['JobStateSet', '10'],
      ],
    );
    assert.deepEqual(events[0]!.metadata.actor, { type: 'run', id: run.runId }, 'written by the run');
    assert.equal(run.session.wroteState, true);

    assertInvalid(await run.call('PUT', path('x'), {}), 'value', 'required');
    assertInvalid(await run.call('PUT', path('x'), { value: 5 }), 'value');
    assertInvalid(await run.call('PUT', '/v1/state/%E0%A4%A', { value: 'v' }), 'key', 'invalid');
  });

  it('limits keys to 200 characters and values to 1 MiB', async () => {
    const run = await openRun();
    assert.equal((await run.call('PUT', path(key(stateLimits.keyChars)), { value: 'v' })).status, 200);
    assert.equal(
      (await run.call('PUT', path(key(stateLimits.keyChars / 2, 'é')), { value: 'v' })).status,
      200,
      'characters, not bytes',
    );
    assert.equal(
      (await run.call('PUT', path('\u{1F600}'.repeat(200)), { value: 'v' })).status,
      200,
      '200 characters outside the BMP',
    );
    assertInvalid(await run.call('PUT', path(key(201)), { value: 'v' }), 'key', 'too_large');
    assertInvalid(await run.call('PUT', path(`${'\u{1F600}'.repeat(200)}k`), { value: 'v' }), 'key', 'too_large');
    assertInvalid(await run.call('PUT', path(''), { value: 'v' }), 'key', 'required');
    assert.equal((await run.call('GET', path(key(200)))).body.found, true);

    assert.equal((await run.call('PUT', path('big'), { value: 'v'.repeat(MiB) })).status, 200, 'exactly 1 MiB');
    assertInvalid(await run.call('PUT', path('bigger'), { value: 'v'.repeat(MiB + 1) }), 'value', 'too_large');
    assertInvalid(await run.call('PUT', path('wide'), { value: 'é'.repeat(MiB / 2) + 'x' }), 'value', 'too_large');
    assert.equal((await run.call('GET', path('bigger'))).body.found, false);
    assert.equal((await run.call('GET', path('big'))).body.value.length, MiB);
  });

  it('keeps at most 1,000 keys: a new key is refused, existing keys stay writable', async () => {
    const run = await openRun();
    for (let i = 0; i < stateLimits.keys - 1; i++)
      await fixture.jobState.set(run.session.ctx, workspaceId, run.jobId, `k${i}`, 'v');
    assert.equal((await run.call('PUT', path('last'), { value: 'v' })).status, 200, 'the 1,000th key');
    const refused = await run.call('PUT', path('one-more'), { value: 'v' });
    assertInvalid(refused, 'key', 'too_many_keys');
    assert.match(refused.body.message, /existing keys stay writable/);
    assert.equal((await run.call('PUT', path('k0'), { value: 'changed' })).status, 200);
    assert.equal((await run.call('PUT', path('last'), { value: 'changed' })).status, 200);
    assert.equal((await run.call('GET', path('k0'))).body.value, 'changed');
    assert.equal(Object.keys((await run.call('GET', '/v1/state')).body).length, 1000);
    assert.equal(await fixture.jobState.delete(run.session.ctx, workspaceId, run.jobId, 'k1'), true);
    assert.equal((await run.call('PUT', path('one-more'), { value: 'v' })).status, 200, 'a freed slot takes a new key');
  });

  it('keeps keys and values of a job within 16 MiB: growing beyond fails, keeping or shrinking succeeds', async () => {
    const run = await openRun();
    const value = 'v'.repeat(MiB);
    for (let i = 0; i < 15; i++) await fixture.jobState.set(run.session.ctx, workspaceId, run.jobId, `b${i}`, value);
    const used = 15 * MiB + 10 * 2 + 5 * 3; // keys b0..b9 and b10..b14
    const room = stateLimits.totalBytes - used;
    assert.equal((await run.call('PUT', path('fill'), { value: 'x'.repeat(room - 4) })).status, 200, 'exactly 16 MiB');
    assertInvalid(await run.call('PUT', path('z'), { value: '' }), 'value', 'too_large');
    assertInvalid(await run.call('PUT', path('fill'), { value: 'x'.repeat(room - 3) }), 'value', 'too_large');
    assert.equal((await run.call('PUT', path('fill'), { value: 'y'.repeat(room - 4) })).status, 200, 'same size');
    assert.equal((await run.call('PUT', path('fill'), { value: 'short' })).status, 200, 'shrinking');
    assert.equal((await run.call('PUT', path('z'), { value: '' })).status, 200, 'room again');
  });
});

describe('broker: outputs, steps, summary, fail', () => {
  it('turns output text into JSON when it parses and keeps anything else a string', async () => {
    const run = await openRun();
    const set = (body: Record<string, unknown>) => run.call('POST', '/v1/output', body);
    for (const body of [
      { key: 'num', text: '42' },
      { key: 'float', text: '-1.5e3' },
      { key: 'yes', text: 'true' },
      { key: 'obj', text: '{"a":[1,2]}' },
      { key: 'arr', text: '[1,"x"]' },
      { key: 'str', text: 'hello world' },
      { key: 'almost', text: '{"a":' },
      { key: 'spaced', text: ' 7 ' },
      { key: 'raw', value: { nested: true } },
      { key: 'rawnum', value: 3 },
      { key: 'missing' },
      { key: 'emptytext', text: '' },
    ])
      assert.deepEqual((await set(body)).body, { ok: true }, JSON.stringify(body));
    assert.deepEqual(run.session.outputs, {
      num: 42,
      float: -1500,
      yes: true,
      obj: { a: [1, 2] },
      arr: [1, 'x'],
      str: 'hello world',
      almost: '{"a":',
      spaced: 7,
      raw: { nested: true },
      rawnum: 3,
      missing: '',
      emptytext: '',
    });
    await set({ key: 'num', text: 'replaced' });
    assert.equal(run.session.outputs.num, 'replaced', 'setting a key again replaces it');
    assertInvalid(await set({ text: '1' }), 'key', 'required');
    assertInvalid(await set({ key: '', text: '1' }), 'key', 'required');
    assertInvalid(await set({ key: 5, text: '1' }), 'key');
    assert.equal(Object.keys(run.session.outputs).length, 12);
  });

  it('takes at most 100 outputs; replacing one at the limit still works', async () => {
    const run = await openRun();
    for (let i = 0; i < brokerLimits.outputs; i++)
      assert.equal((await run.call('POST', '/v1/output', { key: `o${i}`, text: String(i) })).status, 200);
    const refused = await run.call('POST', '/v1/output', { key: 'o100', text: '1' });
    assert.equal(refused.status, 400);
    assert.equal(refused.body.code, 'validation_failed');
    assert.equal(refused.body.fields[0].field, 'key');
    assert.equal((await run.call('POST', '/v1/output', { key: 'o7', text: 'again' })).status, 200);
    assert.equal(Object.keys(run.session.outputs).length, 100);
    assert.equal(run.session.outputs.o7, 'again');
    assert.equal('o100' in run.session.outputs, false);
  });

  it('takes at most 1 MiB of outputs, key and value counted, and replacing frees the old size', async () => {
    const run = await openRun();
    // A key counts its bytes, a value the bytes of its JSON text (a string with its quotes).
    const size = (k: string, v: unknown) => Buffer.byteLength(k) + Buffer.byteLength(JSON.stringify(v));
    const exact = 'x'.repeat(brokerLimits.outputBytes - size('big', ''));
    assert.equal(size('big', exact), MiB);
    assert.equal((await run.call('POST', '/v1/output', { key: 'big', text: exact })).status, 200, 'exactly 1 MiB');
    assertInvalid(await run.call('POST', '/v1/output', { key: 'k', text: '1' }), 'value', 'too_large');
    assertInvalid(await run.call('POST', '/v1/output', { key: 'big', text: `${exact}x` }), 'value', 'too_large');
    assert.equal(run.session.outputs.big, exact, 'a refused replacement keeps the old value');
    assert.equal(
      (await run.call('POST', '/v1/output', { key: 'big', text: exact.slice(2) })).status,
      200,
      'replacing frees the old size',
    );
    assert.equal(
      (await run.call('POST', '/v1/output', { key: 'k', text: '1' })).status,
      200,
      'k and 1 fit the two bytes freed',
    );
    assertInvalid(await run.call('POST', '/v1/output', { key: 'l', text: '1' }), 'value', 'too_large');
    assertInvalid(await run.call('POST', '/v1/output', { key: 'k', value: 12 }), 'value', 'too_large');
    assert.equal(
      (await run.call('POST', '/v1/output', { key: 'k', value: 2 })).status,
      200,
      'a replacement of the same size fits',
    );
    assert.equal((await run.call('POST', '/v1/output', { key: 'big', text: '' })).status, 200);
    const wide = 'é'.repeat((MiB - size('big', '') - size('k', 2) - size('wider', '')) / 2);
    assert.equal(size('big', '') + size('k', 2) + size('wider', wide), MiB);
    assert.equal(
      (await run.call('POST', '/v1/output', { key: 'wider', text: wide })).status,
      200,
      'bytes in UTF-8 up to exactly 1 MiB',
    );
    assertInvalid(await run.call('POST', '/v1/output', { key: 'k', text: '12' }), 'value', 'too_large');
    assert.deepEqual(Object.keys(run.session.outputs).sort(), ['big', 'k', 'wider']);
  });

  it('marks steps of up to 200 bytes, at most 1,000 per run, each on the timeline', async () => {
    const run = await openRun();
    assert.equal((await run.call('POST', '/v1/step', { name: 's'.repeat(200) })).status, 200);
    assert.equal(
      (await run.call('POST', '/v1/step', { name: 'é'.repeat(100) })).status,
      200,
      '200 bytes in 100 characters',
    );
    assertInvalid(await run.call('POST', '/v1/step', { name: 's'.repeat(201) }), 'name', 'too_large');
    assertInvalid(await run.call('POST', '/v1/step', { name: `${'é'.repeat(100)}s` }), 'name', 'too_large');
    assertInvalid(await run.call('POST', '/v1/step', { name: '  ' }), 'name', 'required');
    assertInvalid(await run.call('POST', '/v1/step', {}), 'name', 'required');
    for (let i = 2; i < brokerLimits.steps; i += 8) {
      await Promise.all(
        Array.from({ length: Math.min(8, brokerLimits.steps - i) }, (_, j) =>
          run.call('POST', '/v1/step', { name: `step ${i + j}` }),
        ),
      );
    }
    assert.equal(run.session.steps.count, 1000);
    const refused = await run.call('POST', '/v1/step', { name: 'one too many' });
    assert.equal(refused.status, 400);
    assert.equal(refused.body.code, 'validation_failed');
    assert.equal(refused.body.fields[0].field, 'name');
    assert.equal(run.session.steps.count, 1000);
    assert.notEqual(run.session.steps.last, 'one too many');
    const steps = (await run.entries()).filter((e) => e.type === 'script.step');
    assert.equal(steps.length, 1000);
    assert.deepEqual(steps[0]!.payload, { name: 's'.repeat(200) });
  });

  it('takes a summary of up to 16 KiB', async () => {
    const run = await openRun();
    assert.equal(
      (await run.call('POST', '/v1/summary', { summary: '# Done\n' + 's'.repeat(16 * 1024 - 7) })).status,
      200,
    );
    assert.equal(Buffer.byteLength(run.session.summary!), 16 * 1024);
    assertInvalid(
      await run.call('POST', '/v1/summary', { summary: 's'.repeat(16 * 1024 + 1) }),
      'summary',
      'too_large',
    );
    assertInvalid(
      await run.call('POST', '/v1/summary', { summary: 'é'.repeat(8 * 1024) + 's' }),
      'summary',
      'too_large',
    );
    assert.equal(Buffer.byteLength(run.session.summary!), 16 * 1024, 'a refused summary keeps the old one');
    assertInvalid(await run.call('POST', '/v1/summary', {}), 'summary', 'required');
    assert.equal((await run.call('POST', '/v1/summary', { summary: '' })).status, 200);
    assert.equal(run.session.summary, '');
  });

  it('stores the fail reason cut at 2,000 characters, with a default when none is given', async () => {
    const run = await openRun();
    assert.equal(run.session.failReason, null);
    assert.deepEqual((await run.call('POST', '/v1/fail', { reason: 'r'.repeat(2000) })).body, { ok: true });
    assert.equal(run.session.failReason, 'r'.repeat(2000));
    await run.call('POST', '/v1/fail', { reason: `${'é'.repeat(2000)}tail` });
    assert.equal(run.session.failReason, 'é'.repeat(2000), 'the first 2,000 characters');
    const emoji = `a${'\u{1F600}'.repeat(1000)}`;
    await run.call('POST', '/v1/fail', { reason: emoji });
    assert.equal(run.session.failReason, emoji, 'a character outside the BMP is never cut in half');
    await run.call('POST', '/v1/fail', {});
    assert.equal(run.session.failReason, 'the script reported a failure');
    await run.call('POST', '/v1/fail', { reason: '  \n' });
    assert.equal(run.session.failReason, 'the script reported a failure');
  });
});

describe('broker: svc llm', () => {
  it('calls the utility model by default and the agent model when asked, tool-less at low effort', async () => {
    const run = await openRun();
    script(run.utility, [{ text: 'from utility', usage: { input: 30, output: 12 } }]);
    script(run.agent, [{ text: 'from agent', usage: { input: 5, output: 7 } }]);
    const utility = await run.call('POST', '/v1/llm', { prompt: 'hi', system: 'be brief', model: 'something-else' });
    assert.equal(utility.status, 200, utility.text);
    const plain = ({ json, ...rest }: Record<string, unknown>) => (
      assert.equal(json ?? null, null, 'no JSON without a schema'),
      rest
    );
    assert.deepEqual(plain(utility.body), {
      output: 'from utility',
      text: 'from utility',
      usage: { input: 30, output: 12 },
      cost: 42,
      model: 'utility-model',
    });
    const agent = await run.call('POST', '/v1/llm', { prompt: 'hi', model: 'agent' });
    assert.deepEqual(plain(agent.body), {
      output: 'from agent',
      text: 'from agent',
      usage: { input: 5, output: 7 },
      cost: 12,
      model: 'agent-model',
    });
    const [u, a] = run.calls.map((c) => c.req);
    assert.deepEqual(
      [u!.model, u!.system, u!.messages, u!.tools, u!.effort, u!.maxTokens, u!.jsonSchema],
      ['utility-model', ['be brief'], [{ role: 'user', text: 'hi' }], [], 'low', 4096, undefined],
    );
    assert.deepEqual([a!.model, a!.system], ['agent-model', []]);
    assert.ok(u!.signal instanceof AbortSignal, 'with a timeout');
    assert.equal(run.session.llmSpend, 54);
    assert.deepEqual(run.session.llmUsage, { input: 35, output: 19 });

    const calls = (await run.entries()).filter((e) => e.type === 'broker.call');
    assert.deepEqual(
      calls.map((e) => e.payload),
      [
        { endpoint: 'POST /v1/llm', ok: true, model: 'utility-model', usage: { input: 30, output: 12 }, cost: 42 },
        { endpoint: 'POST /v1/llm', ok: true, model: 'agent-model', usage: { input: 5, output: 7 }, cost: 12 },
      ],
    );
    assert.ok(calls.every((e) => typeof e.ms === 'number'));
  });

  it('needs a prompt, and takes maxTokens 1..16,000 (anything else is 4096)', async () => {
    const run = await openRun();
    assertInvalid(await run.call('POST', '/v1/llm', {}), 'prompt', 'required');
    assertInvalid(await run.call('POST', '/v1/llm', { prompt: ' \n ' }), 'prompt', 'required');
    assert.equal(run.calls.length, 0);
    for (const maxTokens of [1, 16000, 16001, 0, -5, 2.5, '100'])
      assert.equal((await run.call('POST', '/v1/llm', { prompt: 'p', maxTokens })).status, 200);
    assert.deepEqual(
      run.calls.map((c) => c.req.maxTokens),
      [1, 16000, 4096, 4096, 4096, 4096, 4096],
    );
  });

  it('refuses a schema that is not JSON or not an object at its top level', async () => {
    const run = await openRun();
    assertInvalid(await run.call('POST', '/v1/llm', { prompt: 'p', schemaText: '{"type":' }), 'schema', 'invalid_json');
    assertInvalid(await run.call('POST', '/v1/llm', { prompt: 'p', schemaText: '' }), 'schema', 'invalid_json');
    for (const schemaText of ['[]', '"object"', '3', 'true', 'null'])
      assertInvalid(await run.call('POST', '/v1/llm', { prompt: 'p', schemaText }), 'schema', 'not_object');
    assertInvalid(await run.call('POST', '/v1/llm', { prompt: 'p', schema: [] }), 'schema', 'not_object');
    assertInvalid(
      await run.call('POST', '/v1/llm', { prompt: 'p', schemaText: '{"type":"no-such-type"}' }),
      'schema',
      'invalid_schema',
    );
    assert.equal(run.calls.length, 0, 'no model call');
  });

  it('answers indented JSON matching the schema, with one second try when the first answer does not match', async () => {
    const run = await openRun();
    const schema = {
      type: 'object',
      required: ['name'],
      properties: { name: { type: 'string' } },
      additionalProperties: false,
    };
    const schemaText = JSON.stringify(schema);
    script(run.utility, [{ text: '{"name":"first"}', usage: { input: 10, output: 5 } }]);
    const first = await run.call('POST', '/v1/llm', { prompt: 'p', schemaText });
    assert.equal(first.status, 200, first.text);
    assert.deepEqual(first.body.json, { name: 'first' });
    assert.equal(first.body.output, '{\n  "name": "first"\n}');
    assert.equal(run.calls.length, 1, 'a matching answer needs one call');
    assert.deepEqual(run.calls[0]!.req.jsonSchema, { name: 'answer', schema });

    script(run.utility, [
      { text: '{"name":1}', usage: { input: 10, output: 5 } },
      { text: '{"name":"second"}', usage: { input: 20, output: 5 } },
    ]);
    const retried = await run.call('POST', '/v1/llm', { prompt: 'p', schema });
    assert.equal(retried.status, 200, retried.text);
    assert.deepEqual(retried.body.json, { name: 'second' });
    assert.equal(retried.body.cost, 40, 'both tries are paid');
    assert.deepEqual(retried.body.usage, { input: 30, output: 10 });
    assert.equal(run.calls.length, 3);
    assert.ok(
      run.calls[2]!.req.messages.length === 1 && run.calls[2]!.req.jsonSchema,
      'the second try is one more tool-less call with the schema',
    );

    script(run.utility, [
      { text: 'not json', usage: { input: 1, output: 1 } },
      { text: '{"name":"x","extra":1}', usage: { input: 1, output: 1 } },
      { text: 'left for later' },
    ]);
    const failed = await run.call('POST', '/v1/llm', { prompt: 'p', schemaText });
    assert.equal(failed.status, 502);
    assert.equal(failed.body.code, 'provider_error');
    assert.match(failed.body.message, /JSON matching the schema/);
    assert.equal(run.calls.length, 5, 'exactly one second try');
    assert.equal(fakeScripts.pending(run.utility), 1);
    assert.equal(run.session.llmSpend, 15 + 40 + 4, 'failed tries are paid too');
    const last = (await run.entries()).filter((e) => e.type === 'broker.call').at(-1)!;
    assert.deepEqual(
      { ...last.payload, error: undefined },
      {
        endpoint: 'POST /v1/llm',
        ok: false,
        error: undefined,
        model: 'utility-model',
        usage: { input: 2, output: 2 },
        cost: 4,
      },
    );
  });

  it('answers a provider error as 502 and charges nothing for a call the provider refused', async () => {
    const run = await openRun();
    script(run.utility, [{ error: 'overloaded', errorStatus: 529 }]);
    const res = await run.call('POST', '/v1/llm', { prompt: 'p' });
    assert.equal(res.status, 502);
    assert.equal(res.body.code, 'provider_error');
    assert.match(res.body.message, /fake API error \(status 529\): overloaded/);
    assert.equal(run.session.llmSpend, 0);
    const [entry] = (await run.entries()).filter((e) => e.type === 'broker.call');
    assert.equal(entry!.payload.ok, false);
    assert.match(entry!.payload.error, /overloaded/);
    assert.equal(entry!.payload.cost, 0);
  });

  it('handles at most 8 calls of a run at once; the 9th starts only after one finishes', async () => {
    const run = await openRun();
    script(
      run.utility,
      Array.from({ length: 9 }, () => ({ text: 'slow', delayMs: 250, usage: { input: 1, output: 1 } })),
    );
    const answers = await Promise.all(Array.from({ length: 9 }, () => run.call('POST', '/v1/llm', { prompt: 'p' })));
    assert.ok(answers.every((a) => a.status === 200));
    assert.equal(run.live.max, 8);
    const starts = run.calls.map((c) => c.start).sort((a, b) => a - b);
    const firstEnd = Math.min(...run.calls.map((c) => c.end!));
    assert.ok(starts[7]! < firstEnd, 'eight run together');
    assert.ok(starts[8]! >= firstEnd, 'the ninth waited for a free slot');

    // Other requests of the run wait for a slot too; another run is not held up. The calls hold their slots for 2 s,
    // long enough for the other run's answer to come while they still do on a loaded machine.
    script(
      run.utility,
      Array.from({ length: 8 }, () => ({ text: 'slow', delayMs: 2000 })),
    );
    const before = run.calls.length;
    const busy = Promise.all(Array.from({ length: 8 }, () => run.call('POST', '/v1/llm', { prompt: 'p' })));
    await waitFor('the 8 slots to be taken by model calls', () => run.live.now === 8);
    const busyCalls = run.calls.slice(before);
    const other = await openRun();
    assert.equal((await other.call('GET', '/v1/state')).status, 200);
    assert.ok(
      busyCalls.every((c) => c.end === null),
      'another run answers while all 8 slots of the busy run are still taken',
    );
    assert.equal((await run.call('GET', '/v1/state')).status, 200);
    const answered = performance.now();
    const firstBusyEnd = Math.min(...busyCalls.map((c) => c.end ?? Infinity));
    assert.ok(firstBusyEnd <= answered, 'the ninth request of the busy run waited for a slot to free');
    await busy;
  });

  it('drops a waiting request whose client gave up', async () => {
    const run = await openRun();
    script(
      run.utility,
      Array.from({ length: 8 }, () => ({ text: 'slow', delayMs: 300 })),
    );
    const busy = Promise.all(Array.from({ length: 8 }, () => run.call('POST', '/v1/llm', { prompt: 'p' })));
    await waitFor('the 8 slots to be taken by model calls', () => run.live.now === 8);
    const body = Buffer.from(JSON.stringify({ key: 'abandoned', text: '1' }));
    const gaveUp = httpRequest({
      socketPath: fixture.socketFor(run.token),
      method: 'POST',
      path: '/v1/output',
      agent: false,
      headers: {
        authorization: `Bearer ${run.token}`,
        'content-type': 'application/json',
        'content-length': String(body.length),
      },
    });
    gaveUp.on('error', () => undefined);
    gaveUp.end(body);
    // Nothing shows a request queued for a slot, so it is given 50 ms to arrive; arriving later only makes the case
    // easier (refused before it queues), never a false failure.
    await new Promise((r) => setTimeout(r, 50));
    gaveUp.destroy();
    await busy;
    assert.equal(
      (await run.call('POST', '/v1/output', { key: 'kept', text: '2' })).status,
      200,
      'the slots are all free again',
    );
    assert.deepEqual(run.session.outputs, { kept: 2 }, 'the abandoned request was never handled');
  });

  it('reserves the worst case so 20 concurrent calls cannot overspend a small limit by more than one call', async () => {
    const limit = 500;
    const run = await openRun({ costLimit: limit });
    // est = 100 / 2 = 50 input tokens, maxTokens 100: worst = 150 micro-USD; each answer costs 50 + 50 = 100.
    const worst = 150;
    script(
      run.utility,
      Array.from({ length: 40 }, () => ({ text: 'ok', delayMs: 40, usage: { input: 50, output: 50 } })),
    );
    const body = { prompt: 'p'.repeat(100), maxTokens: 100 };
    const answers = await Promise.all(Array.from({ length: 20 }, () => run.call('POST', '/v1/llm', body)));
    const ok = answers.filter((a) => a.status === 200);
    const refused = answers.filter((a) => a.status !== 200);
    assert.ok(ok.length >= 1 && refused.length >= 1, `${ok.length} answered, ${refused.length} refused`);
    for (const r of refused) {
      assert.equal(r.status, 403);
      assert.equal(r.body.code, 'forbidden');
      assert.equal(r.body.message, costLimitMessage);
    }
    assert.equal(
      run.session.llmSpend,
      ok.reduce((sum, a) => sum + (a.body.cost as number), 0),
    );
    assert.ok(run.session.llmSpend <= limit + worst, `spent ${run.session.llmSpend}`);
    // Alone, a call that does not fit is still allowed; once the spend reaches the limit every call is refused.
    while (run.session.llmSpend < limit) assert.equal((await run.call('POST', '/v1/llm', body)).status, 200);
    assert.ok(run.session.llmSpend <= limit + worst);
    const late = await run.call('POST', '/v1/llm', { prompt: 'x' });
    assert.equal(late.status, 403);
    assert.equal(late.body.message, costLimitMessage);
    const refusals = (await run.entries()).filter((e) => e.type === 'broker.call' && e.payload.ok === false);
    assert.equal(refusals.length, refused.length + 1, 'refusals are on the timeline');
    assert.equal(run.session.close().llmSpend, run.session.llmSpend);
  });

  it("counts the agent loop's spend against the limit", async () => {
    let agentSpend = 99;
    const run = await openRun({ costLimit: 100, agentSpend: () => agentSpend });
    script(run.utility, [{ text: 'ok', usage: { input: 1, output: 1 } }]);
    assert.equal(
      (await run.call('POST', '/v1/llm', { prompt: 'p' })).status,
      200,
      'a lone call is allowed below the limit',
    );
    agentSpend = 98;
    assert.equal((await run.call('POST', '/v1/llm', { prompt: 'p' })).status, 403, '98 + 2 reached the limit');
  });

  it('charges a call still running when the run ends its whole estimate, once', async () => {
    const run = await openRun();
    const schema = { type: 'object' };
    // est = ceil((100 + 17) / 2) = 59; with a schema worst = cost(2·59 + 100, 2·100) = 418.
    script(run.utility, [{ text: '{}', delayMs: 300, usage: { input: 1, output: 1 } }]);
    const pending = run.call('POST', '/v1/llm', {
      prompt: 'p'.repeat(100),
      schemaText: JSON.stringify(schema),
      maxTokens: 100,
    });
    await waitFor('the model call to start', () => run.live.now === 1);
    assert.deepEqual(run.session.close(), { llmSpend: 418 });
    const answer = await pending;
    assert.equal(answer.status, 200, 'the call itself finishes');
    assert.equal(answer.body.cost, 2);
    assert.equal(run.session.llmSpend, 418, 'not charged again when it settles');
    assert.deepEqual(run.session.close(), { llmSpend: 418 });
    await assert.rejects(
      run.session.llm({ which: 'utility', system: null, prompt: 'p', schema: null, maxTokens: 1 }),
      (err: Error) => err.message === costLimitMessage,
    );
  });
});

describe('broker: timeline', () => {
  it('records the first 1,000 calls, then one log entry, then only paid llm calls and the first state write', async () => {
    const run = await openRun();
    for (let i = 0; i < brokerLimits.recordedCalls; i += 8)
      await Promise.all(Array.from({ length: 8 }, () => run.call('GET', '/v1/state/k')));
    let entries = await run.entries();
    assert.equal(entries.filter((e) => e.type === 'broker.call').length, 1000);
    assert.equal(entries.filter((e) => e.type === 'log').length, 0, 'no note before call 1,001');
    assert.deepEqual(entries[0]!.payload, { endpoint: 'GET /v1/state/k', ok: true });
    assert.equal(run.session.calls, 1000);

    script(run.utility, [
      { text: 'free', usage: { input: 0, output: 0 } },
      { text: 'paid', usage: { input: 3, output: 4 } },
    ]);
    await run.call('GET', '/v1/state'); // 1,001: left out, and the note is written
    await run.call('PUT', '/v1/state/first', { value: '1' }); // the first state write: kept
    await run.call('PUT', '/v1/state/second', { value: '2' });
    await run.call('POST', '/v1/llm', { prompt: 'p' }); // costs nothing: left out
    await run.call('POST', '/v1/llm', { prompt: 'p' }); // paid: kept
    await run.call('POST', '/v1/step', { name: 'still marked' });
    await run.call('GET', '/v1/nope');
    await run.call('POST', '/v1/output', { key: 'k', text: '1' });

    entries = await run.entries();
    const calls = entries.filter((e) => e.type === 'broker.call');
    assert.equal(calls.length, 1002);
    assert.deepEqual(
      calls.slice(1000).map((e) => e.payload),
      [
        { endpoint: 'PUT /v1/state/first', ok: true },
        { endpoint: 'POST /v1/llm', ok: true, model: 'utility-model', usage: { input: 3, output: 4 }, cost: 7 },
      ],
    );
    const logs = entries.filter((e) => e.type === 'log');
    assert.equal(logs.length, 1, 'one note only');
    assert.match(logs[0]!.payload.message, /1000 broker calls/);
    assert.equal(entries.indexOf(logs[0]!), 1000, 'right after the 1,000th call');
    assert.deepEqual(
      entries.filter((e) => e.type === 'script.step').map((e) => e.payload),
      [{ name: 'still marked' }],
      'step markers are always added',
    );
    assert.equal(
      (await fixture.jobState.get(workspaceId, run.jobId, 'second'))?.value,
      '2',
      'calls past the limit work as before',
    );
    assert.equal(run.session.outputs.k, 1);
    assert.equal(run.session.calls, 1008);
  });

  it('keeps the first state write when it comes after the cap even if earlier writes failed', async () => {
    const run = await openRun();
    for (let i = 0; i < brokerLimits.recordedCalls; i += 8)
      await Promise.all(Array.from({ length: 8 }, () => run.call('GET', '/v1/state')));
    await run.call('PUT', path('k'.repeat(201)), { value: 'refused' });
    await run.call('PUT', '/v1/state/ok', { value: '1' });
    const calls = (await run.entries()).filter((e) => e.type === 'broker.call');
    assert.equal(calls.length, 1001);
    assert.deepEqual(calls.at(-1)!.payload, { endpoint: 'PUT /v1/state/ok', ok: true });
  });
});
