import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { providerDecider, providerStreamId } from '../../domain/provider.js';
import { settingsStreamId } from '../../domain/settings.js';
import { defaultWorkspaceId } from '../../domain/workspace.js';
import { systemContext } from '../../app/commands.js';
import { adminSession, Client, createToken, startTestServer, userSession, type TestServer } from './harness.js';

/** Workspace settings and the host-side model resolver. */
let t: TestServer;
let admin: Client;
let member: Client;

before(async () => {
  t = await startTestServer({ SVC_ROLES: 'api,projector' });
  admin = await adminSession(t);
  member = (await userSession(t, admin, 'member@example.com')).client;
});
after(async () => t?.stop());

const defaults = {
  agentModelId: null,
  utilityModelId: null,
  reflectionModelId: null,
  defaultImage: null,
  defaultLimits: {
    timeoutSeconds: 900,
    maxTurns: 60,
    maxCostUsd: 2,
    cpus: 1,
    memoryMb: 1024,
    pidsLimit: 256,
    diskMb: 4096,
  },
  dailySpendLimitUsd: 0,
  retentionDays: 90,
  notifyWebhookUrl: null,
  notifyOn: ['run.failed', 'job.demoted'],
  notifySecret: null,
};

async function fakeModels(name: string): Promise<{ providerId: string; modelIds: [string, string, ...string[]] }> {
  const providerId = (await admin.post('/api/providers', { name, kind: 'fake' })).body.id as string;
  const second = await admin.post('/api/models', {
    providerId,
    model: 'fake-second',
    price: { in: 0, out: 0, cacheRead: 0, cacheWrite: 0 },
    caps: {
      tools: true,
      parallelTools: true,
      reasoning: false,
      jsonSchema: true,
      promptCache: false,
      vision: false,
      context: 100_000,
    },
  });
  const models = (await admin.get(`/api/models?provider=${providerId}&sort=model`)).body.items as Array<{
    id: string;
    model: string;
  }>;
  assert.equal(second.status, 201);
  const [first, other, ...rest] = models.map((m) => m.id);
  assert.ok(first && other, 'the provider lists both models');
  return { providerId, modelIds: [first, other, ...rest] };
}

describe('settings', () => {
  it('answers the defaults to members, and only admins change them', async () => {
    const got = await member.get('/api/settings');
    assert.equal(got.status, 200);
    assert.deepEqual(got.body, defaults);
    assert.deepEqual(await t.server.services.models.settingsFor(defaultWorkspaceId), defaults);
    const token = (await createToken(member)).client;
    for (const client of [member, token]) {
      const refused = await client.patch('/api/settings', { retentionDays: 10 });
      assert.equal(refused.status, 403);
      assert.equal(refused.body.code, 'forbidden');
    }
  });

  it('refuses values out of bounds, naming every field', async () => {
    const res = await admin.patch('/api/settings', {
      retentionDays: 0,
      dailySpendLimitUsd: -1,
      defaultLimits: { cpus: 100, memoryMb: 10, timeoutSeconds: 5 },
      notifyOn: ['run.failed', 'run.exploded'],
      notifyWebhookUrl: 'x'.repeat(2001),
    });
    assert.equal(res.status, 400);
    assert.equal(res.body.code, 'validation_failed');
    const fields = (res.body.fields as Array<{ field: string }>).map((f) => f.field).sort();
    assert.deepEqual(fields, [
      'dailySpendLimitUsd',
      'defaultLimits.cpus',
      'defaultLimits.memoryMb',
      'defaultLimits.timeoutSeconds',
      'notifyOn[1]',
      'notifyWebhookUrl',
      'retentionDays',
    ]);
    assert.equal((await admin.patch('/api/settings', { retentionDays: 3651 })).body.fields[0].field, 'retentionDays');
    assert.equal((await admin.patch('/api/settings', { colour: 'blue' })).body.fields[0].code, 'unknown_field');
    assert.deepEqual((await admin.get('/api/settings')).body, defaults, 'nothing changed');
  });

  it('changes fields one by one, as events carrying only what changed', async () => {
    const a = await admin.patch('/api/settings', {
      retentionDays: 30,
      dailySpendLimitUsd: 12.5,
      defaultImage: '  alpine:3.20 ',
    });
    assert.equal(a.status, 200, a.text);
    assert.deepEqual(a.body, { ...defaults, retentionDays: 30, dailySpendLimitUsd: 12.5, defaultImage: 'alpine:3.20' });
    const b = await admin.patch('/api/settings', {
      defaultLimits: { maxTurns: 10, cpus: 2.5 },
      notifyOn: ['job.demoted', 'run.fell_back', 'job.demoted'],
    });
    assert.deepEqual(
      b.body.defaultLimits,
      { ...defaults.defaultLimits, maxTurns: 10, cpus: 2.5 },
      'limits merge field by field',
    );
    assert.deepEqual(b.body.notifyOn, ['run.fell_back', 'job.demoted'], 'deduplicated, in a fixed order');
    assert.equal(b.body.retentionDays, 30, 'other fields keep their values');
    assert.equal(
      (await admin.patch('/api/settings', { defaultImage: '' })).body.defaultImage,
      null,
      'an empty image resets to the server default',
    );
    assert.deepEqual((await admin.patch('/api/settings', { notifyOn: [] })).body.notifyOn, []);

    const events = await t.server.services.stores.events.readStream(settingsStreamId(defaultWorkspaceId));
    const changes = events.map((e) => Object.keys((e.data as { changes: object }).changes).sort());
    assert.deepEqual(changes.slice(0, 4), [
      ['dailySpendLimitUsd', 'defaultImage', 'retentionDays'],
      ['defaultLimits', 'notifyOn'],
      ['defaultImage'],
      ['notifyOn'],
    ]);
    const before = events.length;
    await admin.patch('/api/settings', { retentionDays: 30 });
    assert.equal(
      (await t.server.services.stores.events.readStream(settingsStreamId(defaultWorkspaceId))).length,
      before,
      'a patch that changes nothing appends nothing',
    );
  });

  it('checks the notification URL and that the signing secret exists', async () => {
    assert.equal(
      (await admin.patch('/api/settings', { notifyWebhookUrl: 'ftp://example.com/hook' })).body.fields[0].field,
      'notifyWebhookUrl',
    );
    assert.equal(
      (await admin.patch('/api/settings', { notifyWebhookUrl: 'https://hooks.example.com/T1' })).body.notifyWebhookUrl,
      'https://hooks.example.com/T1',
    );
    assert.equal(
      (await admin.patch('/api/settings', { notifyWebhookUrl: '' })).body.notifyWebhookUrl,
      null,
      'empty turns notifications off',
    );

    const missing = await admin.patch('/api/settings', { notifySecret: 'HOOK_KEY' });
    assert.equal(missing.status, 400);
    assert.equal(missing.body.fields[0].field, 'notifySecret');
    assert.equal((await admin.post('/api/secrets', { name: 'HOOK_KEY', value: 'signing-key' })).status, 201);
    assert.equal((await admin.patch('/api/settings', { notifySecret: 'HOOK_KEY' })).body.notifySecret, 'HOOK_KEY');
    assert.equal((await admin.patch('/api/settings', { notifySecret: null })).body.notifySecret, null);
  });

  it('takes only enabled, listed models of the workspace as defaults', async () => {
    const {
      modelIds: [fakeModel, second],
    } = await fakeModels('Settings fake');
    const unknown = await admin.patch('/api/settings', { agentModelId: 'no-such-model', reflectionModelId: fakeModel });
    assert.equal(unknown.status, 400);
    assert.deepEqual(
      unknown.body.fields.map((f: { field: string }) => f.field),
      ['agentModelId'],
    );
    assert.equal((await admin.get('/api/settings')).body.reflectionModelId, null, 'a refused patch changes nothing');

    await admin.patch(`/api/models/${second}`, { enabled: false });
    assert.equal(
      (await admin.patch('/api/settings', { utilityModelId: second })).body.fields[0].field,
      'utilityModelId',
      'a disabled model cannot be picked',
    );

    const foreignId = 'foreign-provider';
    const foreign = await t.server.services.bus.execute(
      providerStreamId(foreignId),
      providerDecider,
      {
        type: 'CreateProvider',
        providerId: foreignId,
        workspaceId: 'another-workspace',
        name: 'Theirs',
        kind: 'fake',
        baseUrl: null,
        apiKeySealed: null,
        now: Date.now(),
        models: [
          {
            modelId: 'foreign-model',
            model: 'fake-model',
            label: null,
            price: { in: 0, out: 0, cacheRead: 0, cacheWrite: 0 },
            caps: {
              tools: true,
              parallelTools: true,
              reasoning: true,
              jsonSchema: true,
              promptCache: true,
              vision: true,
              context: 1000,
            },
            synced: false,
            followCatalog: false,
          },
        ],
      },
      systemContext,
    );
    await t.server.services.engine.waitFor(foreign.position);
    assert.equal(
      (await admin.patch('/api/settings', { agentModelId: 'foreign-model' })).status,
      400,
      'a model of another workspace cannot be picked',
    );

    const ok = await admin.patch('/api/settings', { agentModelId: fakeModel, reflectionModelId: fakeModel });
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.body.agentModelId, fakeModel);
    assert.equal(
      (await admin.patch('/api/settings', { reflectionModelId: null })).body.reflectionModelId,
      null,
      'null unsets',
    );
    assert.equal((await admin.patch('/api/settings', { agentModelId: null })).body.agentModelId, null);
  });
});

describe('model resolution on the host', () => {
  it('picks the job model, then the workspace defaults, with the provider key opened', async () => {
    const models = t.server.services.models;
    const {
      providerId,
      modelIds: [fakeModel, second],
    } = await fakeModels('Resolver fake');
    await admin.patch(`/api/models/${second}`, { enabled: true });
    const claude = await admin.post('/api/providers', {
      name: 'Claude',
      kind: 'anthropic',
      apiKey: 'sk-ant-resolver-key',
    });
    const claudeModel = (await admin.get(`/api/models?provider=${claude.body.id}&search=haiku`)).body.items[0];

    await admin.patch('/api/settings', { agentModelId: null, utilityModelId: null, reflectionModelId: null });
    assert.equal(await models.resolveModel(defaultWorkspaceId, 'agent', null), null, 'nothing configured');
    assert.equal(await models.resolveModel(defaultWorkspaceId, 'utility', 'no-such-model'), null);

    await admin.patch('/api/settings', { agentModelId: fakeModel });
    const agent = await models.resolveModel(defaultWorkspaceId, 'agent', null);
    assert.equal(agent!.model.id, fakeModel);
    assert.deepEqual(agent!.provider, { id: providerId, kind: 'fake', apiKey: null, baseUrl: null });
    assert.equal(agent!.model.contextWindow, 200_000);

    const job = await models.resolveModel(defaultWorkspaceId, 'agent', claudeModel.id);
    assert.equal(job!.model.model, claudeModel.model, "the job's own model first");
    assert.equal(job!.provider.apiKey, 'sk-ant-resolver-key', 'the key is opened for the call');
    assert.ok(job!.model.price.in > 0);
    assert.equal(
      (await models.resolveModel(defaultWorkspaceId, 'utility', claudeModel.id))!.model.id,
      claudeModel.id,
      'utility falls back to the run model',
    );
    assert.equal(
      (await models.resolveModel(defaultWorkspaceId, 'reflection', null))!.model.id,
      fakeModel,
      'reflection falls back to the agent model',
    );

    await admin.patch('/api/settings', { utilityModelId: second, reflectionModelId: second });
    assert.equal((await models.resolveModel(defaultWorkspaceId, 'utility', claudeModel.id))!.model.id, second);
    assert.equal((await models.resolveModel(defaultWorkspaceId, 'reflection', claudeModel.id))!.model.id, second);
    assert.equal((await models.resolveModel(defaultWorkspaceId, 'agent', claudeModel.id))!.model.id, claudeModel.id);

    await admin.patch(`/api/models/${claudeModel.id}`, { enabled: false });
    assert.equal(
      (await models.resolveModel(defaultWorkspaceId, 'agent', claudeModel.id))!.model.id,
      fakeModel,
      'a disabled job model falls back to the workspace agent model',
    );
    assert.equal(await models.resolveModel('another-workspace', 'agent', fakeModel), null, 'scoped by workspace');

    const resolved = await models.resolve(defaultWorkspaceId, 'agent', null);
    assert.equal(resolved!.name, 'fake-model');
    assert.equal(typeof resolved!.client.complete, 'function');
    await admin.patch('/api/settings', { agentModelId: null, utilityModelId: null, reflectionModelId: null });
  });
});
