import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { waitFor } from '../wait.js';
import { finishedRun, serverWithFakeModel, type TimelineEntry } from '../api/harness.js';

/**
 * Scripted runs, verification, fallback and demotion through the public API (docs/design.md, "Learning: scripted
 * runs, reflection, shadow runs").
 */
const server = serverWithFakeModel();

async function runOnce(jobId: string) {
  const created = await server.api.post(`/api/jobs/${jobId}/runs`, {});
  assert.equal(created.status, 201, created.text);
  return finishedRun(server.api, created.body.runId);
}

async function job(main: string, verify: unknown = null, instruction = 'Report it with `svc output set answer 42`.') {
  const id = (
    await server.api.post('/api/jobs', {
      name: `scripted ${Math.random()}`,
      instruction,
      selfImprove: false,
      spec: { outputs: [{ name: 'answer', type: 'number' }] },
    })
  ).body.id as string;
  const saved = await server.api.request('PUT', `/api/jobs/${id}/playbook`, { content: { main, verify } });
  assert.equal(saved.status, 200, saved.text);
  return id;
}

const statuses = (events: TimelineEntry[]) =>
  events.filter((e) => e.type === 'run.status').map((e) => e.payload.status);

describe('scripted runs', () => {
  it('runs the main script without the model, verifies it, and summarises its output', async () => {
    await server.api.post(`/api/providers/${server.providerId}/script`, { responses: [], reset: true });
    const id = await job('#!/bin/sh\nsvc output set answer 42\necho all done\n', {
      checks: ['output.answer == 42', 'stdout contains "all done"'],
    });
    const before = (await server.api.get(`/api/jobs/${id}`)).body;
    assert.equal(before.nextMode, 'scripted');
    assert.equal(before.graduatedVersion, 1, 'a first main graduates the job');
    const { run, events } = await runOnce(id);
    assert.equal(run.status, 'succeeded', run.error);
    assert.equal(run.mode, 'scripted');
    assert.equal(run.turns, 0, 'no model call');
    assert.equal(run.cost, 0);
    assert.equal(run.fellBack, false);
    assert.deepEqual(run.outputs, { answer: 42 });
    assert.equal(run.summary, 'The main script did the job.\n\n```\nall done\n\n```');
    assert.deepEqual(statuses(events), ['provisioning', 'running', 'verifying', 'succeeded']);
    const verify = events.find((e) => e.type === 'verify.result')!;
    assert.equal(verify.payload.passed, true);
    assert.deepEqual(
      verify.payload.checks.map((c: { check: string }) => c.check),
      ['exit_code == 0', 'output.answer exists', 'output.answer == 42', 'stdout contains "all done"'],
    );
    assert.equal(
      events.some((e) => e.type === 'llm.call'),
      false,
    );
    const pending = (await server.api.post(`/api/providers/${server.providerId}/script`, { responses: [] })).body
      .pending;
    assert.equal(pending, 0);
  });

  it('falls back to the agent in the same sandbox when a check fails, and demotes the job after two fallbacks', async () => {
    const id = await job('#!/bin/sh\necho half way > /workspace/progress\nsvc step upload\nexit 3\n');
    const first = await runOnce(id);
    assert.equal(first.run.status, 'succeeded', first.run.error);
    assert.equal(first.run.fellBack, true);
    assert.deepEqual(first.run.outputs, { answer: 42 }, 'the agent ran the quoted command');
    assert.deepEqual(statuses(first.events), ['provisioning', 'running', 'verifying', 'running', 'succeeded']);
    const fallback = first.events.find((e) => e.type === 'fallback')!;
    assert.equal(fallback.payload.reason, 'The check "exit_code == 0" failed: the exit code was 3');
    assert.equal((await server.api.get(`/api/jobs/${id}`)).body.demoted, false, 'one fallback does not demote');
    const second = await runOnce(id);
    assert.equal(second.run.fellBack, true);
    const after = (await server.api.get(`/api/jobs/${id}`)).body;
    assert.equal(after.demoted, true);
    assert.equal(after.nextMode, 'assisted');
    const third = await runOnce(id);
    assert.equal(third.run.mode, 'assisted');
    // A repair of main (a later version) does not lift the demotion; a pin to scripted overrides it.
    await server.api.request('PUT', `/api/jobs/${id}/playbook`, {
      content: { main: '#!/bin/sh\nsvc output set answer 42\n' },
    });
    assert.equal((await server.api.get(`/api/jobs/${id}`)).body.demoted, true);
    await server.api.patch(`/api/jobs/${id}`, { modePin: 'scripted' });
    const pinned = await runOnce(id);
    assert.equal(pinned.run.mode, 'scripted');
    assert.equal(pinned.run.fellBack, false);
  });

  it('treats svc fail in the main script as a failed verification, and the agent starts without it', async () => {
    const id = await job('#!/bin/sh\nsvc output set answer 41\nsvc fail "the upstream API is down"\n');
    const { run, events } = await runOnce(id);
    assert.equal(run.fellBack, true);
    assert.equal(run.status, 'succeeded', run.error);
    assert.equal(
      events.find((e) => e.type === 'fallback')!.payload.reason,
      'The script reported a failure: the upstream API is down',
    );
    assert.deepEqual(run.outputs, { answer: 42 }, "the agent's value replaces the script's");
  });

  it('asks the utility model for a verdict when verify.llm is set, and counts its cost apart', async () => {
    const priced = await server.api.post('/api/models', {
      providerId: server.providerId,
      model: 'fake-verifier',
      price: { in: 1_000_000, out: 1_000_000, cacheRead: 0, cacheWrite: 0 },
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
    await server.api.patch('/api/settings', { utilityModelId: priced.body.id });
    try {
      const id = await job('#!/bin/sh\nsvc output set answer 42\n', { checks: [], llm: true });
      await server.api.post(`/api/providers/${server.providerId}/script`, {
        responses: [
          {
            text: '{"pass":true,"reason":"the answer is reported","summary":"Reported 42."}',
            usage: { input: 100, output: 20 },
          },
        ],
        reset: true,
      });
      const learningTokens = async () =>
        (await server.api.get('/api/stats/overview?range=24h')).body.current.learningTokens as number;
      const tokensBefore = await learningTokens();
      const good = await runOnce(id);
      assert.equal(good.run.status, 'succeeded', good.run.error);
      assert.equal(good.run.summary, 'Reported 42.');
      assert.equal(good.run.verifyCost, 120);
      await waitFor(
        'the verdict to count as learning tokens',
        async () => (await learningTokens()) === tokensBefore + 120,
      );
      assert.equal(good.run.cost, 0, "verification is not the run's own cost");
      assert.equal(good.events.find((e) => e.type === 'verify.result')!.payload.llm.pass, true);

      await server.api.post(`/api/providers/${server.providerId}/script`, {
        responses: [{ text: '{"pass":false,"reason":"42 is not plausible","summary":""}' }],
        reset: true,
      });
      const rejected = await runOnce(id);
      assert.equal(rejected.run.fellBack, true);
      assert.equal(
        rejected.events.find((e) => e.type === 'fallback')!.payload.reason,
        'The verifier rejected the result: 42 is not plausible',
      );
    } finally {
      await server.api.patch('/api/settings', { utilityModelId: null });
    }
  });
});

describe('toolkit tools', () => {
  it('offers each toolkit script as toolkit__<name> with --name value flags, and counts its calls', async () => {
    const id = (
      await server.api.post('/api/jobs', {
        name: `toolkit ${Math.random()}`,
        instruction: 'Greet.',
        selfImprove: false,
      })
    ).body.id as string;
    const greet =
      '#!/bin/bash\n# svc:name greet.them\n# svc:description Greets someone\n# svc:args {"who": "string", "times": "integer?"}\necho "args: $*"\n[ "$2" != nobody ]\n';
    const saved = await server.api.request('PUT', `/api/jobs/${id}/playbook`, {
      content: { toolkit: [{ name: 'greet.them', content: greet }] },
    });
    assert.equal(saved.status, 200, saved.text);
    const call = (args: unknown) => ({ toolCalls: [{ name: 'toolkit__greet_them', args }] });
    await server.api.post(`/api/providers/${server.providerId}/script`, {
      responses: [
        call({ who: 'Ada Lovelace', times: 2 }),
        call({ times: 1 }),
        call({ who: 'nobody' }),
        { toolCalls: [{ name: 'finish', args: { status: 'success', summary: 'greeted' } }] },
      ],
      reset: true,
    });
    const { run, events } = await runOnce(id);
    assert.equal(run.status, 'succeeded', run.error);
    const results = events.filter((e) => e.type === 'tool.result').map((e) => e.payload);
    assert.equal(results[0]!.content, 'exit code: 0\nargs: --times 2 --who Ada Lovelace\n');
    assert.equal(results[0]!.isError, false);
    assert.match(results[1]!.content, /missing required argument "who"/);
    assert.equal(results[1]!.isError, true);
    assert.equal(results[2]!.isError, true, "the exit status is the script's");
    const script = await waitFor('the toolkit calls to be counted', async () => {
      const tool = (await server.api.get(`/api/jobs/${id}/playbook`)).body.content.toolkit[0];
      return tool.calls === 2 && tool;
    });
    assert.equal(script.failures, 1);
  });
});

describe('setup script', () => {
  it("runs the playbook's setup before the agent, and fails the run clearly when it fails", async () => {
    const id = (
      await server.api.post('/api/jobs', {
        name: `setup ${Math.random()}`,
        instruction: 'Report it with `svc output set tool "$(cat /workspace/tool.txt)"`.',
        selfImprove: false,
      })
    ).body.id as string;
    await server.api.request('PUT', `/api/jobs/${id}/playbook`, {
      content: { setup: 'echo installing; echo ready > /workspace/tool.txt' },
    });
    await server.api.post(`/api/providers/${server.providerId}/script`, { responses: [], reset: true });
    const ok = await runOnce(id);
    assert.equal(ok.run.status, 'succeeded', ok.run.error);
    assert.deepEqual(ok.run.outputs, { tool: 'ready' });
    const setup = ok.events.find((e) => e.type === 'sandbox.setup')!;
    assert.deepEqual(setup.payload, { exitCode: 0, output: 'installing\n' });

    await server.api.request('PUT', `/api/jobs/${id}/playbook`, { content: { setup: 'echo broken >&2; exit 3' } });
    const failed = await runOnce(id);
    assert.equal(failed.run.status, 'failed');
    assert.equal(failed.run.error, 'The setup script failed with exit code 3');
    assert.equal(failed.run.turns, 0, 'the agent never started');
    assert.equal(failed.events.find((e) => e.type === 'sandbox.setup')!.payload.output, 'broken\n');
  });
});
