import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { finishedRun, serverWithFakeModel } from '../api/harness.js';

/**
 * Reflection and graduation through the public API (docs/design.md, "Learning: scripted runs, reflection, shadow
 * runs"), with the fake provider's deterministic reflection: a job goes from explore to assisted to scripted.
 */
const server = serverWithFakeModel();

/** Waits for the run and its reflection; answers the run. */
const settled = async (runId: string) => (await finishedRun(server.api, runId, { reflection: true })).run;

async function runAndReflect(jobId: string) {
  const created = await server.api.post(`/api/jobs/${jobId}/runs`, {});
  assert.equal(created.status, 201, created.text);
  return settled(created.body.runId);
}

const newJob = async (fields: Record<string, unknown> = {}) =>
  (
    await server.api.post('/api/jobs', {
      name: `learning ${Math.random()}`,
      instruction: 'Report it with `svc output set answer 42`.',
      ...fields,
    })
  ).body.id as string;

describe('reflection and graduation', () => {
  it('takes a job from explore through assisted runs to a scripted run that costs nothing on the model', async () => {
    await server.api.post(`/api/providers/${server.providerId}/script`, { responses: [], reset: true });
    const id = await newJob();
    const first = await runAndReflect(id);
    assert.equal(first.mode, 'explore');
    assert.equal(first.status, 'succeeded');
    assert.equal(first.reflection, 'done', first.reflectionError);
    assert.equal(first.reflectionVersion, 1);
    assert.deepEqual(
      first.reflectionOps.map((o: { op: string; status: string }) => `${o.op}:${o.status}`),
      ['upsert_script:applied', 'add_learning:applied'],
    );
    const v1 = (await server.api.get(`/api/jobs/${id}/playbook`)).body;
    assert.equal(v1.version, 1);
    assert.deepEqual(
      v1.content.toolkit.map((s: { name: string }) => s.name),
      ['steps'],
    );
    assert.equal((await server.api.get(`/api/jobs/${id}/playbook/versions/1`)).body.author, 'reflection');

    const modes: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await runAndReflect(id);
      assert.equal(r.status, 'succeeded');
      assert.equal(r.reflection, 'done', r.reflectionError);
      modes.push(r.mode);
    }
    assert.deepEqual(modes, ['assisted', 'assisted', 'assisted']);
    const job = (await server.api.get(`/api/jobs/${id}`)).body;
    assert.equal(job.playbookVersion, 2, 'the third assisted run graduated the job');
    assert.equal(job.graduatedVersion, 2);
    assert.equal(job.nextMode, 'scripted');
    const graduating = (await server.api.get(`/api/jobs/${id}/playbook/versions/2`)).body;
    const proposed = graduating.ops.find((o: { op: string }) => o.op === 'propose_main');
    assert.equal(proposed.status, 'applied');
    assert.equal(proposed.test.status, 'passed', 'the new main passed its shadow run first');
    const v2 = (await server.api.get(`/api/jobs/${id}/playbook`)).body.content;
    assert.match(v2.main, /\/svc\/toolkit\/steps/);
    assert.deepEqual(v2.verify, { checks: ['exit_code == 0'], llm: false, varies: [] });

    const scripted = await runAndReflect(id);
    assert.equal(scripted.mode, 'scripted');
    assert.equal(scripted.status, 'succeeded', scripted.error);
    assert.equal(scripted.turns, 0);
    assert.equal(scripted.cost, 0);
    assert.deepEqual(scripted.outputs, { answer: 42 });
    assert.equal(scripted.reflection, 'skipped', 'a clean scripted success never reflects');

    // Rolling back to version 0 sends the job back to explore.
    const rolled = await server.api.post(`/api/jobs/${id}/playbook/rollback`, { version: 0 });
    assert.equal(rolled.status, 200, rolled.text);
    assert.equal((await server.api.get(`/api/jobs/${id}`)).body.nextMode, 'explore');
  });

  it('learns on request whatever selfImprove says, and refuses a second request while one is pending', async () => {
    const id = await newJob({ selfImprove: false });
    const run = await runAndReflect(id);
    assert.equal(run.reflection, 'skipped');
    // The reflection answer waits a little, so the second request finds the first pending.
    await server.api.post(`/api/providers/${server.providerId}/script`, {
      responses: [{ text: '{"summary":"Nothing new.","usedLearnings":[],"ops":[]}', delayMs: 800 }],
      reset: true,
    });
    const learn = await server.api.post(`/api/runs/${run.id}/learn`, {});
    assert.equal(learn.status, 202, learn.text);
    assert.deepEqual(learn.body, { reflection: 'pending' });
    const again = await server.api.post(`/api/runs/${run.id}/learn`, {});
    assert.equal(again.status, 409);
    assert.equal(again.body.code, 'conflict');
    const done = await settled(run.id);
    assert.equal(done.reflection, 'done');
    assert.equal(done.reflectionSummary, 'Nothing new.');
    assert.equal(done.reflectionVersion, null, 'no applied op, no version');
    assert.equal((await server.api.get(`/api/jobs/${id}`)).body.playbookVersion, 0);
  });

  it('fails cleanly on an answer that is not JSON, and tries a second time after rejected ops', async () => {
    const id = await newJob({ selfImprove: false });
    const run = await runAndReflect(id);
    await server.api.post(`/api/providers/${server.providerId}/script`, {
      responses: [{ text: 'I think the run went well.' }],
      reset: true,
    });
    await server.api.post(`/api/runs/${run.id}/learn`, {});
    const broken = await settled(run.id);
    assert.equal(broken.reflection, 'failed');
    assert.equal(broken.reflectionError, 'the reflection model did not answer valid JSON');
    assert.equal((await server.api.get(`/api/jobs/${id}`)).body.playbookVersion, 0, 'the playbook stays as it was');

    const bad = {
      op: 'retire_learning',
      rationale: 'r',
      id: 'L9',
      kind: null,
      text: null,
      when: null,
      name: null,
      content: null,
    };
    const good = {
      op: 'add_learning',
      rationale: 'r',
      id: null,
      kind: 'fact',
      text: 'The answer is reported as a number.',
      when: null,
      name: null,
      content: null,
    };
    await server.api.post(`/api/providers/${server.providerId}/script`, {
      responses: [
        { text: JSON.stringify({ summary: 'first', usedLearnings: [], ops: [bad] }) },
        { text: JSON.stringify({ summary: 'second', usedLearnings: [], ops: [good] }) },
      ],
      reset: true,
    });
    await server.api.post(`/api/runs/${run.id}/learn`, {});
    const fixed = await settled(run.id);
    assert.equal(fixed.reflection, 'done', fixed.reflectionError);
    assert.equal(fixed.reflectionSummary, 'second');
    assert.equal(fixed.reflectionVersion, 1);
    const content = (await server.api.get(`/api/jobs/${id}/playbook`)).body.content;
    assert.deepEqual(
      content.learnings.map((l: { text: string }) => l.text),
      ['The answer is reported as a number.'],
    );
  });

  it('holds ops that carry a secret value, and never stores the value', async () => {
    const secret = 'hunter2-very-secret';
    assert.equal((await server.api.post('/api/secrets', { name: 'REFLECT_TOKEN', value: secret })).status, 201);
    const id = await newJob({ selfImprove: false });
    const run = await runAndReflect(id);
    const leak = {
      op: 'add_learning',
      rationale: 'r',
      id: null,
      kind: 'fact',
      text: `Log in with ${secret}.`,
      when: null,
      name: null,
      content: null,
    };
    await server.api.post(`/api/providers/${server.providerId}/script`, {
      responses: [{ text: JSON.stringify({ summary: 's', usedLearnings: [], ops: [leak] }) }],
      reset: true,
    });
    await server.api.post(`/api/runs/${run.id}/learn`, {});
    const done = await settled(run.id);
    assert.equal(done.reflection, 'done');
    assert.equal(done.reflectionOps[0].status, 'held');
    assert.ok(done.reflectionOps[0].flags.some((f: string) => f.startsWith('needs review')));
    assert.equal(JSON.stringify(done).includes(secret), false);
    assert.equal((await server.api.get(`/api/jobs/${id}`)).body.playbookVersion, 0);
  });

  it('shows reflection the scripts a run left in /svc/candidates', async () => {
    const write =
      "printf '#!/bin/sh\\n# svc:name shout\\n# svc:description Prints its words loudly\\necho HELLO\\n' > /svc/candidates/shout.sh";
    const id = await newJob({
      selfImprove: true,
      instruction: `Write the helper with \`${write}\` and run it with \`sh /svc/candidates/shout.sh\`.`,
    });
    await server.api.post(`/api/providers/${server.providerId}/script`, { responses: [], reset: true });
    const run = await runAndReflect(id);
    assert.equal(run.status, 'succeeded', run.error);
    assert.equal(run.reflection, 'done', run.reflectionError);
    const toolkit = (await server.api.get(`/api/jobs/${id}/playbook`)).body.content.toolkit as Array<{
      name: string;
      description: string;
    }>;
    const shout = toolkit.find((s) => s.name === 'shout');
    assert.ok(shout, `the candidate was promoted: ${JSON.stringify(toolkit.map((s) => s.name))}`);
    assert.equal(shout.description, 'Prints its words loudly');
  });

  it('rejects a Dockerfile when no sandbox backend here can build it, and keeps the other ops', async () => {
    const id = await newJob({ selfImprove: false });
    const run = await runAndReflect(id);
    const ops = [
      {
        op: 'set_dockerfile',
        rationale: 'r',
        id: null,
        kind: null,
        text: null,
        when: null,
        name: null,
        content: 'FROM svc-base:bookworm\nRUN true\n',
      },
      {
        op: 'add_learning',
        rationale: 'r',
        id: null,
        kind: 'fact',
        text: 'Counting needs no tools.',
        when: null,
        name: null,
        content: null,
      },
    ];
    const second = ops.slice(1);
    await server.api.post(`/api/providers/${server.providerId}/script`, {
      responses: [
        { text: JSON.stringify({ summary: 's', usedLearnings: [], ops }) },
        { text: JSON.stringify({ summary: 's', usedLearnings: [], ops: second }) },
      ],
      reset: true,
    });
    await server.api.post(`/api/runs/${run.id}/learn`, {});
    const done = await settled(run.id);
    assert.equal(done.reflection, 'done', done.reflectionError);
    const content = (await server.api.get(`/api/jobs/${id}/playbook`)).body.content;
    assert.equal(content.dockerfile, null);
    assert.equal(content.learnings.length, 1);
  });

  describe('shadow runs', () => {
    const op = (fields: Record<string, string | null>) => ({
      rationale: 'r',
      id: null,
      kind: null,
      text: null,
      when: null,
      name: null,
      content: null,
      ...fields,
    });
    const answer = (...ops: unknown[]) => ({ text: JSON.stringify({ summary: 's', usedLearnings: [], ops }) });

    async function scriptedJob() {
      const id = await newJob({ selfImprove: false, spec: { outputs: [{ name: 'answer', type: 'number' }] } });
      const saved = await server.api.request('PUT', `/api/jobs/${id}/playbook`, {
        content: { main: '#!/bin/sh\nsvc output set answer 42\n' },
      });
      assert.equal(saved.status, 200, saved.text);
      const run = await runAndReflect(id);
      assert.equal(run.mode, 'scripted');
      assert.equal(run.status, 'succeeded', run.error);
      return { id, run };
    }

    it('rejects a changed main that fails its shadow run, reverts it, and keeps the rest after a second attempt', async () => {
      const { id, run } = await scriptedJob();
      const learning = op({ op: 'add_learning', kind: 'fact', text: 'The answer is always reported.' });
      await server.api.post(`/api/providers/${server.providerId}/script`, {
        responses: [
          answer(op({ op: 'update_main', content: '#!/bin/sh\necho broken; exit 4\n' }), learning),
          answer(learning),
        ],
        reset: true,
      });
      await server.api.post(`/api/runs/${run.id}/learn`, {});
      const first = await settled(run.id);
      assert.equal(first.reflection, 'done', first.reflectionError);
      assert.deepEqual(
        first.reflectionOps.map((o: { op: string; status: string }) => `${o.op}:${o.status}`),
        ['add_learning:applied'],
        'the second answer is what counts',
      );
      const content = (await server.api.get(`/api/jobs/${id}/playbook`)).body.content;
      assert.equal(content.main, '#!/bin/sh\nsvc output set answer 42\n', 'main stays as it was');
      assert.equal(content.learnings.length, 1);
    });

    it('fails a main whose outputs differ from the reflected run, and records the shadow result on the op', async () => {
      const { run } = await scriptedJob();
      const wrong = op({ op: 'update_main', content: '#!/bin/sh\nsvc output set answer 41\n' });
      // Both attempts propose the same main; the second attempt's record is the one kept.
      await server.api.post(`/api/providers/${server.providerId}/script`, {
        responses: [answer(wrong), answer(wrong)],
        reset: true,
      });
      await server.api.post(`/api/runs/${run.id}/learn`, {});
      const again = await settled(run.id);
      const updated = again.reflectionOps[0];
      assert.equal(updated.status, 'rejected');
      assert.equal(
        updated.reason,
        `main failed its shadow run: main reported the output answer as 41, but run #${run.number} reported 42`,
      );
      assert.equal(updated.test.status, 'failed');
      assert.equal(again.reflectionVersion, null, 'nothing was saved');
    });

    it('keeps job state writes of a shadow run in an overlay, and skips a main that declares external side effects', async () => {
      const { id, run } = await scriptedJob();
      const writes =
        '#!/bin/sh\nsvc state set shadow-key "$(svc state get missing-key || echo fresh)"\nsvc output set answer 42\n';
      await server.api.post(`/api/providers/${server.providerId}/script`, {
        responses: [answer(op({ op: 'update_main', content: writes }))],
        reset: true,
      });
      await server.api.post(`/api/runs/${run.id}/learn`, {});
      const done = await settled(run.id);
      assert.equal(done.reflectionOps[0].status, 'applied', JSON.stringify(done.reflectionOps));
      assert.equal(done.reflectionOps[0].test.status, 'passed');
      assert.equal(
        (await server.api.get(`/api/jobs/${id}/state/shadow-key`)).status,
        404,
        'the shadow run wrote nothing for real',
      );

      const external = '#!/bin/sh\n# svc:side-effects external\nsvc output set answer 42\n';
      await server.api.post(`/api/providers/${server.providerId}/script`, {
        responses: [answer(op({ op: 'update_main', content: external }))],
        reset: true,
      });
      await server.api.post(`/api/runs/${run.id}/learn`, {});
      const skipped = await settled(run.id);
      assert.equal(skipped.reflectionOps[0].status, 'applied');
      assert.deepEqual(skipped.reflectionOps[0].test, {
        status: 'skipped',
        detail: 'main declares external side effects',
      });
    });
  });
});
