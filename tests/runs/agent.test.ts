import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { finishedRun, serverWithFakeModel } from '../api/harness.js';

/** The agent loop's rules, driven through the fake provider's documented script route. */
const server = serverWithFakeModel();

async function execute(instruction: string, script: unknown[], fields: Record<string, unknown> = {}) {
  const pushed = await server.api.post(`/api/providers/${server.providerId}/script`, {
    responses: script,
    reset: true,
  });
  assert.equal(pushed.status, 200, pushed.text);
  assert.equal(pushed.body.pending, script.length);
  const job = (
    await server.api.post('/api/jobs', { name: `agent ${Math.random()}`, instruction, selfImprove: false, ...fields })
  ).body.id as string;
  const runId = (await server.api.post(`/api/jobs/${job}/runs`, {})).body.runId as string;
  return finishedRun(server.api, runId);
}

const finish = (status = 'success', summary = 'done') => ({
  toolCalls: [{ name: 'finish', args: { status, summary } }],
});

describe('agent loop', () => {
  it('ends on a refusal without a nudge', async () => {
    const { run } = await execute('x', [{ text: 'I will not.', stop: 'refusal' }]);
    assert.equal(run.status, 'failed');
    assert.equal(run.error, 'the model refused to continue');
    assert.equal(run.turns, 1);
  });

  it('nudges once when the model stops without a tool, then fails', async () => {
    const { run } = await execute('x', [{ text: 'Thinking.' }, { text: 'Still thinking.' }]);
    assert.equal(run.error, 'the model stopped without calling finish');
    assert.equal(run.turns, 2);
    const nudged = await run2nudge();
    assert.equal(nudged.run.status, 'succeeded', 'a nudge followed by finish succeeds');
  });

  it('fails past maxTurns with the limit in words', async () => {
    const bash = { toolCalls: [{ name: 'bash', args: { command: 'true' } }] };
    const { run } = await execute('x', [bash, bash], { limits: { maxTurns: 1 } });
    assert.equal(run.error, 'the run exceeded its limit of 1 turn');
    assert.equal(run.turns, 1);
  });

  it('repeats a transient model error as the same turn, and fails at once on a 401', async () => {
    const { run, events } = await execute('x', [{ error: 'overloaded', errorStatus: 529 }, finish()]);
    assert.equal(run.status, 'succeeded');
    assert.equal(run.turns, 1);
    const calls = events.filter((e) => e.type === 'llm.call');
    assert.equal(calls.length, 2);
    assert.deepEqual(
      calls.map((c) => c.payload.turn),
      [1, 1],
    );
    assert.match(calls[0]!.payload.error, /529/);
    const denied = await execute('x', [{ error: 'bad key', errorStatus: 401 }]);
    assert.equal(denied.run.status, 'failed');
    assert.match(denied.run.error, /^model call failed: fake API error \(status 401\)/);
  });

  it('answers unknown tools and bad arguments as tool errors and goes on', async () => {
    const { run, events } = await execute('x', [
      {
        toolCalls: [
          { name: 'teleport', args: {} },
          { name: 'read_file', args: {} },
        ],
      },
      finish(),
    ]);
    assert.equal(run.status, 'succeeded');
    const results = events.filter((e) => e.type === 'tool.result').map((e) => e.payload);
    assert.match(results[0]!.content, /Unknown tool "teleport"/);
    assert.equal(results[0]!.isError, true);
    assert.match(results[1]!.content, /read_file needs `path`/);
  });

  it('works with files through write_file, edit_file and read_file, and keeps state', async () => {
    const { run, events } = await execute('x', [
      { toolCalls: [{ name: 'write_file', args: { path: 'notes/a.txt', content: 'one\ntwo\n' } }] },
      { toolCalls: [{ name: 'edit_file', args: { path: 'notes/a.txt', old: 'two', new: 'three' } }] },
      {
        toolCalls: [
          { name: 'read_file', args: { path: '/workspace/notes/a.txt' } },
          { name: 'state_set', args: { key: 'k', value: 'v' } },
          { name: 'state_get', args: { key: 'k' } },
          { name: 'remember', args: { note: 'n' } },
        ],
      },
      finish(),
    ]);
    assert.equal(run.status, 'succeeded', JSON.stringify(run));
    const results = events.filter((e) => e.type === 'tool.result').map((e) => e.payload.content as string);
    assert.deepEqual(results.slice(0, 2), [
      'Wrote 8 bytes to /workspace/notes/a.txt.',
      'Replaced 1 occurrence(s) in /workspace/notes/a.txt.',
    ]);
    assert.equal(results[2], '     1\tone\n     2\tthree');
    // Consecutive read-only calls run together, so their timeline entries may come in any order.
    const byName = Object.fromEntries(
      events.filter((e) => e.type === 'tool.result').map((e) => [e.payload.name, e.payload.content]),
    );
    assert.deepEqual([byName.state_set, byName.state_get, byName.remember], ['Saved.', 'v', 'Noted.']);
  });

  it('turns a finish with success into failed when the run called svc fail', async () => {
    const { run } = await execute('x', [
      { toolCalls: [{ name: 'bash', args: { command: 'svc fail the upstream answered 500 || true' } }] },
      finish('success', 'all good'),
    ]);
    assert.equal(run.status, 'failed');
    assert.equal(run.error, 'the upstream answered 500');
    assert.equal(run.summary, 'all good');
  });

  it('compacts the conversation near the context window and goes on from the handover', async () => {
    const small = await server.api.post('/api/models', {
      providerId: server.providerId,
      model: 'fake-small',
      price: { in: 0, out: 0, cacheRead: 0, cacheWrite: 0 },
      caps: {
        tools: true,
        parallelTools: true,
        reasoning: false,
        jsonSchema: true,
        promptCache: false,
        vision: false,
        context: 1000,
      },
    });
    const { run, events } = await execute(
      'x',
      [
        { toolCalls: [{ name: 'bash', args: { command: 'echo 42' } }], usage: { input: 900, output: 10 } },
        { text: 'Goal: report 42. Progress: ran echo 42. Next steps: finish.', usage: { input: 300, output: 20 } },
        finish(),
      ],
      { modelId: small.body.id },
    );
    assert.equal(run.status, 'succeeded', JSON.stringify(run));
    const compaction = events.find((e) => e.type === 'agent.compaction');
    assert.ok(compaction, 'a compaction is on the timeline');
    assert.equal(compaction.payload.turn, 1);
    assert.match(compaction.payload.summary, /report 42/);
    assert.ok(run.tokIn > 900 + 300, 'the compaction call counts toward the run');
  });

  it('stops at the cost limit before the next turn', async () => {
    const priced = await server.api.post('/api/models', {
      providerId: server.providerId,
      model: 'fake-priced',
      price: { in: 1_000_000_000, out: 1_000_000_000, cacheRead: 0, cacheWrite: 0 },
      caps: {
        tools: true,
        parallelTools: true,
        reasoning: false,
        jsonSchema: true,
        promptCache: false,
        vision: false,
        context: 100000,
      },
    });
    assert.equal(priced.status, 201, priced.text);
    const bash = { toolCalls: [{ name: 'bash', args: { command: 'true' } }], usage: { input: 10, output: 10 } };
    const { run } = await execute('x', [bash, bash, bash], { modelId: priced.body.id, limits: { maxCostUsd: 0.01 } });
    assert.equal(run.status, 'failed');
    assert.equal(run.error, 'the run exceeded its cost limit of $0.01');
    assert.equal(run.cost, 20_000, '20 tokens at $1,000 per million');
    assert.equal(run.tokIn, 10);
    assert.equal(run.tokOut, 10);
  });

  it('keeps a payload over 16 KiB shortened on the timeline and whole beside the run', async () => {
    const command =
      "printf 'start-'; head -c 30000 /dev/zero | tr '\\0' m; printf -- '-middle-'; head -c 30000 /dev/zero | tr '\\0' n; printf -- '-end'";
    const { run, events } = await execute('x', [{ toolCalls: [{ name: 'bash', args: { command } }] }, finish()]);
    assert.equal(run.status, 'succeeded', run.error);
    const index = events.findIndex((e) => e.type === 'tool.result');
    const inline = events[index]!;
    const inlineSize = JSON.stringify(inline.payload).length;
    assert.ok(inlineSize < 16 * 1024, `the inline payload is shortened (${inlineSize} bytes)`);
    assert.match(inline.payload.content, /^exit code: 0\nstart-m+\n\[… \d+ characters left out …\]\nn+-end\n/s);
    const whole = await server.api.get(`/api/runs/${run.id}/events/${index + 1}`);
    assert.equal(whole.status, 200, whole.text);
    assert.equal(whole.body.type, 'tool.result');
    // What the model was shown (the agent's own output cap applies before the timeline's).
    assert.ok(whole.body.payload.content.length > 20_000, 'the stored payload is whole');
    assert.match(whole.body.payload.content, /^exit code: 0\nstart-m{5000}/);
    assert.match(whole.body.payload.content, /n{20000}-end\n\[the output had 60018 bytes/);
    assert.equal((await server.api.get(`/api/runs/${run.id}/events/${events.length + 5}`)).status, 404);
    const small = await server.api.get(`/api/runs/${run.id}/events/1`);
    assert.deepEqual(small.body, events[0]);
  });

  it('refuses to start a run once the workspace reached its daily spend limit, before any model cost', async () => {
    const priced = await server.api.post('/api/models', {
      providerId: server.providerId,
      model: 'fake-daily',
      price: { in: 1_000_000_000, out: 1_000_000_000, cacheRead: 0, cacheWrite: 0 },
      caps: {
        tools: true,
        parallelTools: true,
        reasoning: false,
        jsonSchema: true,
        promptCache: false,
        vision: false,
        context: 100000,
      },
    });
    const spent = (await server.api.get('/api/runs?pageSize=100')).body.items.reduce(
      (sum: number, r: { cost: number }) => sum + r.cost,
      0,
    ) as number;
    // Just above what today's runs cost: one more priced run (40,000 micro-USD) crosses it.
    const limit = Math.ceil((spent + 10_000) / 10_000) / 100;
    assert.equal((await server.api.patch('/api/settings', { dailySpendLimitUsd: limit })).status, 200);
    try {
      const paid = await execute('x', [{ ...finish(), usage: { input: 20, output: 20 } }], { modelId: priced.body.id });
      assert.equal(paid.run.status, 'succeeded');
      assert.equal(paid.run.cost, 40_000);
      const refused = await execute('x', [finish()], { modelId: priced.body.id });
      assert.equal(refused.run.status, 'failed');
      assert.equal(refused.run.error, `The workspace reached its daily spend limit of $${limit.toFixed(2)}`);
      assert.equal(refused.run.turns, 0);
      assert.equal(
        refused.events.some((e) => e.type === 'sandbox.create'),
        false,
        'no sandbox was made',
      );
    } finally {
      await server.api.patch('/api/settings', { dailySpendLimitUsd: 0 });
    }
  });
});

async function run2nudge() {
  return execute('x', [{ text: 'Thinking.' }, finish()]);
}
