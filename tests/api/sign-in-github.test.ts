import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { usersCollection, type UserDoc } from '../../projections/identity.js';
import { Client, startTestServer, type TestServer } from './harness.js';
import { githubClientId, githubClientSecret, startGithub, type TestGithub } from './servers/github-server.js';
import { callback, configFile, startLogin, type Finished } from './sign-in-flow.js';

/**
 * Sign-in with GitHub against a local server that speaks GitHub's OAuth and REST endpoints, at configured base and
 * API URLs as for a GitHub Enterprise Server (docs/design.md, "Sign-in").
 */
let t: TestServer;
let gh: TestGithub;

before(async () => {
  gh = await startGithub();
  const verified = (email: string) => [
    { email: `old-${email}`, primary: false, verified: true },
    { email, primary: true, verified: true },
  ];
  gh.accounts = {
    alice: { id: 101, login: 'alice', name: 'Alice', emails: verified('Alice@Example.com'), memberships: [] },
    bob: { id: 102, login: 'bob', name: null, emails: [], memberships: [{ org: 'acme', state: 'pending' }] },
    carol: {
      id: 103,
      login: 'carol',
      name: 'Carol',
      emails: verified('carol@example.com'),
      memberships: [
        { org: 'other', state: 'active' },
        { org: 'acme', state: 'active' },
      ],
    },
    dave: {
      id: 104,
      login: 'dave',
      name: 'Dave',
      emails: verified('dave@example.com'),
      memberships: [{ org: 'acme-ops', state: 'active' }],
    },
    erin: { id: 105, login: 'erin', name: 'Erin', emails: verified('erin@example.com'), memberships: [] },
  };
  t = await startTestServer({
    SVC_CONFIG: configFile(`
auth:
  providers:
    github:
      type: github
      clientId: ${githubClientId}
      clientSecret: "{{env:TEST_GITHUB_SECRET}}"
      allowedUsers: [Alice]
      allowedOrganizations: [acme]
      adminOrganizations: [acme-ops]
      baseUrl: ${gh.baseUrl}
      apiUrl: ${gh.apiUrl}
workspaces:
  enabled: true
`),
    TEST_GITHUB_SECRET: githubClientSecret,
    SVC_ROLES: 'api,projector',
  });
});
after(async () => {
  await t?.stop();
  await gh?.close();
});

/** The whole browser flow as the GitHub user `login`. */
async function signIn(login: string, redirect?: string): Promise<Finished & { authUrl: URL }> {
  gh.nextLogin = login;
  const started = await startLogin(t.url, 'github', redirect);
  const authUrl = new URL(started.location);
  assert.equal(authUrl.origin + authUrl.pathname, `${gh.baseUrl}/login/oauth/authorize`);
  const authorize = await fetch(authUrl, { redirect: 'manual' });
  assert.equal(authorize.status, 302, await authorize.text());
  return { ...(await callback(authorize.headers.get('location')!, started.loginCookie)), authUrl };
}

async function userDoc(subject: string): Promise<UserDoc | null> {
  return t.server.services.stores.docs.collection<UserDoc>(usersCollection).findOne({ subject });
}

describe('sign-in with GitHub', () => {
  it('lists the provider and says workspaces are enabled', async () => {
    const setup = await new Client(t.url).get('/api/setup');
    assert.deepEqual(setup.body, {
      hasUsers: false,
      providers: [{ id: 'github', name: 'GitHub', type: 'github', primary: false }],
      workspacesEnabled: true,
    });
  });

  it('signs in an allowed user with the primary email, as (base URL, numeric id)', async () => {
    const done = await signIn('alice', '/runs');
    const q = done.authUrl.searchParams;
    assert.equal(q.get('client_id'), githubClientId);
    assert.equal(q.get('redirect_uri'), `${t.url}/api/auth/callback/github`);
    assert.equal(q.get('scope'), 'read:user user:email read:org');
    assert.equal(done.location, '/runs');
    assert.ok(done.session);
    const me = await new Client(t.url, { cookie: done.session }).get('/api/users/me');
    assert.equal(me.status, 200, me.text);
    assert.equal(me.body.email, 'alice@example.com');
    assert.equal(me.body.name, 'Alice');
    assert.equal(me.body.isAdmin, false);
    const doc = await userDoc('101');
    assert.equal(doc?.issuer, gh.baseUrl);
    assert.equal(doc?.provider, 'github');
    assert.equal(doc?._id, me.body.id);
  });

  it('refuses an organisation membership that is not active', async () => {
    const done = await signIn('bob');
    assert.equal(done.location, '/login?error=not_allowed');
    assert.equal(done.session, undefined);
    assert.equal(await userDoc('102'), null);
    assert.ok(gh.membershipStates.every((s) => s === 'active'));
  });

  it('lets in an active member of an allowed organisation, found on a later page', async () => {
    const done = await signIn('carol');
    assert.equal(done.location, '/');
    assert.ok(done.session);
  });

  it('makes active members of an admin organisation instance admins', async () => {
    const done = await signIn('dave');
    const me = await new Client(t.url, { cookie: done.session! }).get('/api/users/me');
    assert.equal(me.body.isAdmin, true);
  });

  it('refuses a user no list names', async () => {
    const done = await signIn('erin');
    assert.equal(done.location, '/login?error=not_allowed');
    assert.equal(done.session, undefined);
  });

  it('refuses a changed state, a provider error and a code redeemed twice', async () => {
    gh.nextLogin = 'alice';
    const started = await startLogin(t.url, 'github');
    const authorize = await fetch(started.location, { redirect: 'manual' });
    const back = new URL(authorize.headers.get('location')!);

    const wrongState = new URL(back);
    wrongState.searchParams.set('state', 'x'.repeat(43));
    assert.equal((await callback(wrongState.href, started.loginCookie)).location, '/login?error=invalid_login');

    const denied = new URL(`${t.url}/api/auth/callback/github`);
    denied.searchParams.set('error', 'access_denied');
    denied.searchParams.set('state', back.searchParams.get('state')!);
    assert.equal((await callback(denied.href, started.loginCookie)).location, '/login?error=provider_error');

    assert.equal((await callback(back.href, started.loginCookie)).location, '/');
    const replay = await callback(back.href, started.loginCookie);
    assert.equal(replay.location, '/login?error=provider_error');
    assert.equal(replay.session, undefined);
  });
});
