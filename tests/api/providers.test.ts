import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fakeScripts } from '../../adapters/models/fake.js';
import { adminSession, Client, createToken, startTestServer, userSession, type TestServer } from './harness.js';

/** Providers, models and the catalog. */
let t: TestServer;
let admin: Client;
let member: Client;
let memberToken: Client;
let server: Server;
let base: string;
/** What the local OpenAI-compatible server does next. */
let listed: Array<Record<string, unknown>> = [];
let failing = false;
let seenAuth: string | undefined;
let chat: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) =>
  void res
    .writeHead(401, { 'content-type': 'application/json' })
    .end(JSON.stringify({ error: { message: 'bad key', type: 'invalid_request_error' } }));

const apiKey = 'sk-local-7d1e55b0c4a9f2';
const price = { in: 1_000_000, out: 2_000_000, cacheRead: 0, cacheWrite: 0 };
const caps = {
  tools: true,
  parallelTools: false,
  reasoning: false,
  jsonSchema: false,
  promptCache: false,
  vision: false,
  context: 8192,
};

before(async () => {
  t = await startTestServer({ SVC_ROLES: 'api,projector' });
  admin = await adminSession(t);
  member = (await userSession(t, admin, 'member@example.com')).client;
  memberToken = (await createToken(member)).client;
  server = createServer((req, res) => {
    seenAuth = req.headers.authorization;
    if (req.method === 'POST' && req.url?.endsWith('/chat/completions')) return chat(req, res);
    if (failing) return void res.writeHead(500).end('boom');
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ object: 'list', data: listed }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});
after(async () => {
  server?.close();
  await t?.stop();
});

const modelsOf = async (providerId: string) =>
  (await admin.get(`/api/models?provider=${providerId}&pageSize=100`)).body.items as Array<Record<string, any>>;
const scanData = (dir: string): Buffer[] =>
  readdirSync(dir).flatMap((name) => {
    const full = join(dir, name);
    const st = statSync(full);
    return st.isDirectory() ? scanData(full) : st.isFile() ? [readFileSync(full)] : [];
  });

describe('providers', () => {
  it('gives a fake provider its one model', async () => {
    const created = await admin.post('/api/providers', { name: 'Fake', kind: 'fake' });
    assert.equal(created.status, 201, created.text);
    assert.deepEqual(Object.keys(created.body).sort(), ['id', 'sync']);
    assert.deepEqual(created.body.sync, { added: 1, updated: 0, unlisted: 0 });
    const [m, ...rest] = await modelsOf(created.body.id);
    assert.equal(rest.length, 0);
    assert.deepEqual(
      { ...m, id: undefined },
      {
        id: undefined,
        providerId: created.body.id,
        providerName: 'Fake',
        providerKind: 'fake',
        model: 'fake-model',
        label: 'Fake model',
        price: { in: 0, out: 0, cacheRead: 0, cacheWrite: 0 },
        contextWindow: 200_000,
        caps: {
          tools: true,
          parallelTools: true,
          reasoning: true,
          jsonSchema: true,
          promptCache: true,
          vision: true,
          context: 200_000,
        },
        enabled: true,
        synced: false,
        followCatalog: false,
        unlistedAt: null,
      },
    );
    assert.deepEqual(
      (await admin.post(`/api/providers/${created.body.id}/sync`)).body,
      { added: 0, updated: 0, unlisted: 0 },
      'a manual source has nothing to sync',
    );
  });

  it('stores the key sealed: only hasApiKey is answered, the data files never hold it', async () => {
    listed = [{ id: 'local-a' }];
    const created = await admin.post('/api/providers', { name: 'Local', kind: 'openai', baseUrl: `${base}/`, apiKey });
    assert.equal(created.status, 201, created.text);
    assert.equal(seenAuth, `Bearer ${apiKey}`, 'the key is used for the sync');
    const got = await member.get(`/api/providers/${created.body.id}`);
    assert.equal(got.status, 200);
    assert.deepEqual(Object.keys(got.body).sort(), [
      'baseUrl',
      'createdAt',
      'hasApiKey',
      'id',
      'kind',
      'name',
      'syncError',
      'syncedAt',
    ]);
    assert.equal(got.body.hasApiKey, true);
    assert.equal(got.body.baseUrl, base, 'trailing slashes are dropped');
    assert.ok(!got.text.includes(apiKey));
    assert.ok(!(await admin.get('/api/providers')).text.includes(apiKey));
    const files = scanData(t.dataDir);
    assert.ok(
      files.some((b) => b.includes('local-a')),
      'the scan sees what the stores wrote',
    );
    assert.ok(!files.some((b) => b.includes(apiKey)), 'no data file holds the key in plain text');

    const cleared = await admin.patch(`/api/providers/${created.body.id}`, { apiKey: '', name: 'Local 2' });
    assert.equal(cleared.status, 200, cleared.text);
    assert.equal(cleared.body.hasApiKey, false);
    assert.equal(cleared.body.name, 'Local 2');
    assert.ok(
      (await modelsOf(created.body.id)).every((m) => m.providerName === 'Local 2'),
      'models follow the new name',
    );
    assert.equal((await admin.patch(`/api/providers/${created.body.id}`, { apiKey })).body.hasApiKey, true);

    const badUrl = await admin.post('/api/providers', { name: 'Bad', kind: 'openai', baseUrl: 'ftp://example.com' });
    assert.equal(badUrl.status, 400);
    assert.equal(badUrl.body.fields[0].field, 'baseUrl');
    assert.equal(
      (await admin.patch(`/api/providers/${created.body.id}`, { baseUrl: 'http://' })).body.fields[0].field,
      'baseUrl',
    );
    const badKind = await admin.post('/api/providers', { name: 'Bad', kind: 'gemini' });
    assert.equal(badKind.body.fields[0].field, 'kind');
    assert.equal((await admin.post('/api/providers', { name: '', kind: 'fake' })).body.fields[0].field, 'name');
    assert.equal(
      (await admin.post('/api/providers', { name: 'n', kind: 'fake', apiKey: 'k'.repeat(1001) })).body.fields[0].field,
      'apiKey',
    );
  });

  it('syncs an OpenAI-compatible server: added, updated, unlisted, and an unreadable source recorded', async () => {
    listed = [{ id: 'srv-small', context_length: 8192 }, { id: 'srv-large' }, { id: 'gpt-4.1' }];
    const created = await admin.post('/api/providers', { name: 'Server', kind: 'openai', baseUrl: base, apiKey });
    assert.deepEqual(created.body.sync, { added: 3, updated: 0, unlisted: 0 });
    let ms = await modelsOf(created.body.id);
    assert.equal(ms.find((m) => m.model === 'srv-small')!.contextWindow, 8192, 'the context the server reports');
    assert.equal(
      ms.find((m) => m.model === 'srv-large')!.contextWindow,
      32_768,
      'unknown context falls back to 32,768',
    );
    assert.ok(ms.every((m) => m.enabled && m.synced && m.unlistedAt === null));
    assert.equal(
      ms.find((m) => m.model === 'gpt-4.1')!.label,
      'GPT-4.1',
      'a model the catalog knows gets its metadata',
    );

    listed = [{ id: 'srv-small', context_length: 16_384 }, { id: 'gpt-4.1' }];
    assert.deepEqual((await admin.post(`/api/providers/${created.body.id}/sync`)).body, {
      added: 0,
      updated: 1,
      unlisted: 1,
    });
    ms = await modelsOf(created.body.id);
    assert.equal(ms.find((m) => m.model === 'srv-small')!.contextWindow, 16_384);
    assert.ok(ms.find((m) => m.model === 'srv-large')!.unlistedAt > 0, 'a dropped model is unlisted, never deleted');

    failing = true;
    const broken = await admin.post(`/api/providers/${created.body.id}/sync`);
    failing = false;
    assert.equal(broken.status, 200);
    assert.match(broken.body.error, /500/);
    assert.deepEqual({ ...broken.body, error: undefined }, { added: 0, updated: 0, unlisted: 0, error: undefined });
    assert.equal((await modelsOf(created.body.id)).length, 3, 'nothing changed');
    const p = (await admin.get(`/api/providers/${created.body.id}`)).body;
    assert.match(p.syncError, /500/, 'the provider records why');
    assert.ok(p.syncedAt > 0);
    await admin.post(`/api/providers/${created.body.id}/sync`);
    assert.equal((await admin.get(`/api/providers/${created.body.id}`)).body.syncError, null, 'a good sync clears it');
  });

  it('scripts fake providers only, and counts pending answers', async () => {
    const fake = (await admin.post('/api/providers', { name: 'Scripted', kind: 'fake' })).body.id as string;
    const script = (body: unknown) => admin.post(`/api/providers/${fake}/script`, body);
    assert.deepEqual(
      (
        await script({
          responses: [{ text: 'one' }, { toolCalls: [{ name: 'bash', args: { command: 'ls' } }] }],
          reset: true,
        })
      ).body,
      { pending: 2 },
    );
    assert.deepEqual((await script({ responses: [{ error: 'overloaded', errorStatus: 529 }] })).body, { pending: 3 });
    const bad = await script({ responses: [{ txt: 'typo' }] });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.fields[0].field, 'responses[0].txt');

    const fakeModel = (await modelsOf(fake))[0]!;
    const tested = await admin.post(`/api/providers/${fake}/test`, { modelId: fakeModel.id });
    assert.equal(tested.status, 200, tested.text);
    assert.equal(tested.body.ok, true);
    assert.equal(typeof tested.body.latencyMs, 'number');
    assert.equal(typeof tested.body.reply, 'string');
    assert.deepEqual((await script({ responses: [], reset: true })).body, { pending: 0 }, 'reset empties the queue');
    assert.deepEqual((await script({ responses: [] })).body, { pending: 0 });

    const openai = (await admin.get('/api/providers?search=Server')).body.items[0].id as string;
    const refused = await admin.post(`/api/providers/${openai}/script`, { responses: [] });
    assert.equal(refused.status, 422);
    assert.equal(refused.body.code, 'unsupported');
    assert.equal((await admin.post('/api/providers/nope/script', { responses: [] })).status, 404);
  });

  it('tests a model with one call: a reply, or the error without the key', async () => {
    const provider = (await admin.get('/api/providers?search=Server')).body.items[0].id as string;
    const model = (await modelsOf(provider)).find((m) => m.model === 'srv-small')!;
    chat = (_req, res) =>
      void res.writeHead(401, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          error: { message: `Incorrect API key provided: ${apiKey}`, type: 'invalid_request_error' },
        }),
      );
    const refused = await admin.post(`/api/providers/${provider}/test`, { modelId: model.id });
    assert.equal(refused.status, 200, refused.text);
    assert.equal(refused.body.ok, false);
    assert.match(refused.body.error, /401/);
    assert.ok(!refused.text.includes(apiKey), 'the key is redacted from the error');

    chat = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const chunk = (delta: Record<string, unknown>, finish: string | null) => ({
        id: 'c1',
        object: 'chat.completion.chunk',
        created: 1,
        model: 'srv-small',
        choices: [{ index: 0, delta, finish_reason: finish }],
      });
      for (const c of [chunk({ role: 'assistant', content: 'ok' }, null), chunk({}, 'stop')])
        res.write(`data: ${JSON.stringify(c)}\n\n`);
      res.end('data: [DONE]\n\n');
    };
    assert.equal((await admin.patch(`/api/models/${model.id}`, { enabled: false })).status, 200);
    const ok = await admin.post(`/api/providers/${provider}/test`, { modelId: model.id });
    assert.deepEqual(
      { ...ok.body, latencyMs: 0 },
      { ok: true, latencyMs: 0, reply: 'ok' },
      'disabled models can be tested',
    );
    assert.equal((await admin.post(`/api/providers/${provider}/test`, { modelId: 'nope' })).status, 404);
  });

  it('keeps writes to admins: members read, and get 403 on every write', async () => {
    const provider = (await admin.get('/api/providers?search=Server')).body.items[0].id as string;
    assert.equal((await member.get('/api/providers')).status, 200);
    assert.equal((await memberToken.get('/api/models')).status, 200);
    for (const [method, path, body] of [
      ['POST', '/api/providers', { name: 'x', kind: 'fake' }],
      ['PATCH', `/api/providers/${provider}`, { name: 'x' }],
      ['DELETE', `/api/providers/${provider}`, undefined],
      ['POST', `/api/providers/${provider}/sync`, {}],
      ['POST', `/api/providers/${provider}/script`, { responses: [] }],
      ['PUT', `/api/providers/${provider}/models/enabled`, { enabled: false }],
      ['POST', '/api/models', { providerId: provider, model: 'm', price, caps }],
    ] as const) {
      for (const client of [member, memberToken]) {
        const res = await client.request(method, path, body);
        assert.equal(res.status, 403, `${method} ${path}`);
        assert.equal(res.body.code, 'forbidden');
      }
    }
  });
});

describe('models', () => {
  it('adds a model by hand with its model name and price, and refuses a duplicate', async () => {
    const provider = (await admin.post('/api/providers', { name: 'Hand', kind: 'openai', baseUrl: base })).body
      .id as string;
    const created = await admin.post('/api/models', {
      providerId: provider,
      model: 'my-model',
      price,
      caps,
      label: 'Mine',
    });
    assert.equal(created.status, 201, created.text);
    assert.deepEqual(
      Object.keys(created.body).sort(),
      [
        'caps',
        'contextWindow',
        'enabled',
        'followCatalog',
        'id',
        'label',
        'model',
        'price',
        'providerId',
        'providerKind',
        'providerName',
        'synced',
        'unlistedAt',
      ].sort(),
    );
    assert.deepEqual(
      { ...created.body, id: undefined },
      {
        id: undefined,
        providerId: provider,
        providerName: 'Hand',
        providerKind: 'openai',
        model: 'my-model',
        label: 'Mine',
        price,
        contextWindow: 8192,
        caps,
        enabled: true,
        synced: false,
        followCatalog: false,
        unlistedAt: null,
      },
    );
    const dup = await admin.post('/api/models', { providerId: provider, model: 'my-model', price, caps });
    assert.equal(dup.status, 409);
    assert.equal((await admin.post('/api/models', { providerId: 'nope', model: 'x', price, caps })).status, 404);
    const bad = await admin.post('/api/models', {
      providerId: provider,
      model: 'x'.repeat(201),
      price: { ...price, in: -1 },
      caps,
      label: 'l'.repeat(101),
    });
    assert.deepEqual(bad.body.fields.map((f: { field: string }) => f.field).sort(), ['label', 'model', 'price.in']);

    const edited = await admin.patch(`/api/models/${created.body.id}`, {
      price: { ...price, in: 5 },
      caps: { ...caps, context: 4096 },
    });
    assert.equal(edited.body.price.in, 5);
    assert.equal(edited.body.contextWindow, 4096, 'the context window follows caps.context');

    listed = [{ id: 'my-model' }];
    await admin.post(`/api/providers/${provider}/sync`);
    const adopted = (await modelsOf(provider)).find((m) => m.model === 'my-model')!;
    assert.equal(adopted.synced, true, 'a model added by hand that the source lists is adopted');
    assert.equal(adopted.price.in, 5, 'with its metadata kept');
  });

  it('turns models on and off, one or all, but never a workspace default', async () => {
    const fake = (await admin.post('/api/providers', { name: 'Defaults', kind: 'fake' })).body.id as string;
    const extra = (await admin.post('/api/models', { providerId: fake, model: 'fake-2', price, caps })).body
      .id as string;
    const fakeModel = (await modelsOf(fake)).find((m) => m.model === 'fake-model')!.id as string;

    assert.equal((await admin.patch(`/api/models/${extra}`, { enabled: false })).body.enabled, false);
    assert.equal((await admin.patch(`/api/models/${extra}`, { enabled: true })).body.enabled, true);
    const off = await admin.request('PUT', `/api/providers/${fake}/models/enabled`, { enabled: false });
    assert.deepEqual(off.body, { changed: 2 });
    assert.deepEqual((await admin.request('PUT', `/api/providers/${fake}/models/enabled`, { enabled: false })).body, {
      changed: 0,
    });
    assert.deepEqual((await admin.request('PUT', `/api/providers/${fake}/models/enabled`, { enabled: true })).body, {
      changed: 2,
    });

    assert.equal((await admin.patch('/api/settings', { utilityModelId: fakeModel })).status, 200);
    const refused = await admin.patch(`/api/models/${fakeModel}`, { enabled: false });
    assert.equal(refused.status, 409);
    assert.equal(refused.body.code, 'conflict');
    assert.match(refused.body.message, /fake-model is the workspace's utility model/);
    assert.equal((await admin.request('PUT', `/api/providers/${fake}/models/enabled`, { enabled: false })).status, 409);
    assert.equal((await admin.delete(`/api/models/${fakeModel}`)).status, 409);
    assert.equal((await modelsOf(fake)).filter((m) => m.enabled).length, 2, 'a refused change changes nothing');
    assert.equal((await admin.delete(`/api/models/${extra}`)).status, 204);

    assert.equal((await admin.delete(`/api/providers/${fake}`)).status, 204);
    assert.equal(
      (await admin.get('/api/settings')).body.utilityModelId,
      null,
      'deleting the provider unsets the defaults on its models',
    );
    assert.deepEqual(await modelsOf(fake), []);
    assert.equal((await admin.get(`/api/providers/${fake}`)).status, 404);
  });
});

describe('catalog', () => {
  it('lists current Anthropic and OpenAI models with prices and caps', async () => {
    const all = (await memberToken.get('/api/catalog/models')).body as Array<Record<string, any>>;
    assert.ok(all.length >= 10);
    for (const e of all) {
      assert.deepEqual(Object.keys(e).sort(), ['caps', 'label', 'model', 'price']);
      assert.ok(e.price.in > 0 && e.price.out > e.price.in, `${e.model} has a list price`);
      assert.ok(e.caps.context >= 128_000);
    }
    const anthropic = (await member.get('/api/catalog/models?provider=anthropic')).body as Array<{ model: string }>;
    assert.ok(anthropic.length >= 3 && anthropic.every((e) => e.model.startsWith('claude-')));
    assert.ok(
      anthropic.some((e) => e.model.includes('opus')) &&
        anthropic.some((e) => e.model.includes('sonnet')) &&
        anthropic.some((e) => e.model.includes('haiku')),
    );
    const openai = (await member.get('/api/catalog/models?provider=openai')).body as Array<{ model: string }>;
    assert.ok(
      openai.some((e) => e.model === 'gpt-5') &&
        openai.some((e) => e.model === 'gpt-4.1') &&
        openai.some((e) => /^o\d/.test(e.model)),
    );
    assert.equal((await member.get('/api/catalog/models?provider=gemini')).status, 400);
  });

  it('fills an Anthropic provider from the catalog', async () => {
    const created = await admin.post('/api/providers', { name: 'Claude', kind: 'anthropic', apiKey: 'sk-ant-test' });
    const catalog = (await admin.get('/api/catalog/models?provider=anthropic')).body as unknown[];
    assert.deepEqual(created.body.sync, { added: catalog.length, updated: 0, unlisted: 0 });
    const ms = await modelsOf(created.body.id);
    assert.ok(ms.every((m) => m.synced && m.followCatalog && m.price.in > 0));
  });
});

describe('providers: defaults, scripts and sealed keys', () => {
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

  it('answers settings with their defaults, and refuses bounds naming every field', async () => {
    const got = await memberToken.get('/api/settings');
    assert.equal(got.status, 200, got.text);
    assert.deepEqual(got.body, defaults);

    const low = await admin.patch('/api/settings', {
      retentionDays: 0,
      dailySpendLimitUsd: -0.01,
      defaultImage: 'i'.repeat(501),
      agentModelId: 'm'.repeat(101),
      notifySecret: 's'.repeat(101),
      defaultLimits: { timeoutSeconds: 29, maxTurns: 0, maxCostUsd: -1, cpus: 0.09, memoryMb: 63, pidsLimit: 15 },
    });
    assert.equal(low.status, 400);
    assert.equal(low.body.code, 'validation_failed');
    assert.deepEqual((low.body.fields as Array<{ field: string }>).map((f) => f.field).sort(), [
      'agentModelId',
      'dailySpendLimitUsd',
      'defaultImage',
      'defaultLimits.cpus',
      'defaultLimits.maxCostUsd',
      'defaultLimits.maxTurns',
      'defaultLimits.memoryMb',
      'defaultLimits.pidsLimit',
      'defaultLimits.timeoutSeconds',
      'notifySecret',
      'retentionDays',
    ]);
    const high = await admin.patch('/api/settings', {
      retentionDays: 3651,
      defaultLimits: {
        timeoutSeconds: 86401,
        maxTurns: 1001,
        cpus: 64.5,
        memoryMb: 262145,
        pidsLimit: 65537,
        extra: 1,
      },
    });
    assert.deepEqual((high.body.fields as Array<{ field: string }>).map((f) => f.field).sort(), [
      'defaultLimits.cpus',
      'defaultLimits.extra',
      'defaultLimits.maxTurns',
      'defaultLimits.memoryMb',
      'defaultLimits.pidsLimit',
      'defaultLimits.timeoutSeconds',
      'retentionDays',
    ]);
    // A list over its bound is refused on its own, before anything else is looked at (docs/design.md, validation cost).
    const long = await admin.patch('/api/settings', {
      retentionDays: 3651,
      notifyOn: ['run.failed', 'run.failed', 'run.failed', 'run.failed'],
    });
    assert.deepEqual(
      (long.body.fields as Array<{ field: string }>).map((f) => f.field),
      ['notifyOn'],
    );
    assert.equal((await admin.patch('/api/settings', { retentionDays: 1.5 })).body.fields[0].field, 'retentionDays');
    assert.deepEqual((await admin.get('/api/settings')).body, defaults, 'a refused patch changes nothing');

    const lowest = {
      timeoutSeconds: 30,
      maxTurns: 1,
      maxCostUsd: 0,
      cpus: 0.1,
      memoryMb: 64,
      pidsLimit: 16,
      diskMb: 64,
    };
    const highest = {
      timeoutSeconds: 86400,
      maxTurns: 1000,
      maxCostUsd: 1e6,
      cpus: 64,
      memoryMb: 262144,
      pidsLimit: 65536,
      diskMb: 1048576,
    };
    for (const [limits, retentionDays] of [
      [lowest, 1],
      [highest, 3650],
    ] as const) {
      const ok = await admin.patch('/api/settings', { defaultLimits: limits, retentionDays, dailySpendLimitUsd: 0 });
      assert.equal(ok.status, 200, ok.text);
      assert.deepEqual(ok.body.defaultLimits, limits);
      assert.equal(ok.body.retentionDays, retentionDays);
    }
    assert.deepEqual(
      (await admin.patch('/api/settings', { defaultLimits: defaults.defaultLimits, retentionDays: 90 })).body,
      defaults,
    );
  });

  it('refuses an unknown model id for every default, and disabling or removing the agent model', async () => {
    for (const key of ['agentModelId', 'utilityModelId', 'reflectionModelId']) {
      const res = await admin.patch('/api/settings', { [key]: 'no-such-model' });
      assert.equal(res.status, 400, key);
      assert.equal(res.body.code, 'validation_failed');
      assert.deepEqual(
        res.body.fields.map((f: { field: string }) => f.field),
        [key],
      );
    }
    assert.deepEqual((await admin.get('/api/settings')).body, defaults);

    const fake = (await admin.post('/api/providers', { name: 'Agent default', kind: 'fake' })).body.id as string;
    const fakeModel = (await modelsOf(fake))[0]!.id as string;
    const set = await admin.patch('/api/settings', { agentModelId: fakeModel });
    assert.equal(set.status, 200, set.text);
    assert.equal(set.body.agentModelId, fakeModel);
    const refused = await admin.patch(`/api/models/${fakeModel}`, { enabled: false });
    assert.equal(refused.status, 409);
    assert.equal(refused.body.code, 'conflict');
    assert.match(refused.body.message, /^fake-model is the workspace's agent model/);
    const all = await admin.request('PUT', `/api/providers/${fake}/models/enabled`, { enabled: false });
    assert.equal(all.status, 409);
    assert.match(all.body.message, /agent model/);
    assert.equal((await admin.delete(`/api/models/${fakeModel}`)).status, 409);
    assert.equal((await modelsOf(fake))[0]!.enabled, true);
    assert.equal(
      (await admin.patch(`/api/models/${fakeModel}`, { label: 'Renamed' })).status,
      200,
      'other edits of a default are fine',
    );

    assert.equal((await admin.patch('/api/settings', { agentModelId: null })).body.agentModelId, null);
    assert.equal(
      (await admin.patch(`/api/models/${fakeModel}`, { enabled: false })).body.enabled,
      false,
      'once unset it can be disabled',
    );
    const disabled = await admin.patch('/api/settings', { agentModelId: fakeModel });
    assert.equal(disabled.status, 400, 'and a disabled model cannot become the default');
    assert.equal(disabled.body.fields[0].field, 'agentModelId');
    assert.equal((await admin.delete(`/api/providers/${fake}`)).status, 204);
  });

  it("pushes scripted answers onto the fake provider's own queue", async () => {
    const fake = (await admin.post('/api/providers', { name: 'Queue', kind: 'fake' })).body.id as string;
    const other = (await admin.post('/api/providers', { name: 'Queue 2', kind: 'fake' })).body.id as string;
    const pushed = await admin.post(`/api/providers/${fake}/script`, {
      responses: [
        { text: 'a', usage: { input: 1, output: 2 } },
        { text: 'b', delayMs: 5 },
      ],
      reset: true,
    });
    assert.equal(pushed.status, 200, pushed.text);
    assert.deepEqual(pushed.body, { pending: 2 });
    assert.equal(fakeScripts.pending(fake), 2, 'the queue the fake provider takes its answers from');
    assert.equal(fakeScripts.shift(fake)?.text, 'a', 'in order');
    assert.deepEqual(
      (await admin.post(`/api/providers/${fake}/script`, { responses: [{ error: 'down', errorStatus: 503 }] })).body,
      { pending: 2 },
    );
    assert.equal(fakeScripts.pending(other), 0, 'another fake provider keeps its own queue');
    assert.deepEqual((await admin.post(`/api/providers/${fake}/script`, { responses: [], reset: true })).body, {
      pending: 0,
    });
    assert.equal(fakeScripts.pending(fake), 0);

    const anthropic = (
      await admin.post('/api/providers', { name: 'Not fake', kind: 'anthropic', apiKey: 'sk-ant-queue' })
    ).body.id as string;
    const refused = await admin.post(`/api/providers/${anthropic}/script`, { responses: [{ text: 'x' }] });
    assert.equal(refused.status, 422);
    assert.equal(refused.body.code, 'unsupported');
    assert.equal(fakeScripts.pending(anthropic), 0);
  });

  it('keeps every API key out of the data files, whatever the provider kind', async () => {
    const keys = ['sk-ant-sealed-5b8f2c91e0', 'sk-fake-sealed-0c7d4a13', 'sk-patched-sealed-9e2b7f'];
    const a = (await admin.post('/api/providers', { name: 'Sealed A', kind: 'anthropic', apiKey: keys[0] })).body
      .id as string;
    const f = (await admin.post('/api/providers', { name: 'Sealed F', kind: 'fake', apiKey: keys[1] })).body
      .id as string;
    assert.equal((await admin.patch(`/api/providers/${a}`, { apiKey: keys[2] })).body.hasApiKey, true);
    const anthropicModels = await modelsOf(a);
    assert.ok(
      anthropicModels.length > 0 && anthropicModels.every((m) => m.providerKind === 'anthropic' && m.price.in > 0),
      'catalog models with prices',
    );
    for (const id of [a, f]) {
      const got = await admin.get(`/api/providers/${id}`);
      assert.equal(got.body.hasApiKey, true);
      assert.ok(!keys.some((k) => got.text.includes(k)));
    }
    const files = scanData(t.dataDir);
    assert.ok(
      files.some((b) => b.includes('Sealed F')),
      'the scan sees what the stores wrote',
    );
    for (const k of keys) assert.ok(!files.some((b) => b.includes(k)), `${k.slice(0, 10)}… is in no data file`);
  });
});
