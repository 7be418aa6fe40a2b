import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { DomainError } from '../../domain/decider.js';
import { costLimitMessage } from '../../broker/limits.js';
import type { RunSession, RunSessionHooks } from '../../broker/run-session.js';
import { fakeScripts } from '../../adapters/models/fake.js';
import { createModelClient } from '../../adapters/models/client.js';
import { ModelError } from '../../adapters/models/types.js';
import { runSessionHooks } from '../../server/broker-hooks.js';
import { TimelineWriter } from '../../app/timeline.js';
import { staysFalse, waitFor } from '../wait.js';
import { brokerFixture } from './fixture.js';

/**
 * A run session through the hooks the runner gives it (broker/run-session.ts): the product's hook adapter over a real
 * timeline and the fake model provider, MCP through the optional hooks, the session's lifecycle, and request slots
 * of clients that give up.
 */
const ws = 'ws-hooks';
const price = { in: 1_000_000, out: 1_000_000, cacheRead: 0, cacheWrite: 0 }; // 1 micro-USD per token
const fixture = brokerFixture('hooks');
const { broker } = fixture;

interface Run {
  session: RunSession;
  token: string;
  jobId: string;
  provider: string;
  call(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }>;
  entries(): Promise<Array<{ type: string; payload: Record<string, any>; ms: number | null }>>;
}

async function openRun(extra: Partial<RunSessionHooks> = {}, costLimit = 0): Promise<Run> {
  const runId = `run-${randomUUID()}`;
  const jobId = `job-${randomUUID()}`;
  const token = randomUUID();
  const provider = `fake-${randomUUID()}`;
  const timeline = new TimelineWriter(fixture.stores.events, runId, ws);
  const model = {
    client: createModelClient({ id: provider, kind: 'fake', apiKey: null, baseUrl: null }),
    name: 'fake-model',
    price,
  };
  const session = broker.open({
    runId,
    jobId,
    workspaceId: ws,
    token,
    costLimit,
    jobState: fixture.jobState,
    egress: { network: 'none', allowedDomains: null, allowPrivateNetwork: false },
    hooks: { ...runSessionHooks({ timeline, agentModel: model, utilityModel: model, agentSpend: () => 0 }), ...extra },
  });
  await fixture.serve(session, token);
  return {
    session,
    token,
    jobId,
    provider,
    call: (method, path, body) => send(method, path, body, token),
    async entries() {
      await timeline.flush();
      return (await fixture.stores.events.readStream(`timeline-${runId}`)).map((e) => {
        const d = e.data as { payload: Record<string, any>; ms: number | null };
        return { type: e.type, payload: d.payload, ms: d.ms };
      });
    },
  };
}

function send(
  method: string,
  path: string,
  body: unknown,
  token: string,
  signal?: AbortSignal,
): Promise<{ status: number; body: any }> {
  const payload = body === undefined ? null : Buffer.from(JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        socketPath: fixture.socketFor(token),
        method,
        path,
        agent: false,
        signal,
        headers: { authorization: `Bearer ${token}`, ...(payload ? { 'content-type': 'application/json' } : {}) },
      },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : null }));
      },
    );
    req.on('error', reject);
    req.end(payload ?? undefined);
  });
}

const tools = [
  { server: 'files', name: 'read', description: 'Reads', inputSchema: { type: 'object' }, readOnly: true },
  { server: 'files', name: 'write', description: 'Writes', inputSchema: { type: 'object' }, readOnly: false },
];
const mcp: Partial<RunSessionHooks> = {
  mcpTools: async (server) => tools.filter((t) => server === null || t.server === server),
  async mcpCall(server, tool, args) {
    const t = tools.find((x) => x.server === server && x.name === tool);
    if (!t) throw DomainError.notFound(`MCP tool ${tool} on server ${server}`);
    if (tool === 'write' && (args as { refuse?: boolean }).refuse)
      throw new DomainError(
        'forbidden',
        "A shadow run of the main script can't call MCP tools that may have side effects",
      );
    return {
      output: `${tool}:${JSON.stringify(args)}${'.'.repeat((args as { pad?: number }).pad ?? 0)}`,
      isError: tool === 'read' && (args as { fail?: boolean }).fail === true,
      readOnly: t.readOnly,
    };
  },
};

describe('run session: lifecycle', () => {
  it('registers a run under its token until session.close(), which also answers the final spend', async () => {
    const run = await openRun();
    assert.equal(broker.sessionFor(run.token), run.session);
    await run.call('PUT', '/v1/state/a', { value: '1' });
    await run.call('POST', '/v1/step', { name: 'one' });
    await run.call('POST', '/v1/step', { name: 'two' });
    assert.deepEqual(run.session.steps, { count: 2, last: 'two' });
    assert.equal(run.session.calls, 3);
    assert.equal(run.session.wroteState, true);
    assert.deepEqual(run.session.close(), { llmSpend: 0 });
    assert.equal(broker.sessionFor(run.token), null);
    const after = await run.call('GET', '/v1/state').catch((err: NodeJS.ErrnoException) => err.code);
    assert.ok(
      after === 'ENOENT' || after === 'ECONNREFUSED' || (typeof after === 'object' && after.status === 401),
      `after close: ${JSON.stringify(after)}`,
    );
    assert.deepEqual(run.session.close(), { llmSpend: 0 }, 'closing twice is harmless');
    await assert.rejects(
      run.session.llm({ which: 'utility', system: null, prompt: 'p', schema: null, maxTokens: 10 }),
      (err: Error) => err.message === costLimitMessage,
    );
  });

  it('drops a request whose client gives up while waiting for one of the 8 slots', async () => {
    const run = await openRun();
    fakeScripts.push(
      run.provider,
      Array.from({ length: 8 }, () => ({ text: 'slow', delayMs: 300 })),
    );
    const busy = Array.from({ length: 8 }, () => run.call('POST', '/v1/llm', { prompt: 'p' }));
    // The fake provider takes a scripted answer as a call starts: none left means all 8 hold a slot.
    await waitFor('the 8 slots to be taken by model calls', () => fakeScripts.pending(run.provider) === 0);
    const gaveUp = new AbortController();
    const dropped = send('PUT', '/v1/state/dropped', { value: 'never' }, run.token, gaveUp.signal).catch(
      (err: Error) => err.name,
    );
    const waiting = run.call('PUT', '/v1/state/waited', { value: 'yes' });
    // Nothing shows a request queued for a slot, so it is given 50 ms to arrive; arriving later only makes the case
    // easier (refused before it queues), never a false failure.
    await new Promise((r) => setTimeout(r, 50));
    gaveUp.abort();
    assert.equal(await dropped, 'AbortError');
    assert.equal((await waiting).status, 200);
    assert.ok((await Promise.all(busy)).every((a) => a.status === 200));
    // "Never handled" is an absence: with every slot free again, a request still queued would be handled at once.
    await staysFalse(
      'the request that gave up to be handled',
      async () => (await fixture.jobState.get(ws, run.jobId, 'dropped')) !== null,
      100,
    );
    assert.equal((await fixture.jobState.get(ws, run.jobId, 'waited'))?.value, 'yes');
    assert.equal(run.session.calls, 9);
  });
});

describe('run session: svc llm through the hooks', () => {
  it('reserves with the hook worst case and counts maxTokens 4096 when out of range', async () => {
    const run = await openRun({}, 0);
    fakeScripts.push(run.provider, [{ text: 'late', delayMs: 300, usage: { input: 1, output: 1 } }]);
    // est = ceil((20 + 4) / 2) = 12 input tokens; maxTokens 0 counts as 4096: worst = 12 + 4096.
    const pending = run.call('POST', '/v1/llm', { prompt: 'p'.repeat(20), system: 'sys!', maxTokens: 0 });
    await waitFor('the model call to start', () => fakeScripts.pending(run.provider) === 0);
    assert.deepEqual(run.session.close(), { llmSpend: 12 + 4096 });
    assert.equal((await pending).status, 200);
    assert.equal(run.session.llmSpend, 12 + 4096);
  });

  it('charges the worst case for a call that failed after billing may have started, nothing for one refused before', async () => {
    // The fake provider never fails mid-answer, so this hook stands in for a dropped stream (ModelError started).
    let started = true;
    const run = await openRun({
      llm: async () => {
        throw new ModelError('stream dropped', null, true, false, started);
      },
      worstCost: (_which, input, output) => input + output,
    });
    const dropped = await run.call('POST', '/v1/llm', { prompt: 'p'.repeat(10), maxTokens: 100 });
    assert.equal(dropped.status, 502);
    assert.equal(dropped.body.code, 'provider_error');
    assert.equal(run.session.llmSpend, 105);
    started = false;
    assert.equal((await run.call('POST', '/v1/llm', { prompt: 'p'.repeat(10), maxTokens: 100 })).status, 502);
    assert.equal(run.session.llmSpend, 105, 'a call that never started costs nothing');
    const calls = (await run.entries()).filter((e) => e.type === 'broker.call');
    assert.deepEqual(
      calls.map((e) => [e.payload.ok, e.payload.cost]),
      [
        [false, 105],
        [false, 0],
      ],
    );
  });
});

describe('run session: MCP through the hooks', () => {
  it('answers 404 naming the missing MCP servers when the runner gives no MCP hooks', async () => {
    const run = await openRun();
    for (const res of [
      await run.call('GET', '/v1/mcp/tools'),
      await run.call('POST', '/v1/mcp/call', { server: 's', tool: 't' }),
    ]) {
      assert.equal(res.status, 404);
      assert.deepEqual([res.body.code, res.body.message], ['not_found', 'This job has no MCP servers']);
    }
  });

  it('lists tools, calls them with arguments as JSON text or a value, and records server, tool, isError and result', async () => {
    const run = await openRun(mcp);
    assert.deepEqual((await run.call('GET', '/v1/mcp/tools')).body, tools);
    assert.deepEqual((await run.call('GET', '/v1/mcp/tools?server=nope')).body, []);
    assert.deepEqual(
      (await run.call('POST', '/v1/mcp/call', { server: 'files', tool: 'read', argumentsText: '{"path":"/a"}' })).body,
      { output: 'read:{"path":"/a"}', isError: false },
    );
    assert.deepEqual(
      (await run.call('POST', '/v1/mcp/call', { server: 'files', tool: 'read', arguments: { fail: true } })).body,
      { output: 'read:{"fail":true}', isError: true },
    );
    assert.deepEqual(
      (await run.call('POST', '/v1/mcp/call', { server: 'files', tool: 'write' })).body,
      { output: 'write:{}', isError: false },
      'no arguments: {}',
    );
    const bad = await run.call('POST', '/v1/mcp/call', { server: 'files', tool: 'read', argumentsText: '{"path":' });
    assert.equal(bad.status, 400);
    assert.deepEqual(
      bad.body.fields.map((f: { field: string; code: string }) => [f.field, f.code]),
      [['arguments', 'invalid_json']],
    );
    const unknown = await run.call('POST', '/v1/mcp/call', { server: 'files', tool: 'delete' });
    assert.equal(unknown.status, 404);
    assert.equal(unknown.body.message, 'MCP tool delete on server files not found');
    const refused = await run.call('POST', '/v1/mcp/call', {
      server: 'files',
      tool: 'write',
      arguments: { refuse: true },
    });
    assert.equal(refused.status, 403);
    assert.equal(
      (await run.call('POST', '/v1/mcp/call', { server: 'files', tool: 'read', arguments: { pad: 5000 } })).status,
      200,
    );

    const calls = (await run.entries()).filter((e) => e.type === 'broker.call').map((e) => e.payload);
    assert.deepEqual(calls.slice(0, 5), [
      { endpoint: 'GET /v1/mcp/tools', ok: true },
      { endpoint: 'GET /v1/mcp/tools', ok: true, server: 'nope' },
      {
        endpoint: 'POST /v1/mcp/call',
        ok: true,
        server: 'files',
        tool: 'read',
        isError: false,
        result: 'read:{"path":"/a"}',
      },
      {
        endpoint: 'POST /v1/mcp/call',
        ok: true,
        server: 'files',
        tool: 'read',
        isError: true,
        result: 'read:{"fail":true}',
      },
      { endpoint: 'POST /v1/mcp/call', ok: true, server: 'files', tool: 'write', isError: false, result: 'write:{}' },
    ]);
    assert.equal(calls[7]!.ok, false);
    assert.deepEqual(
      [calls[7]!.server, calls[7]!.tool],
      ['files', 'write'],
      'a refused call is recorded with its tool',
    );
    assert.equal((calls[8]!.result as string).length, 4000, 'results are cut to 4,000 characters');
  });

  it('keeps up to 200 non-read-only MCP calls on the timeline past the first 1,000 calls; read-only ones are left out', async () => {
    const run = await openRun(mcp);
    for (let i = 0; i < 1000; i += 8)
      await Promise.all(Array.from({ length: Math.min(8, 1000 - i) }, () => run.call('GET', '/v1/state/k')));
    await run.call('POST', '/v1/mcp/call', { server: 'files', tool: 'read' });
    for (let i = 0; i < 201; i += 8)
      await Promise.all(
        Array.from({ length: Math.min(8, 201 - i) }, () =>
          run.call('POST', '/v1/mcp/call', { server: 'files', tool: 'write' }),
        ),
      );
    await run.call('POST', '/v1/step', { name: 'marker' });
    const entries = await run.entries();
    const calls = entries.filter((e) => e.type === 'broker.call');
    assert.equal(calls.length, 1200);
    assert.ok(calls.slice(1000).every((e) => e.payload.tool === 'write'));
    assert.equal(entries.filter((e) => e.type === 'log').length, 1);
    assert.deepEqual(
      entries.filter((e) => e.type === 'script.step').map((e) => e.payload),
      [{ name: 'marker' }],
    );
    assert.equal(run.session.calls, 1203);
  });
});
