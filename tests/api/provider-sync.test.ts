import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { adminSession, Client, startTestServer, type TestServer } from './harness.js';

/** Model sync against an OpenAI-compatible server's real GET /models, and against the catalog. */
let t: TestServer;
let admin: Client;
let server: Server;
let listed: Array<Record<string, unknown>> = [];
let failing = false;
let auth: string | undefined;

before(async () => {
  t = await startTestServer({ SVC_ROLES: 'api,projector' });
  admin = await adminSession(t);
  server = createServer((req, res) => {
    auth = req.headers.authorization;
    if (failing) return void res.writeHead(500).end('boom');
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ object: 'list', data: listed }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
});
after(async () => {
  server.close();
  await t?.stop();
});

const models = async (providerId: string) =>
  ((await admin.get('/api/models?pageSize=100')).body.items as Array<Record<string, any>>).filter(
    (m) => m.providerId === providerId,
  );

describe('provider sync', () => {
  it('adds, unlists, re-lists and records an unreadable source without changing anything', async () => {
    listed = [
      { id: 'llama-3-70b', object: 'model' },
      { id: 'gpt-4.1', object: 'model' },
    ];
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
    const created = await admin.post('/api/providers', {
      name: 'Local',
      kind: 'openai',
      baseUrl: base,
      apiKey: 'sk-local',
    });
    assert.equal(created.status, 201, created.text);
    assert.deepEqual(created.body.sync, { added: 2, updated: 0, unlisted: 0 });
    assert.equal(auth, 'Bearer sk-local');
    let ms = await models(created.body.id);
    assert.deepEqual(ms.map((m) => m.model).sort(), ['gpt-4.1', 'llama-3-70b']);
    assert.equal(ms.find((m) => m.model === 'llama-3-70b')!.contextWindow, 32_768, 'unknown context falls back');
    assert.equal(
      ms.find((m) => m.model === 'gpt-4.1')!.label,
      'GPT-4.1',
      'a model the catalog knows gets its metadata',
    );

    listed = [{ id: 'gpt-4.1' }];
    const second = await admin.post(`/api/providers/${created.body.id}/sync`);
    assert.deepEqual(second.body, { added: 0, updated: 0, unlisted: 1 });
    ms = await models(created.body.id);
    assert.ok(ms.find((m) => m.model === 'llama-3-70b')!.unlistedAt > 0, 'never deleted, only unlisted');

    listed = [{ id: 'gpt-4.1' }, { id: 'llama-3-70b' }];
    assert.deepEqual((await admin.post(`/api/providers/${created.body.id}/sync`)).body, {
      added: 0,
      updated: 0,
      unlisted: 0,
    });
    assert.equal(
      (await models(created.body.id)).find((m) => m.model === 'llama-3-70b')!.unlistedAt,
      null,
      'a returning model is re-listed',
    );

    failing = true;
    const broken = await admin.post(`/api/providers/${created.body.id}/sync`);
    assert.equal(broken.status, 200);
    assert.match(broken.body.error, /answered 500/);
    assert.equal((await models(created.body.id)).length, 2);
    failing = false;
  });

  it('fills an Anthropic provider from the built-in catalog, with prices', async () => {
    const created = await admin.post('/api/providers', { name: 'Claude', kind: 'anthropic', apiKey: 'sk-ant-x' });
    assert.ok(created.body.sync.added >= 3);
    const ms = await models(created.body.id);
    assert.ok(ms.every((m) => m.providerKind === 'anthropic' && m.synced && m.followCatalog && m.price.in > 0));
    assert.deepEqual((await admin.post(`/api/providers/${created.body.id}/sync`)).body, {
      added: 0,
      updated: 0,
      unlisted: 0,
    });
    const catalog = (await admin.get('/api/catalog/models?provider=openai')).body as Array<{ model: string }>;
    assert.ok(catalog.some((c) => c.model === 'gpt-4.1'));
  });
});
