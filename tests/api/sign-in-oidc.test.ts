import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { systemContext } from '../../app/commands.js';
import { userDecider, userStreamId } from '../../domain/user.js';
import { followAuthorization } from '../mcp/servers/oauth-server.js';
import { Client, startTestServer, type TestServer } from './harness.js';
import { clientId, clientSecret, startIssuer, type TestIssuer } from './servers/oidc-issuer.js';
import { callback, configFile, startLogin, type Finished } from './sign-in-flow.js';

/**
 * Sign-in with OpenID Connect against a real provider on loopback, through the real redirects: the service's login
 * route, the provider's screens, the service's callback (docs/design.md, "Sign-in").
 */
let t: TestServer;
let idp: TestIssuer;

function config(issuer: string, extra = ''): string {
  return configFile(`
auth:
  providers:
    corp:
      type: oidc
      name: Corp SSO
      primary: true
      issuer: ${issuer}
      clientId: ${clientId}
      clientSecret: "{{env:TEST_OIDC_SECRET}}"
      allowedGroups: [engineering]
      adminGroups: [ops]
    another:
      type: oidc
      name: Another
      icon: https://example.com/icon.svg
      issuer: ${issuer}
      clientId: ${clientId}
      clientSecret: ${clientSecret}
${extra}`);
}

before(async () => {
  idp = await startIssuer();
  idp.accounts = {
    ann: { email: 'Ann@Example.com', name: 'Ann', groups: ['engineering'] },
    sam: { email: 'sam@example.com', name: 'Sam', groups: ['sales'] },
    oli: { email: 'oli@example.com', name: 'Oli', groups: ['ops'] },
    dee: { email: 'dee@example.com', name: 'Dee', groups: ['engineering'] },
  };
  t = await startTestServer({
    SVC_CONFIG: config(idp.issuer),
    TEST_OIDC_SECRET: clientSecret,
    SVC_ROLES: 'api,projector',
  });
  idp.register([`${t.url}/api/auth/callback/corp`, `${t.url}/api/auth/callback/another`]);
});
after(async () => {
  await t?.stop();
  await idp?.close();
});

/** The whole browser flow as `account`, from the login route to the service's last redirect. */
async function signIn(account: string, redirect?: string, provider = 'corp'): Promise<Finished & { authUrl: URL }> {
  idp.nextAccount = account;
  const started = await startLogin(t.url, provider, redirect);
  assert.ok(started.location.startsWith(idp.issuer), started.location);
  const back = await followAuthorization(started.location, `${t.url}/api/auth/callback/${provider}`);
  return { ...(await callback(back, started.loginCookie)), authUrl: new URL(started.location) };
}

async function me(session: string | undefined) {
  assert.ok(session, 'no session cookie was set');
  const res = await new Client(t.url, { cookie: session }).get('/api/users/me');
  assert.equal(res.status, 200, res.text);
  return res.body as { id: string; email: string; name: string; isAdmin: boolean };
}

describe('sign-in with OpenID Connect', () => {
  it('lists the providers, primary first, and the first-start state', async () => {
    const anon = new Client(t.url);
    const providers = await anon.get('/api/auth/providers');
    assert.equal(providers.status, 200);
    assert.deepEqual(providers.body, [
      { id: 'corp', name: 'Corp SSO', type: 'oidc', primary: true },
      { id: 'another', name: 'Another', type: 'oidc', primary: false, icon: 'https://example.com/icon.svg' },
    ]);
    const setup = await anon.get('/api/setup');
    assert.deepEqual(setup.body, { hasUsers: false, providers: providers.body, workspacesEnabled: false });
  });

  it('signs in through the whole flow with state, nonce and PKCE, and lands where the login started', async () => {
    const done = await signIn('ann', '/jobs?tab=recent');
    const q = done.authUrl.searchParams;
    assert.equal(q.get('client_id'), clientId);
    assert.equal(q.get('redirect_uri'), `${t.url}/api/auth/callback/corp`);
    assert.equal(q.get('code_challenge_method'), 'S256');
    assert.match(q.get('code_challenge') ?? '', /^[A-Za-z0-9_-]{43}$/);
    assert.ok((q.get('state') ?? '').length >= 22);
    assert.ok((q.get('nonce') ?? '').length >= 22);
    assert.deepEqual(q.get('scope')?.split(' ').sort(), ['email', 'groups', 'openid', 'profile']);
    assert.equal(done.location, '/jobs?tab=recent');
    const user = await me(done.session);
    assert.equal(user.email, 'ann@example.com');
    assert.equal(user.name, 'Ann');
    assert.equal(user.isAdmin, false);
    // The login cookie is cleared by the callback.
    assert.match(done.res.headers.getSetCookie().join('\n'), /svc_login=; Path=\/api\/auth;.*Max-Age=0/);
    assert.equal((await new Client(t.url).get('/api/setup')).body.hasUsers, true);

    // (issuer, subject) is the identity: a second sign-in is the same user.
    const again = await signIn('ann');
    assert.equal(again.location, '/');
    assert.equal((await me(again.session)).id, user.id);
  });

  it('sets a signed, short-lived, HttpOnly login cookie scoped to /api/auth', async () => {
    const started = await startLogin(t.url, 'corp', '/x');
    const header = started.res.headers.getSetCookie().find((c) => c.startsWith('svc_login='))!;
    assert.match(header, /Path=\/api\/auth/);
    assert.match(header, /HttpOnly/);
    assert.match(header, /SameSite=Lax/);
    assert.match(header, /Max-Age=600/);
  });

  it('refuses an account outside the allowed groups, with no session', async () => {
    const done = await signIn('sam');
    assert.equal(done.location, '/login?error=not_allowed');
    assert.equal(done.session, undefined);
  });

  it('makes members of an admin group instance admins, and takes it back at a later sign-in', async () => {
    const first = await signIn('oli');
    assert.equal(first.location, '/');
    const oli = await me(first.session);
    assert.equal(oli.isAdmin, true);

    idp.accounts.oli!.groups = ['engineering'];
    const later = await signIn('oli');
    const demoted = await me(later.session);
    assert.equal(demoted.id, oli.id);
    assert.equal(demoted.isAdmin, false);
    // The older session acts with the current flag too.
    assert.equal((await me(first.session)).isAdmin, false);
  });

  it('refuses a deactivated user', async () => {
    const dee = await me((await signIn('dee')).session);
    await t.server.services.bus.execute(
      userStreamId(dee.id),
      userDecider,
      { type: 'SetDeactivated', deactivated: true, now: Date.now() },
      systemContext,
    );
    const done = await signIn('dee');
    assert.equal(done.location, '/login?error=deactivated');
    assert.equal(done.session, undefined);
  });

  it('refuses a tampered login cookie, a session cookie in its place, and none at all', async () => {
    idp.nextAccount = 'ann';
    const started = await startLogin(t.url, 'corp', '/jobs');
    const back = await followAuthorization(started.location, `${t.url}/api/auth/callback/corp`);
    const [payload, sig] = started.loginCookie!.split('.');
    const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString());
    const forged = Buffer.from(JSON.stringify({ ...claims, redirect: '/admin' })).toString('base64url');
    for (const cookie of [`${forged}.${sig}`, `${payload}.${sig}x`, `${payload}`, undefined]) {
      const done = await callback(back, cookie);
      assert.equal(done.location, '/login?error=invalid_login', String(cookie));
      assert.equal(done.session, undefined);
    }
    // Oversized and malformed values are refusals like any other, never a server error.
    for (const cookie of ['x'.repeat(5000), '%E0%A4%A', `${payload}.${sig}.${sig}`]) {
      assert.equal((await callback(back, cookie)).location, '/login?error=invalid_login');
    }
    const huge = new URL(back);
    huge.searchParams.set('code', 'c'.repeat(5000));
    assert.equal((await callback(huge.href, started.loginCookie)).location, '/login?error=invalid_login');
    // A session cookie's value is signed for another kind: it does not pass as a login cookie.
    const session = (await signIn('ann')).session!.slice('svc_session='.length);
    assert.equal((await callback(back, session)).location, '/login?error=invalid_login');
    // Nor does a login cookie pass as a session.
    const asSession = await new Client(t.url, { cookie: `svc_session=${started.loginCookie}` }).get('/api/users/me');
    assert.equal(asSession.status, 401);
  });

  it("refuses one login's cookie with another login's answer (state, and with it nonce and PKCE)", async () => {
    idp.nextAccount = 'ann';
    const a = await startLogin(t.url, 'corp');
    const b = await startLogin(t.url, 'corp');
    const backB = await followAuthorization(b.location, `${t.url}/api/auth/callback/corp`);
    const done = await callback(backB, a.loginCookie);
    assert.equal(done.location, '/login?error=invalid_login');
    assert.equal(done.session, undefined);
    // B's own cookie still completes: nothing was spent by the refusal.
    assert.equal((await callback(backB, b.loginCookie)).location, '/');
  });

  it('refuses a callback to another provider than the one the login started with', async () => {
    idp.nextAccount = 'ann';
    const started = await startLogin(t.url, 'corp');
    const back = await followAuthorization(started.location, `${t.url}/api/auth/callback/corp`);
    const other = back.replace('/api/auth/callback/corp', '/api/auth/callback/another');
    const done = await callback(other, started.loginCookie);
    assert.equal(done.location, '/login?error=provider_mismatch');
    assert.equal(done.session, undefined);
  });

  it('sends unsafe redirects to /', async () => {
    const done = await signIn('ann', '//evil.example/x');
    assert.equal(done.location, '/');
    assert.ok(done.session);
  });

  it('lands on the login page when the provider refuses, and for an unknown provider', async () => {
    idp.deny = true;
    try {
      const done = await signIn('ann');
      assert.equal(done.location, '/login?error=provider_error');
      assert.equal(done.session, undefined);
    } finally {
      idp.deny = false;
    }
    const cb = await callback(`${t.url}/api/auth/callback/nope?code=x&state=y`, undefined);
    assert.equal(cb.location, '/login?error=not_found');
  });

  it('answers a bad sign-in link with the login page, not JSON', async () => {
    for (const token of ['nope', '00000000-0000-7000-8000-000000000000.secret', 'x'.repeat(300)]) {
      const res = await fetch(`${t.url}/api/auth/link/${token}`, { redirect: 'manual' });
      assert.equal(res.status, 302, token);
      assert.equal(res.headers.get('location'), '/login?error=invalid_link');
    }
  });
});

describe('login starts on a server of their own (they count against the rate limit)', () => {
  let own: TestServer;
  let began: number;
  before(async () => {
    // A provider whose issuer does not answer: port 9 on loopback (discard) has no listener here.
    const down = `    down:\n      type: oidc\n      issuer: http://127.0.0.1:9\n      clientId: svc\n`;
    own = await startTestServer({
      SVC_CONFIG: config(idp.issuer, down),
      TEST_OIDC_SECRET: clientSecret,
      SVC_ROLES: 'api',
    });
    began = Date.now();
  });
  after(async () => own?.stop());

  it('keeps unsafe redirects out of the login cookie: they become /', async () => {
    for (const redirect of ['/\\evil.example', 'https://evil.example/', '/a\r\nSet-Cookie: x=1', 'javascript:x']) {
      const started = await startLogin(own.url, 'corp', redirect);
      const state = JSON.parse(Buffer.from(started.loginCookie!.split('.')[0]!, 'base64url').toString());
      assert.equal(state.redirect, '/', redirect);
    }
  });

  it('sends an unknown provider to the login page', async () => {
    const unknown = await startLogin(own.url, 'nope');
    assert.equal(unknown.location, '/login?error=not_found');
    assert.equal(unknown.loginCookie, undefined);
    const tooLong = await startLogin(own.url, 'x'.repeat(300));
    assert.equal(tooLong.location, '/login?error=not_found');
  });

  it('sends a sign-in to a provider that cannot be reached to the login page, and the server stays up', async () => {
    const started = await startLogin(own.url, 'down');
    assert.equal(started.location, '/login?error=provider_error');
    assert.equal(started.loginCookie, undefined);
    assert.equal(started.res.headers.get('cache-control'), 'no-store');
    assert.equal((await fetch(`${own.url}/api/auth/providers`)).status, 200);
  });

  it('sends the 21st start within a minute to the login page with Retry-After', async () => {
    // Seven starts were made above. The bucket refills one start every 3 s, so the count allowed before the refusal
    // is 20 plus what refilled while the calls ran.
    {
      let ok = 7;
      let refused: Response | null = null;
      for (let i = 0; i < 200 && !refused; i++) {
        const res = await fetch(`${own.url}/api/auth/login/corp`, { redirect: 'manual' });
        await res.arrayBuffer();
        if (res.headers.get('location')?.startsWith('/login')) refused = res;
        else ok++;
      }
      assert.ok(refused, 'never refused');
      assert.equal(refused.status, 302);
      assert.equal(refused.headers.get('location'), '/login?error=rate_limited');
      assert.match(refused.headers.get('retry-after') ?? '', /^\d+$/);
      assert.ok(ok >= 20, `${ok} starts`);
      assert.ok(ok <= 20 + Math.ceil((Date.now() - began) / 3000), `${ok} starts`);
    }
  });

  it('limits sign-in link attempts the same way, answering the login page', async () => {
    const from = Date.now();
    let invalid = 0;
    let last: Response | null = null;
    for (let i = 0; i < 200; i++) {
      last = await fetch(`${own.url}/api/auth/link/nope`, { redirect: 'manual' });
      await last.arrayBuffer();
      if (last.headers.get('location') !== '/login?error=invalid_link') break;
      invalid++;
    }
    assert.equal(last?.status, 302);
    assert.equal(last?.headers.get('location'), '/login?error=rate_limited');
    assert.ok(invalid >= 20 && invalid <= 20 + Math.ceil((Date.now() - from) / 3000), `${invalid} attempts`);
  });
});
