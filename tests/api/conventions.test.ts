import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { adminSession, startTestServer, type Client, type TestServer } from './harness.js';

let t: TestServer;
let admin: Client;

before(async () => {
  t = await startTestServer();
  admin = await adminSession(t);
});
after(async () => t.stop());

describe('API conventions', () => {
  it('answers unknown routes with 404 not_found in the error format', async () => {
    const res = await admin.get('/api/nothing-here');
    assert.equal(res.status, 404);
    assert.equal(res.body.code, 'not_found');
    assert.equal(typeof res.body.message, 'string');
    assert.equal(res.body.requestId, res.headers.get('x-request-id'));
  });

  it('answers broken JSON with 400 invalid_request_body', async () => {
    const res = await admin.request('POST', '/api/jobs', '{"name": "x",');
    assert.equal(res.status, 400);
    assert.equal(res.body.code, 'invalid_request_body');
    const notJson = await admin.request('POST', '/api/jobs', 'name=x', { 'content-type': 'text/plain' });
    assert.equal(notJson.status, 400);
    assert.equal(notJson.body.code, 'invalid_request_body');
  });

  it('puts X-Request-ID on every answer and echoes a client value of up to 64 characters', async () => {
    const own = 'my-request-0001';
    const ok = await admin.get('/api/system/info', { 'x-request-id': own });
    assert.equal(ok.status, 200);
    assert.equal(ok.headers.get('x-request-id'), own);
    const err = await admin.get('/api/jobs/nope', { 'x-request-id': own });
    assert.equal(err.body.requestId, own);
    const long = 'x'.repeat(65);
    const replaced = await admin.get('/api/system/info', { 'x-request-id': long });
    const id = replaced.headers.get('x-request-id');
    assert.ok(id && id !== long && id.length <= 64, 'a longer value is replaced by a generated one');
    const generated = await admin.get('/api/system/info');
    assert.match(generated.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
    const anonymous = await fetch(`${t.url}/api/jobs`);
    assert.ok(anonymous.headers.get('x-request-id'));
  });

  it('sends security headers', async () => {
    const res = await admin.get('/api/system/info');
    assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
    assert.equal(res.headers.get('x-frame-options'), 'DENY');
    assert.equal(res.headers.get('referrer-policy'), 'same-origin');
  });

  it('reports version, database and no sandbox backend yet', async () => {
    const res = await admin.get('/api/system/info');
    assert.equal(res.body.database, 'sqlite');
    assert.match(res.body.version, /^\d+\.\d+\.\d+/);
    assert.equal(res.body.allowPrivateNetworkTargets, false);
  });

  it('tells who is signed in', async () => {
    const me = await admin.get('/api/users/me');
    assert.equal(me.status, 200);
    assert.equal(me.body.email, 'admin@example.com');
    assert.equal(me.body.isAdmin, true);
    assert.equal(me.body.viaToken, false);
    assert.equal(me.body.workspaceId, '00000000-0000-7000-8000-000000000001');
    assert.equal(me.body.workspace.name, 'Default');
    assert.equal(me.body.workspace.role, 'owner');
  });
});
