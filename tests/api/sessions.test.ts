import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { adminSession, Client, createToken, startTestServer, userSession, type TestServer } from './harness.js';

/**
 * Revocable sessions (docs/design.md, "Identity"): the cookie names a session row, and logging out, a deactivation
 * or a removal ends it at once, so a copy of the old cookie answers 401 on the very next request.
 */
let t: TestServer;
let admin: Client;

before(async () => {
  t = await startTestServer({ SVC_WORKSPACES_ENABLED: 'true' });
  admin = await adminSession(t);
});
after(async () => t.stop());

async function warm(client: Client): Promise<void> {
  // Twice: the second request is answered from the cached session check, the path a revocation must also close.
  for (let i = 0; i < 2; i++) assert.equal((await client.get('/api/users/me')).status, 200);
}

describe('sessions', () => {
  it('answers 401 to a copy of the cookie right after logout', async () => {
    const { client } = await userSession(t, admin, 'logout@example.com');
    await warm(client);
    const copy = new Client(t.url, client.credential);
    assert.equal((await client.post('/api/auth/logout')).status, 204);
    const res = await copy.get('/api/users/me');
    assert.equal(res.status, 401);
    assert.equal(res.body.code, 'not_signed_in');
    assert.equal((await copy.get('/api/jobs')).status, 401);
  });

  it('signs a deactivated user out everywhere at once, tokens too, and lets them back after reactivation', async () => {
    const one = await userSession(t, admin, 'deactivated@example.com');
    const token = await createToken(one.client);
    await warm(one.client);
    assert.equal((await token.client.get('/api/jobs')).status, 200);
    const res = await admin.patch(`/api/admin/users/${one.userId}`, { deactivated: true });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.deactivated, true);
    assert.equal((await one.client.get('/api/users/me')).status, 401);
    assert.equal((await token.client.get('/api/jobs')).status, 401);
    assert.equal((await admin.patch(`/api/admin/users/${one.userId}`, { deactivated: false })).status, 200);
    // The old session stays ended; the token works again with its creator.
    assert.equal((await one.client.get('/api/users/me')).status, 401);
    assert.equal((await token.client.get('/api/jobs')).status, 200);
  });

  it('ends the session of a member removed from the workspace, and their tokens there', async () => {
    const { client, userId } = await userSession(t, admin, 'removed@example.com');
    // The member lands in their own workspace; the admin invites them into Default by email.
    const invite = await admin.post('/api/workspace/invites', { email: 'removed@example.com', role: 'member' });
    assert.equal(invite.status, 201, invite.text);
    const accepted = await client.post('/api/invites/accept', { token: 'nope' });
    assert.equal(accepted.status, 401);
    const again = await userSessionAgain('removed@example.com');
    const me = await again.get('/api/users/me');
    assert.equal(me.body.workspace.name, 'Default', 'the verified email invite was accepted at sign-in');
    const token = await createToken(again);
    await warm(again);
    assert.equal((await admin.delete(`/api/workspace/members/${userId}`)).status, 204);
    assert.equal((await again.get('/api/users/me')).status, 401);
    assert.equal((await token.client.get('/api/jobs')).status, 401);
    assert.equal((await client.get('/api/users/me')).status, 200, 'the session in their own workspace stands');
  });

  it('answers the provider of the session as loginProvider, with the whole me shape', async () => {
    const me = await admin.get('/api/users/me');
    assert.equal(me.body.loginProvider, 'link');
    assert.equal(me.body.workspacesEnabled, true);
    assert.equal(me.body.workspace.usageUnit, 'price');
    const token = await createToken(admin);
    const viaToken = await token.client.get('/api/users/me');
    assert.equal(viaToken.body.viaToken, true);
    assert.equal(viaToken.body.loginProvider, undefined);
  });

  it('refuses a session cookie whose row was never written (signed, but forged sid)', async () => {
    const keys = t.server.services.identity;
    const claims = keys.decodeSession(/svc_session=(.*)/.exec((admin.credential as { cookie: string }).cookie)![1]!)!;
    const forged = keys.encodeSession({ ...claims, sid: 'never-started' });
    const res = await new Client(t.url, { cookie: `svc_session=${forged}` }).get('/api/users/me');
    assert.equal(res.status, 401);
  });
});

async function userSessionAgain(email: string): Promise<Client> {
  return (await userSession(t, admin, email)).client;
}
