import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { systemContext } from '../../app/commands.js';
import type { ExternalIdentity } from '../../app/identity.js';
import { defaultWorkspaceId } from '../../domain/workspace.js';
import { adminSession, Client, createToken, startTestServer, userSession, type TestServer } from './harness.js';

/**
 * Workspaces enabled (docs/design.md, "Identity"): the sign-in resolution order, the workspace routes, members and
 * invites, one rule at a time. No runner: runs stay queued, which is what the deletion rule needs.
 */
let t: TestServer;
let admin: Client;

before(async () => {
  t = await startTestServer({ SVC_WORKSPACES_ENABLED: 'true', SVC_ROLES: 'api,projector' });
  admin = await adminSession(t);
});
after(async () => t.stop());

const me = async (c: Client) => (await c.get('/api/users/me')).body;

/** A sign-in through the identity service, as a provider callback makes it (the path an invite link starts). */
async function providerSignIn(
  subject: string,
  profile: { email?: string; name?: string },
  opts: { inviteToken?: string; emailVerified?: boolean } = {},
): Promise<Client> {
  const identity: ExternalIdentity = {
    issuer: 'https://idp.example',
    subject,
    provider: 'corp',
    isAdmin: false,
    profile: { email: profile.email ?? null, name: profile.name ?? null, picture: null },
    emailVerified: opts.emailVerified ?? false,
  };
  const ids = t.server.services.identity;
  const claims = await ids.signIn(identity, systemContext, { inviteToken: opts.inviteToken });
  return new Client(t.url, { cookie: `svc_session=${ids.encodeSession(claims)}` });
}

const tokenOf = (url: string) => url.slice(url.indexOf('/invite/') + '/invite/'.length);

describe('sign-in resolution', () => {
  it('lets the first sign-in claim the ownerless Default', async () => {
    const m = await me(admin);
    assert.equal(m.workspace.id, defaultWorkspaceId);
    assert.equal(m.workspace.role, 'owner');
  });

  it('gives everyone else a personal workspace named after them, as its owner', async () => {
    const named = await me(await providerSignIn('named', { name: 'Ada Lovelace', email: 'ada@example.com' }));
    assert.equal(named.workspace.name, "Ada Lovelace's workspace");
    assert.equal(named.workspace.role, 'owner');
    const byEmail = await me((await userSession(t, admin, 'grace@example.com')).client);
    assert.equal(byEmail.workspace.name, "grace's workspace");
    const nobody = await me(await providerSignIn('anonymous', {}));
    assert.equal(nobody.workspace.name, 'Personal workspace');
    const long = await me(await providerSignIn('long', { name: 'x'.repeat(300) }));
    assert.equal(long.workspace.name.length, 100);
  });

  it('serializes concurrent sign-ins of one user: one personal workspace, not two', async () => {
    const clients = await Promise.all([1, 2, 3].map(() => providerSignIn('racer', { name: 'Racer' })));
    const lists = await Promise.all(clients.map((c) => c.get('/api/workspaces')));
    for (const l of lists) assert.equal(l.body.items.length, 1, l.text);
  });

  it('accepts invites to a verified email at sign-in and lands in the workspace just joined', async () => {
    const invite = await admin.post('/api/workspace/invites', { email: 'Invited@Example.com', role: 'admin' });
    assert.equal(invite.status, 201, invite.text);
    assert.equal(invite.body.url, undefined, 'an email invite has no link');
    const c = (await userSession(t, admin, 'invited@example.com')).client;
    const m = await me(c);
    assert.equal(m.workspace.id, defaultWorkspaceId);
    assert.equal(m.workspace.role, 'admin');
    const pending = await admin.get('/api/workspace/invites');
    assert.ok(!pending.body.items.some((i: { id: string }) => i.id === invite.body.invite.id), 'consumed');
  });

  it('consumes a verified-email invite even for someone already a member', async () => {
    await userSession(t, admin, 'twice@example.com');
    await admin.post('/api/workspace/invites', { email: 'twice@example.com', role: 'member' });
    await admin.post('/api/workspace/invites', { email: 'twice@example.com', role: 'member' });
    const c = (await userSession(t, admin, 'twice@example.com')).client;
    assert.equal((await me(c)).workspace.id, defaultWorkspaceId);
    const pending = await admin.get('/api/workspace/invites?pageSize=100');
    assert.ok(!pending.body.items.some((i: { email: string }) => i.email === 'twice@example.com'));
  });

  it('does not accept an email invite for an unverified address', async () => {
    await admin.post('/api/workspace/invites', { email: 'unverified@example.com', role: 'member' });
    const c = await providerSignIn('unverified', { email: 'unverified@example.com' }, { emailVerified: false });
    assert.notEqual((await me(c)).workspace.id, defaultWorkspaceId);
    const pending = await admin.get('/api/workspace/invites?pageSize=100');
    assert.ok(pending.body.items.some((i: { email: string }) => i.email === 'unverified@example.com'));
  });

  it('lets a newcomer from an invite link accept it at sign-in; anyone else confirms on the invite page', async () => {
    const link = await admin.post('/api/workspace/invites', { role: 'member' });
    assert.match(link.body.url, /\/invite\/[A-Za-z0-9_-]+$/);
    const newcomer = await providerSignIn('newcomer', { name: 'New' }, { inviteToken: tokenOf(link.body.url) });
    assert.equal((await me(newcomer)).workspace.id, defaultWorkspaceId);
    assert.equal((await newcomer.get('/api/workspaces')).body.items.length, 1, 'no personal workspace as well');

    const link2 = await admin.post('/api/workspace/invites', { role: 'member' });
    await providerSignIn('old-hand', { name: 'Old' });
    const oldHand = await providerSignIn('old-hand', { name: 'Old' }, { inviteToken: tokenOf(link2.body.url) });
    assert.notEqual((await me(oldHand)).workspace.id, defaultWorkspaceId, 'not accepted without a confirmation');
    const lookup = await oldHand.post('/api/invites/lookup', { token: tokenOf(link2.body.url) });
    assert.equal(lookup.status, 200, lookup.text);
    assert.deepEqual(Object.keys(lookup.body).sort(), [
      'alreadyMember',
      'expired',
      'expiresAt',
      'invitedBy',
      'role',
      'workspaceName',
    ]);
    assert.equal(lookup.body.workspaceName, 'Default');
    assert.equal(lookup.body.alreadyMember, false);
    assert.equal(lookup.body.expired, false);
    assert.ok(Math.abs(lookup.body.expiresAt - (Date.now() + 7 * 86_400_000)) < 60_000, 'seven days by default');
    // A member opening the link (its creator checking it, say) leaves it for the person it was for.
    assert.equal((await newcomer.post('/api/invites/accept', { token: tokenOf(link2.body.url) })).status, 200);
    const accepted = await oldHand.post('/api/invites/accept', { token: tokenOf(link2.body.url) });
    assert.equal(accepted.status, 200, accepted.text);
    assert.equal(accepted.body.workspaceId, defaultWorkspaceId);
    const cookie = /svc_session=([^;]+)/.exec(accepted.headers.get('set-cookie') ?? '')![1]!;
    const switched = new Client(t.url, { cookie: `svc_session=${cookie}` });
    assert.equal((await me(switched)).workspace.id, defaultWorkspaceId);
    // Single use: the same link does not bring in a second person.
    const third = await providerSignIn('third', { name: 'Third' });
    assert.equal((await third.post('/api/invites/accept', { token: tokenOf(link2.body.url) })).status, 401);
    assert.equal((await third.post('/api/invites/lookup', { token: tokenOf(link2.body.url) })).status, 404);
  });

  it('lands on the last used workspace, else the oldest', async () => {
    const first = await providerSignIn('lander', { name: 'Lander' });
    const own = (await me(first)).workspace.id;
    const link = await admin.post('/api/workspace/invites', { role: 'member' });
    assert.equal((await first.post('/api/invites/accept', { token: tokenOf(link.body.url) })).status, 200);
    // The accept switched the session to Default: the next sign-in lands there.
    assert.equal((await me(await providerSignIn('lander', { name: 'Lander' }))).workspace.id, defaultWorkspaceId);
    const again = await providerSignIn('lander', { name: 'Lander' });
    assert.equal((await again.post(`/api/workspaces/${own}/switch`)).status, 200);
    assert.equal((await me(await providerSignIn('lander', { name: 'Lander' }))).workspace.id, own);
  });
});

describe('workspace routes', () => {
  it('creates, lists and switches workspaces with the same session and expiry', async () => {
    const { client } = await userSession(t, admin, 'switcher@example.com');
    const created = await client.post('/api/workspaces', { name: '  Team  ' });
    assert.equal(created.status, 201, created.text);
    const list = await client.get('/api/workspaces');
    const names = list.body.items.map((w: { name: string }) => w.name);
    assert.deepEqual(names, ["switcher's workspace", 'Team']);
    const before = /svc_session=([^;]+)/.exec((client.credential as { cookie: string }).cookie)![1]!;
    const res = await client.post(`/api/workspaces/${created.body.workspaceId}/switch`);
    assert.equal(res.status, 200);
    const after = /svc_session=([^;]+)/.exec(res.headers.get('set-cookie') ?? '')![1]!;
    const ids = t.server.services.identity;
    const [a, b] = [ids.decodeSession(before)!, ids.decodeSession(after)!];
    assert.equal(b.sid, a.sid);
    assert.equal(b.exp, a.exp);
    assert.equal(b.wid, created.body.workspaceId);
    const moved = new Client(t.url, { cookie: `svc_session=${after}` });
    assert.equal((await moved.get('/api/workspace')).body.name, 'Team');
    assert.equal((await moved.get('/api/workspace')).body.role, 'owner');
    // The old cookie is the same session: still valid, still in the first workspace.
    assert.equal((await me(client)).workspace.name, "switcher's workspace");
    for (const bad of [defaultWorkspaceId, '00000000-0000-7000-8000-00000000beef']) {
      const refused = await client.post(`/api/workspaces/${bad}/switch`);
      assert.equal(refused.status, 404, `a workspace the caller is not in: ${bad}`);
    }
    assert.equal((await client.post('/api/workspaces', { name: ' ' })).status, 400);
    assert.equal((await client.post('/api/workspaces', { name: 'x'.repeat(101) })).status, 400);
  });

  it('lets an instance admin switch into any workspace with owner rights', async () => {
    const { client } = await userSession(t, admin, 'visited@example.com');
    const ws = (await me(client)).workspace.id;
    const res = await admin.post(`/api/workspaces/${ws}/switch`);
    assert.equal(res.status, 200);
    const cookie = /svc_session=([^;]+)/.exec(res.headers.get('set-cookie') ?? '')![1]!;
    const there = new Client(t.url, { cookie: `svc_session=${cookie}` });
    assert.equal((await me(there)).workspace.role, 'owner');
  });

  it('renames for admins only', async () => {
    const { client, userId } = await userSession(t, admin, 'renamer@example.com');
    const ws = await me(client);
    assert.equal((await client.patch('/api/workspace', { name: 'Renamed' })).body.name, 'Renamed');
    const link = await client.post('/api/workspace/invites', { role: 'member' });
    const joiner = await providerSignIn('renamer-member', { name: 'J' });
    await joiner.post('/api/invites/accept', { token: tokenOf(link.body.url) });
    const inThere = await providerSignIn('renamer-member', { name: 'J' });
    assert.equal((await me(inThere)).workspace.id, ws.workspace.id);
    const refused = await inThere.patch('/api/workspace', { name: 'Mine now' });
    assert.equal(refused.status, 403);
    assert.equal((await client.get('/api/workspace')).body.name, 'Renamed');
    void userId;
  });

  it("transfers ownership; the owner cannot leave before, the old owner can after; an admin cannot change the owner's role", async () => {
    const owner = await userSession(t, admin, 'owner@example.com');
    const link = await owner.client.post('/api/workspace/invites', { role: 'admin' });
    const heir = await providerSignIn('heir', { name: 'Heir' });
    const accepted = await heir.post('/api/invites/accept', { token: tokenOf(link.body.url) });
    const heirThere = new Client(t.url, {
      cookie: `svc_session=${/svc_session=([^;]+)/.exec(accepted.headers.get('set-cookie') ?? '')![1]!}`,
    });
    const heirId = (await me(heirThere)).id;
    const demote = await heirThere.patch(`/api/workspace/members/${owner.userId}`, { role: 'member' });
    assert.equal(demote.status, 403);
    const leave = await owner.client.post('/api/workspace/leave');
    assert.equal(leave.status, 409);
    assert.equal((await heirThere.post('/api/workspace/transfer', { userId: heirId })).status, 403, 'owner only');
    assert.equal((await owner.client.post('/api/workspace/transfer', { userId: 'nobody' })).status, 404);
    assert.equal((await owner.client.post('/api/workspace/transfer', { userId: heirId })).status, 204);
    const members = await heirThere.get('/api/workspace/members');
    const roles = Object.fromEntries(
      members.body.items.map((m: { userId: string; role: string }) => [m.userId, m.role]),
    );
    assert.equal(roles[heirId], 'owner');
    assert.equal(roles[owner.userId], 'admin');
    const left = await owner.client.post('/api/workspace/leave');
    assert.equal(left.status, 200, left.text);
    assert.notEqual(left.body.workspaceId, (await me(heirThere)).workspace.id);
    const gone = await heirThere.get('/api/workspace/members');
    assert.ok(!gone.body.items.some((m: { userId: string }) => m.userId === owner.userId));
  });

  it('refuses to delete a workspace with active runs, then deletes everything of it', async () => {
    const { client } = await userSession(t, admin, 'deleter@example.com');
    const token = await createToken(client);
    const job = await client.post('/api/jobs', { name: 'Doomed', instruction: 'x' });
    assert.equal(job.status, 201, job.text);
    const run = await client.post(`/api/jobs/${job.body.id}/runs`, {});
    assert.equal(run.status, 201, run.text);
    const refused = await client.delete('/api/workspace');
    assert.equal(refused.status, 409);
    assert.equal((await client.post(`/api/runs/${run.body.runId}/cancel`)).status, 200);
    const ws = (await me(client)).workspace.id;
    const deleted = await client.delete('/api/workspace');
    assert.equal(deleted.status, 200, deleted.text);
    assert.notEqual(deleted.body.workspaceId, ws, 'the session moved to a new personal workspace');
    const cookie = /svc_session=([^;]+)/.exec(deleted.headers.get('set-cookie') ?? '')![1]!;
    const moved = await me(new Client(t.url, { cookie: `svc_session=${cookie}` }));
    assert.equal(moved.workspace.id, deleted.body.workspaceId);
    assert.equal(moved.workspace.role, 'owner');
    assert.equal((await token.client.get('/api/jobs')).status, 401, "the workspace's tokens died with it");
    assert.equal((await admin.post(`/api/workspaces/${ws}/switch`)).status, 404);
    const listed = await admin.get('/api/admin/workspaces?pageSize=100');
    assert.ok(!listed.body.items.some((w: { id: string }) => w.id === ws));
    const docs = t.server.services.stores.docs;
    for (const c of ['jobs', 'runs', 'members', 'api_tokens'])
      assert.equal(await docs.collection(c).count({ workspaceId: ws }), 0, `${c} purged`);
  });
});

describe('members and invites', () => {
  it('shows a link once and keeps only its hash', async () => {
    const link = await admin.post('/api/workspace/invites', { role: 'member', expiresInDays: 1 });
    assert.equal(link.status, 201);
    const token = tokenOf(link.body.url);
    const list = await admin.get('/api/workspace/invites?pageSize=100');
    assert.ok(!list.text.includes(token));
    const stored = await t.server.services.stores.docs.collection('invites').findOne({ _id: link.body.invite.id });
    assert.ok(stored && !JSON.stringify(stored).includes(token));
    assert.ok(Math.abs(link.body.invite.expiresAt - (Date.now() + 86_400_000)) < 60_000);
    for (const bad of [{ role: 'owner' }, { role: 'member', expiresInDays: 3 }, { role: 'member', email: 'x' }])
      assert.equal((await admin.post('/api/workspace/invites', bad)).status, 400, JSON.stringify(bad));
    assert.equal((await admin.delete(`/api/workspace/invites/${link.body.invite.id}`)).status, 204);
    const other = await providerSignIn('late', { name: 'Late' });
    assert.equal((await other.post('/api/invites/accept', { token })).status, 401, 'revoked');
  });

  it('revokes the invites of a creator who is demoted, removed or deactivated, or who leaves', async () => {
    const cases: Array<[string, (userId: string, c: Client) => Promise<unknown>]> = [
      ['demoted', (id) => admin.patch(`/api/workspace/members/${id}`, { role: 'member' })],
      ['removed', (id) => admin.delete(`/api/workspace/members/${id}`)],
      ['deactivated', (id) => admin.patch(`/api/admin/users/${id}`, { deactivated: true })],
      ['leaves', (_id, c) => c.post('/api/workspace/leave')],
    ];
    for (const [name, lose] of cases) {
      await admin.post('/api/workspace/invites', { email: `${name}-creator@example.com`, role: 'admin' });
      const creator = await userSession(t, admin, `${name}-creator@example.com`);
      assert.equal((await me(creator.client)).workspace.role, 'admin');
      const link = await creator.client.post('/api/workspace/invites', { role: 'member' });
      assert.equal(link.status, 201, link.text);
      await lose(creator.userId, creator.client);
      const pending = await admin.get('/api/workspace/invites?pageSize=100');
      assert.ok(!pending.body.items.some((i: { id: string }) => i.id === link.body.invite.id), `${name}: revoked`);
      const joiner = await providerSignIn(`${name}-joiner`, { name: 'J' });
      assert.equal((await joiner.post('/api/invites/accept', { token: tokenOf(link.body.url) })).status, 401, name);
    }
  });

  it('keeps a token acting with its creator current role', async () => {
    await admin.post('/api/workspace/invites', { email: 'tokenrole@example.com', role: 'admin' });
    const u = await userSession(t, admin, 'tokenrole@example.com');
    const token = await createToken(u.client);
    assert.equal((await token.client.get('/api/users/me')).body.workspace.role, 'admin');
    assert.equal((await admin.patch(`/api/workspace/members/${u.userId}`, { role: 'member' })).status, 200);
    assert.equal((await token.client.get('/api/users/me')).body.workspace.role, 'member');
    assert.equal((await token.client.patch('/api/settings', {})).status, 403);
  });
});

describe('instance admin', () => {
  it('lists users and workspaces, sets the admin flag, and refuses to lock itself out', async () => {
    const u = await userSession(t, admin, 'promoted@example.com');
    const users = await admin.get('/api/admin/users?search=promoted');
    assert.equal(users.body.total, 1);
    assert.equal(users.body.items[0].email, 'promoted@example.com');
    assert.ok(
      Math.abs(users.body.items[0].lastLoginAt - Date.now()) < 120_000,
      'the first sign-in counts as a sign-in',
    );
    assert.equal((await u.client.get('/api/admin/users')).status, 403);
    assert.equal((await admin.patch(`/api/admin/users/${u.userId}`, { isAdmin: true })).body.isAdmin, true);
    assert.equal((await u.client.get('/api/admin/users')).status, 200);
    const self = (await me(admin)).id;
    assert.equal((await admin.patch(`/api/admin/users/${self}`, { deactivated: true })).status, 409);
    assert.equal((await admin.patch(`/api/admin/users/${self}`, { isAdmin: false })).status, 409);
    assert.equal((await admin.patch(`/api/admin/users/${u.userId}`, {})).status, 400);
    assert.equal((await admin.patch('/api/admin/users/nobody', { deactivated: true })).status, 404);
    const ws = await admin.get('/api/admin/workspaces?pageSize=100');
    const def = ws.body.items.find((w: { id: string }) => w.id === defaultWorkspaceId);
    assert.equal(def.owner, 'admin@example.com');
    assert.ok(def.members > 3);
    assert.equal((await admin.delete(`/api/admin/workspaces/${defaultWorkspaceId}`)).status, 409);
    const victim = (await me(u.client)).workspace.id;
    assert.equal((await admin.delete(`/api/admin/workspaces/${victim}`)).status, 204);
    assert.equal((await u.client.get('/api/users/me')).status, 401, 'a session in a deleted workspace ends');
  });
});
