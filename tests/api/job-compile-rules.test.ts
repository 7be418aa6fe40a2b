import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { adminSession, Client, createToken, startTestServer, type TestServer } from './harness.js';

/**
 * Compile's clarifying questions, a changed instruction recompiling the spec, and a job's model being an enabled model
 * of the workspace (docs/jobs.md, "Fields" and "Compile"), with the fake provider.
 */
let t: TestServer;
let api: Client;
let providerId = '';
let modelId = '';

const caps = {
  tools: true,
  parallelTools: true,
  reasoning: false,
  jsonSchema: true,
  promptCache: false,
  vision: false,
  context: 100_000,
};
const price = { in: 0, out: 0, cacheRead: 0, cacheWrite: 0 };

async function job(fields: Record<string, unknown> = {}) {
  const res = await api.post('/api/jobs', { name: `job ${Math.random()}`, instruction: 'Say hello', ...fields });
  assert.equal(res.status, 201, res.text);
  return res.body as { id: string; spec: Record<string, any>; modelId: string | null };
}

before(async () => {
  t = await startTestServer({ SVC_ROLES: 'api,projector' });
  const session = await adminSession(t);
  api = (await createToken(session)).client;
});
after(async () => t?.stop());

describe('job rules around compile and models', () => {
  it('keeps the spec of a changed instruction while the workspace has no model to compile with', async () => {
    const spec = { title: 'Hand written', outputs: [{ name: 'answer', type: 'number' }] };
    const { id } = await job({ spec });
    const res = await api.patch(`/api/jobs/${id}`, { instruction: 'Something else entirely' });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.instruction, 'Something else entirely');
    assert.equal(res.body.spec.title, 'Hand written');
  });

  it('asks clarifying questions unless told not to, and answers the spec with them', async () => {
    providerId = (await api.post('/api/providers', { name: 'Fake', kind: 'fake' })).body.id;
    modelId = (await api.get('/api/models')).body.items[0].id;
    assert.equal((await api.patch('/api/settings', { agentModelId: modelId })).status, 200);

    const open = await api.post('/api/jobs/compile', { instruction: 'Summarise the news' });
    assert.equal(open.status, 200, open.text);
    assert.deepEqual(open.body.questions, [
      { question: 'How often should this run?', options: ['Only when started', 'Every day', 'Every week'] },
    ]);
    assert.equal(open.body.spec.goal, 'Summarise the news');
    const quiet = await api.post('/api/jobs/compile', { instruction: 'Summarise the news', askQuestions: false });
    assert.deepEqual(quiet.body.questions, []);
    assert.deepEqual(quiet.body.spec, open.body.spec, 'the same proposal, without questions');
    const clear = await api.post('/api/jobs/compile', { instruction: 'Every day at 9am summarise the news' });
    assert.deepEqual(clear.body.questions, [], 'a schedule leaves nothing open');
    const bad = await api.post('/api/jobs/compile', { instruction: 'x', askQuestions: 'yes' });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.fields[0].field, 'askQuestions');
  });

  it('recompiles the spec when the instruction changes, unless rebuildSpec is false or a spec is sent', async () => {
    const { id, spec } = await job({ spec: { title: 'Hand written' } });
    assert.equal(spec.title, 'Hand written');

    const same = await api.patch(`/api/jobs/${id}`, { instruction: 'Say hello', name: 'Renamed' });
    assert.equal(same.body.spec.title, 'Hand written', 'the same instruction is no change');

    const kept = await api.patch(`/api/jobs/${id}`, { instruction: 'Say goodbye', rebuildSpec: false });
    assert.equal(kept.status, 200, kept.text);
    assert.equal(kept.body.spec.title, 'Hand written');

    const rebuilt = await api.patch(`/api/jobs/${id}`, { instruction: 'Every day at 7am check example.com' });
    assert.equal(rebuilt.status, 200, rebuilt.text);
    assert.equal(rebuilt.body.spec.goal, 'Every day at 7am check example.com');
    assert.equal(rebuilt.body.spec.schedule.cron, '0 7 * * *');
    assert.equal(rebuilt.body.cron, null, 'the spec is recompiled, the job fields stay as they were');
    assert.equal((await api.get(`/api/jobs/${id}`)).body.spec.goal, rebuilt.body.spec.goal, 'stored');

    const given = await api.patch(`/api/jobs/${id}`, { instruction: 'Yet another', spec: { title: 'Mine' } });
    assert.equal(given.body.spec.title, 'Mine', 'a spec sent with the instruction wins');
    assert.equal(given.body.spec.goal, undefined);

    const bad = await api.patch(`/api/jobs/${id}`, { rebuildSpec: 'no' });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.fields[0].field, 'rebuildSpec');
  });

  it('answers a model that fails to recompile as 502 and changes nothing', async () => {
    const { id } = await job({ spec: { title: 'Before' } });
    const scripted = await api.post(`/api/providers/${providerId}/script`, {
      responses: [{ error: 'the model is down', errorStatus: 500 }],
      reset: true,
    });
    assert.equal(scripted.status, 200, scripted.text);
    const res = await api.patch(`/api/jobs/${id}`, { instruction: 'Changed', name: 'Changed too' });
    assert.equal(res.status, 502, res.text);
    assert.equal(res.body.code, 'provider_error');
    const now = (await api.get(`/api/jobs/${id}`)).body;
    assert.equal(now.instruction, 'Say hello');
    assert.equal(now.spec.title, 'Before');
    await api.post(`/api/providers/${providerId}/script`, { responses: [], reset: true });
  });

  it('refuses a modelId that is not an enabled model of the workspace, naming the field', async () => {
    for (const bad of ['no-such-model', '00000000-0000-7000-8000-00000000beef']) {
      const res = await api.post('/api/jobs', { name: 'x', instruction: 'x', modelId: bad });
      assert.equal(res.status, 400, bad);
      assert.equal(res.body.code, 'validation_failed');
      assert.deepEqual(
        res.body.fields.map((f: { field: string }) => f.field),
        ['modelId'],
      );
    }
    const before = (await api.get('/api/jobs')).body.total;
    const { id, modelId: chosen } = await job({ modelId });
    assert.equal(chosen, modelId);
    assert.equal((await api.get('/api/jobs')).body.total, before + 1, 'only the valid job was created');

    // A second model, then disabled: a job may not move to it, but one already on it keeps working.
    const second = await api.post('/api/models', { providerId, model: 'fake-second', price, caps });
    assert.equal(second.status, 201, second.text);
    const onSecond = await job({ modelId: second.body.id });
    assert.equal((await api.patch(`/api/models/${second.body.id}`, { enabled: false })).status, 200);
    const moved = await api.patch(`/api/jobs/${id}`, { modelId: second.body.id });
    assert.equal(moved.status, 400);
    assert.equal(moved.body.fields[0].field, 'modelId');
    assert.equal((await api.get(`/api/jobs/${id}`)).body.modelId, modelId, 'unchanged');
    const kept = await api.patch(`/api/jobs/${onSecond.id}`, { modelId: second.body.id, name: 'still here' });
    assert.equal(kept.status, 200, 'an unchanged modelId is not checked again');
    const cleared = await api.patch(`/api/jobs/${onSecond.id}`, { modelId: '' });
    assert.equal(cleared.status, 200);
    assert.equal(cleared.body.modelId, null);
    const created = await api.post('/api/jobs', { name: 'x', instruction: 'x', modelId: second.body.id });
    assert.equal(created.status, 400, 'a disabled model cannot be chosen for a new job');
  });
});
