import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { waitFor } from '../wait.js';
import {
  adminSession,
  Client,
  createToken,
  startTestServer,
  userSession,
  useSignInLink,
  type TestServer,
} from './harness.js';

let t: TestServer;
let admin: Client;

before(async () => {
  t = await startTestServer();
  admin = await adminSession(t);
});
after(async () => t.stop());

describe('sign-in links and sessions', () => {
  it('signs in once: a second use of the same link is refused', async () => {
    const path = await t.server.services.identity.issueSignInLink('once@example.com');
    const cookie = await useSignInLink(t.url + path);
    assert.match(cookie, /^svc_session=/);
    const again = await fetch(t.url + path, { redirect: 'manual' });
    // A browser opened it: the refusal lands on the login page, not as JSON.
    assert.equal(again.status, 302);
    assert.equal(again.headers.get('location'), '/login?error=invalid_link');
    assert.equal(again.headers.get('set-cookie'), null);
  });

  it('sets an HttpOnly, SameSite cookie and refuses a tampered one', async () => {
    const path = await t.server.services.identity.issueSignInLink('cookie@example.com');
    const res = await fetch(t.url + path, { redirect: 'manual' });
    const setCookie = res.headers.get('set-cookie') ?? '';
    assert.match(setCookie, /HttpOnly/);
    assert.match(setCookie, /SameSite=Lax/);
    assert.match(setCookie, /Path=\//);
    const value = /svc_session=([^;]+)/.exec(setCookie)![1]!;
    const [payload, sig] = value.split('.');
    const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString());
    const forged = Buffer.from(JSON.stringify({ ...claims, uid: 'someone-else' })).toString('base64url');
    const tampered = new Client(t.url, { cookie: `svc_session=${forged}.${sig}` });
    assert.equal((await tampered.get('/api/jobs')).status, 401);
    assert.equal((await tampered.get('/api/jobs')).body.code, 'not_signed_in');
  });

  it('refuses malformed and unknown links', async () => {
    for (const token of ['nope', '00000000-0000-7000-8000-000000000000.secret']) {
      const res = await fetch(`${t.url}/api/auth/link/${token}`, { redirect: 'manual' });
      assert.equal(res.status, 302, token);
      assert.equal(res.headers.get('location'), '/login?error=invalid_link');
    }
  });

  it('makes later sign-ins members of the default workspace; the first one owns it', async () => {
    const { client } = await userSession(t, admin, 'member@example.com');
    const me = await client.get('/api/users/me');
    assert.equal(me.body.isAdmin, false);
    assert.equal(me.body.workspace.role, 'member');
    const members = await client.get('/api/workspace/members?pageSize=100');
    const roles = Object.fromEntries(members.body.items.map((m: { email: string; role: string }) => [m.email, m.role]));
    assert.equal(roles['admin@example.com'], 'owner');
    assert.equal(roles['member@example.com'], 'member');
  });

  it('logs out by ending the session and clearing the cookie', async () => {
    const { client } = await userSession(t, admin, 'leaving@example.com');
    const res = await client.post('/api/auth/logout');
    assert.equal(res.status, 204);
    assert.match(res.headers.get('set-cookie') ?? '', /svc_session=;.*Max-Age=0/);
    assert.equal((await client.get('/api/users/me')).status, 401, 'the old cookie no longer works');
  });
});

describe('workspaces disabled (the default)', () => {
  it('keeps everyone in Default: no removal (deactivate instead), no leaving, no new workspaces', async () => {
    const { client, userId } = await userSession(t, admin, 'stays@example.com');
    const m = await client.get('/api/users/me');
    assert.equal(m.body.workspacesEnabled, false);
    assert.equal(m.body.workspace.name, 'Default');
    const removal = await admin.delete(`/api/workspace/members/${userId}`);
    assert.equal(removal.status, 403);
    assert.match(removal.body.message, /deactivate/);
    assert.equal((await client.post('/api/workspace/leave')).status, 403);
    assert.equal((await client.post('/api/workspaces', { name: 'Mine' })).status, 403);
    assert.equal((await client.get('/api/users/me')).status, 200, 'still a member');
  });
});

describe('API tokens', () => {
  it('creates a token shown once, stored hashed, usable as Bearer', async () => {
    const res = await admin.post('/api/tokens', { name: 'ci' });
    assert.equal(res.status, 201);
    assert.match(res.body.token, /^svc_[A-Za-z0-9_-]{40,}$/);
    assert.deepEqual(Object.keys(res.body.apiToken).sort(), [
      'createdAt',
      'createdBy',
      'expiresAt',
      'id',
      'lastUsedAt',
      'name',
    ]);
    assert.equal(res.body.apiToken.createdBy, 'admin@example.com');
    assert.equal(res.body.apiToken.expiresAt, null);
    const list = await admin.get('/api/tokens?pageSize=100');
    assert.ok(!list.text.includes(res.body.token), 'the token never comes back');
    const api = new Client(t.url, { token: res.body.token });
    const me = await api.get('/api/users/me');
    assert.equal(me.status, 200);
    assert.equal(me.body.viaToken, true);
  });

  it('keeps lastUsedAt to the minute', async () => {
    const { client, id } = await createToken(admin, 'used');
    await client.get('/api/jobs');
    await client.get('/api/jobs');
    const list = await admin.get('/api/tokens?pageSize=100');
    const entry = list.body.items.find((x: { id: string }) => x.id === id);
    assert.ok(entry.lastUsedAt !== null, 'lastUsedAt is set after use');
    assert.equal(entry.lastUsedAt % 60_000, 0);
    assert.ok(Math.abs(Date.now() - entry.lastUsedAt) < 120_000);
  });

  it('refuses token management with a token (403) and requests without credentials (401)', async () => {
    const { client, id } = await createToken(admin, 'no-manage');
    const create = await client.post('/api/tokens', { name: 'x' });
    assert.equal(create.status, 403);
    assert.equal(create.body.code, 'forbidden');
    assert.match(create.body.message, /signed in/);
    assert.equal((await client.delete(`/api/tokens/${id}`)).status, 403);
    const none = await new Client(t.url).get('/api/jobs');
    assert.equal(none.status, 401);
    assert.equal(none.body.code, 'not_signed_in');
  });

  it('answers 401 invalid_token for deleted, expired, wrong and malformed tokens', async () => {
    const { client, id } = await createToken(admin, 'to delete');
    assert.equal((await client.get('/api/jobs')).status, 200);
    assert.equal((await admin.delete(`/api/tokens/${id}`)).status, 204);
    const deleted = await client.get('/api/jobs');
    assert.equal(deleted.status, 401);
    assert.equal(deleted.body.code, 'invalid_token');
    const soon = Date.now() + 1500;
    const expiring = await createToken(admin, 'short', soon);
    assert.equal((await expiring.client.get('/api/jobs')).status, 200);
    const refused = await waitFor(
      'the short token to expire',
      async () => {
        const res = await expiring.client.get('/api/jobs');
        return res.status === 401 && res;
      },
      { intervalMs: 50 },
    );
    assert.ok(Date.now() >= soon, 'not refused before it expired');
    assert.equal(refused.body.code, 'invalid_token');
    for (const bad of ['svc_wrong', 'not-even-prefixed']) {
      const res = await new Client(t.url, { token: bad }).get('/api/jobs');
      assert.equal(res.status, 401);
      assert.equal(res.body.code, 'invalid_token');
    }
    const garbage = await new Client(t.url).get('/api/jobs', { authorization: 'Basic abc' });
    assert.equal(garbage.body.code, 'invalid_token');
  });

  it('validates names and expiry', async () => {
    const past = await admin.post('/api/tokens', { name: 'x', expiresAt: Date.now() - 1000 });
    assert.equal(past.status, 400);
    assert.deepEqual(
      past.body.fields.map((f: { field: string }) => f.field),
      ['expiresAt'],
    );
    const blank = await admin.post('/api/tokens', { name: '   ' });
    assert.deepEqual(
      blank.body.fields.map((f: { field: string }) => f.field),
      ['name'],
    );
    const long = await admin.post('/api/tokens', { name: 'x'.repeat(101) });
    assert.deepEqual(
      long.body.fields.map((f: { field: string }) => f.field),
      ['name'],
    );
  });

  it('shows members their own tokens and admins every token; a token follows its creator role', async () => {
    const member = await userSession(t, admin, 'tokens-member@example.com');
    const mine = await createToken(member.client, 'member token');
    const adminToken = await createToken(admin, 'admin token');
    const seen = await mine.client.get('/api/tokens?pageSize=100');
    assert.ok(seen.body.items.every((x: { createdBy: string }) => x.createdBy === 'tokens-member@example.com'));
    assert.ok(seen.body.items.some((x: { id: string }) => x.id === mine.id));
    assert.equal(
      (await member.client.delete(`/api/tokens/${adminToken.id}`)).status,
      404,
      'a member cannot touch an admin token',
    );
    const all = await admin.get('/api/tokens?pageSize=100');
    assert.ok(all.body.items.some((x: { id: string }) => x.id === mine.id));
    // Promote the member: the same token now acts as an admin and sees every token.
    const promoted = await admin.patch(`/api/workspace/members/${member.userId}`, { role: 'admin' });
    assert.equal(promoted.status, 200, promoted.text);
    assert.equal(promoted.body.role, 'admin');
    const afterPromotion = await mine.client.get('/api/tokens?pageSize=100');
    assert.ok(afterPromotion.body.items.some((x: { id: string }) => x.id === adminToken.id));
    assert.equal((await mine.client.get('/api/users/me')).body.workspace.role, 'admin');
  });
});
