import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { adminSession, Client, createToken, startTestServer, type TestServer } from '../api/harness.js';
import { mcpServersCollection, type McpServerDoc } from '../../projections/mcp-servers.js';
import { followAuthorization, startAuthServer, type TestAuthServer } from './servers/oauth-server.js';
import { waitFor } from '../wait.js';
import { startProtectedMcpServer, type ProtectedMcpServer } from './servers/oauth-mcp-server.js';

// The authorization server and the MCP server listen on loopback: the operator's switch lets the host reach them.
process.env.SVC_ALLOW_PRIVATE_NETWORK_TARGETS = 'true';

let t: TestServer;
let admin: Client;
let api: Client;
let as: TestAuthServer;
let mcp: ProtectedMcpServer;

before(async () => {
  as = await startAuthServer();
  mcp = await startProtectedMcpServer(as.issuer);
  t = await startTestServer({ SVC_ROLES: 'api,projector' });
  admin = await adminSession(t);
  api = (await createToken(admin)).client;
});
after(async () => {
  await t?.stop();
  await mcp?.close();
  await as?.close();
});

/**
 * The browser's part: the authorization server's screens, then the service's callback with the session cookie,
 * which may send it to the authorization server once more (the retry without scopes).
 */
async function browserLogin(
  session: Client,
  serverId: string,
): Promise<{ location: string; authorizationUrl: URL; rounds: number }> {
  const login = await session.post(`/api/mcp-servers/${serverId}/oauth/login`);
  assert.equal(login.status, 200, login.text);
  const authorizationUrl = new URL(login.body.authorizationUrl);
  let next = authorizationUrl.href;
  for (let rounds = 1; rounds <= 3; rounds++) {
    const callback = await followAuthorization(next, `${t.url}/api/mcp-servers/${serverId}/oauth/callback`);
    const back = await session.get(callback.slice(t.url.length));
    assert.equal(back.status, 302, back.text);
    next = back.headers.get('location') ?? '';
    if (next.startsWith('/mcp')) return { location: next, authorizationUrl, rounds };
  }
  throw new Error('the login went round too often');
}

async function allEventsText(): Promise<string> {
  return JSON.stringify(await t.server.services.stores.events.readAll({}));
}

describe('OAuth for HTTP MCP servers', () => {
  let id: string;

  it('reports a server that wants a login, and starts logins only from a session', async () => {
    const created = await api.post('/api/mcp-servers', { name: 'secured', transport: 'http', url: mcp.url });
    assert.equal(created.status, 201, created.text);
    id = created.body.id;
    assert.equal(created.body.auth.status, 'unknown');
    assert.equal(created.body.auth.callbackUrl, `${t.url}/api/mcp-servers/${id}/oauth/callback`);

    const tested = await api.post(`/api/mcp-servers/${id}/test`);
    assert.equal(tested.body.ok, false);
    assert.match(tested.body.error, /login required/);
    assert.equal(tested.body.auth.status, 'not_logged_in');

    const byToken = await api.post(`/api/mcp-servers/${id}/oauth/login`);
    assert.equal(byToken.status, 403);
    assert.equal(byToken.body.code, 'forbidden');
    assert.equal((await new Client(t.url).post(`/api/mcp-servers/${id}/oauth/login`)).status, 401);
  });

  it('logs in with dynamic registration, PKCE S256, the resource and offline_access, and stores the tokens sealed', async () => {
    const { location, authorizationUrl } = await browserLogin(admin, id);
    const q = authorizationUrl.searchParams;
    assert.equal(q.get('code_challenge_method'), 'S256');
    assert.ok((q.get('code_challenge') ?? '').length >= 43);
    assert.equal(q.get('resource'), mcp.url);
    assert.deepEqual(q.get('scope')?.split(' ').sort(), ['mcp:tools', 'offline_access']);
    assert.equal(q.get('redirect_uri'), `${t.url}/api/mcp-servers/${id}/oauth/callback`);
    assert.equal(as.registrations, 1);
    assert.equal(location, `/mcp?server=${id}&login=ok`);

    const dto = (await api.get(`/api/mcp-servers/${id}`)).body;
    assert.equal(dto.auth.status, 'oauth');
    assert.equal(dto.auth.refreshable, true);
    assert.ok(Math.abs(dto.auth.expiresAt - (Date.now() + 300_000)) < 10_000, `expiresAt ${dto.auth.expiresAt}`);
    assert.ok(dto.auth.loggedInAt <= Date.now());

    const tested = await api.post(`/api/mcp-servers/${id}/test`);
    assert.equal(tested.body.ok, true, tested.body.error);
    assert.ok(tested.body.tools.some((tool: { name: string }) => tool.name === 'lookup'));
    assert.equal(tested.body.auth.status, 'oauth');
    assert.equal(as.grants.refresh_token ?? 0, 0, 'a fresh token is used as it is');

    // The access token the server accepted appears in no answer and in no stored event.
    const token = mcp.accepted.at(-1)!;
    assert.ok(token.split('.').length === 3);
    assert.ok(!(await api.get('/api/mcp-servers')).text.includes(token));
    const stored = await allEventsText();
    assert.ok(!stored.includes(token));
    assert.ok(!stored.includes(q.get('state')!), 'the state is kept only as a hash');
  });

  it("calls a tool with the login in a run's connection", async () => {
    const job = await api.post('/api/jobs', { name: 'oauth job', instruction: 'Look a word up.', selfImprove: false });
    assert.equal(job.status, 201, job.text);
    assert.equal(
      (await api.request('PUT', `/api/jobs/${job.body.id}/mcp-servers`, [{ serverId: id, allowedTools: ['lookup'] }]))
        .status,
      200,
    );
    const doc = await t.server.services.stores.docs.collection<McpServerDoc>(mcpServersCollection).findOne({ _id: id });
    const notes: string[] = [];
    const run = await t.server.services.mcp.forRun(doc!.workspaceId, job.body.id, {
      shadow: false,
      runAsRoot: false,
      timeline: (_type, payload) => void notes.push(JSON.stringify(payload)),
    });
    assert.ok(run);
    await run.connect(null);
    try {
      const result = await run.call('secured', 'lookup', { word: 'otter' });
      assert.equal(result.isError, false, result.output);
      assert.equal(result.output, 'otter: found by oauth');
    } finally {
      await run.close();
    }
    assert.match(notes.join('\n'), /Connected to secured/);
  });

  it('refreshes on a 401, and before expiry without waiting for a refusal', async () => {
    // Tokens issued from now on live 4 s: short-lived, so they are refreshed half way through (2 s before expiry).
    as.accessTokenTtl = 4;
    for (const token of mcp.accepted) mcp.refused.add(token);
    const refusals = mcp.unauthorized;
    const onRejection = await api.post(`/api/mcp-servers/${id}/test`);
    assert.equal(onRejection.body.ok, true, onRejection.body.error);
    assert.equal(mcp.unauthorized, refusals + 1, 'one 401, then the refreshed token');
    assert.equal(as.grants.refresh_token, 1);
    const first = (await api.get(`/api/mcp-servers/${id}`)).body.auth;
    assert.equal(first.status, 'oauth');
    assert.ok(first.expiresAt - Date.now() <= 4_000);
    const used = mcp.accepted.at(-1);

    // Refreshed half way through its life: past that point the next use must refresh first.
    const halfWay = first.expiresAt - 2_000;
    await waitFor('the token to pass half its life', () => Date.now() > halfWay + 50, { intervalMs: 25 });
    const early = await api.post(`/api/mcp-servers/${id}/test`);
    assert.equal(early.body.ok, true, early.body.error);
    assert.equal(as.grants.refresh_token, 2);
    assert.equal(mcp.unauthorized, refusals + 1, 'refreshed before use: the server refused nothing');
    assert.notEqual(mcp.accepted.at(-1), used);
    assert.ok((await api.get(`/api/mcp-servers/${id}`)).body.auth.expiresAt > first.expiresAt);
    as.accessTokenTtl = 300;
  });

  it('ends the login when the refresh token is rejected', async () => {
    await as.revokeAll();
    for (const token of mcp.accepted) mcp.refused.add(token);
    const tested = await api.post(`/api/mcp-servers/${id}/test`);
    assert.equal(tested.body.ok, false);
    assert.equal(tested.body.auth.status, 'not_logged_in');
    assert.equal((await api.get(`/api/mcp-servers/${id}`)).body.auth.status, 'not_logged_in');
    const ended = await t.server.services.stores.events.readStream(`mcpoauth-${id}`);
    assert.equal(ended.at(-1)?.type, 'McpOauthLoggedOut');
    assert.equal((ended.at(-1)?.data as { reason: string }).reason, 'refresh_rejected');
  });

  it('refuses a callback with a state it did not issue, and surfaces access_denied', async () => {
    const login = await admin.post(`/api/mcp-servers/${id}/oauth/login`);
    const forged = await admin.get(`/api/mcp-servers/${id}/oauth/callback?code=stolen&state=forged`);
    assert.equal(forged.status, 302);
    assert.equal(forged.headers.get('location'), `/mcp?server=${id}&error=invalid_state`);
    // Without the session of the user who started it, the right state is refused too.
    const state = new URL(login.body.authorizationUrl).searchParams.get('state');
    const stranger = await new Client(t.url).get(`/api/mcp-servers/${id}/oauth/callback?code=x&state=${state}`);
    assert.equal(stranger.headers.get('location'), `/mcp?server=${id}&error=wrong_user`);
    assert.equal((await api.get(`/api/mcp-servers/${id}`)).body.auth.status, 'not_logged_in');

    as.deny = true;
    try {
      const { location } = await browserLogin(admin, id);
      const back = new URL(location, t.url);
      assert.equal(back.pathname, '/mcp');
      assert.equal(back.searchParams.get('error'), 'access_denied');
    } finally {
      as.deny = false;
    }
    assert.equal((await api.get(`/api/mcp-servers/${id}`)).body.auth.status, 'not_logged_in');
  });

  it('logs out', async () => {
    const { location } = await browserLogin(admin, id);
    assert.equal(location, `/mcp?server=${id}&login=ok`);
    assert.equal((await api.get(`/api/mcp-servers/${id}`)).body.auth.status, 'oauth');
    const out = await api.delete(`/api/mcp-servers/${id}/oauth`);
    assert.equal(out.status, 204, out.text);
    const dto = (await api.get(`/api/mcp-servers/${id}`)).body;
    assert.notEqual(dto.auth.status, 'oauth');
    assert.equal(dto.auth.expiresAt, null);
    const tested = await api.post(`/api/mcp-servers/${id}/test`);
    assert.equal(tested.body.ok, false);
    assert.match(tested.body.error, /login required/);
  });

  it('answers 422 for a server that advertises no login', async () => {
    const plain = await api.post('/api/mcp-servers', {
      name: 'plain',
      transport: 'http',
      url: `${new URL(mcp.url).origin}/other`,
    });
    const res = await admin.post(`/api/mcp-servers/${plain.body.id}/oauth/login`);
    assert.equal(res.status, 422, res.text);
    assert.equal(res.body.code, 'unsupported');
    assert.equal(res.body.message, "This server doesn't advertise an OAuth login");
  });
});

describe('OAuth with a configured client', () => {
  let as2: TestAuthServer;
  let mcp2: ProtectedMcpServer;
  after(async () => {
    await mcp2?.close();
    await as2?.close();
  });

  it('says a client id is needed when registration is refused, then logs in with the configured client and retries once without scopes after invalid_scope', async () => {
    const created = await api.post('/api/mcp-servers', {
      name: 'handmade',
      transport: 'http',
      url: 'http://127.0.0.1:9/mcp',
    });
    const sid = created.body.id as string;
    // A confidential client registered by hand, allowed only the openid scope: asking for offline_access is refused.
    as2 = await startAuthServer({
      registration: false,
      clients: [
        {
          client_id: 'svc-handmade',
          client_secret: 'handmade-secret-value',
          redirect_uris: [`${t.url}/api/mcp-servers/${sid}/oauth/callback`],
          scope: 'openid',
          grant_types: ['authorization_code', 'refresh_token'],
        },
      ],
    });
    mcp2 = await startProtectedMcpServer(as2.issuer);
    const body = { name: 'handmade', transport: 'http', url: mcp2.url };
    assert.equal((await api.request('PUT', `/api/mcp-servers/${sid}`, body)).status, 200);

    const refused = await admin.post(`/api/mcp-servers/${sid}/oauth/login`);
    assert.equal(refused.status, 502, refused.text);
    assert.equal(refused.body.code, 'oauth_error');
    assert.match(refused.body.message, /client id \(oauth\.clientId\)/);

    assert.equal(
      (await api.post('/api/secrets', { name: 'handmade-secret', value: 'handmade-secret-value' })).status,
      201,
    );
    const configured = {
      ...body,
      oauth: {
        clientId: 'svc-handmade',
        clientSecret: '{{secret:handmade-secret}}',
        scopes: ['mcp:tools', 'offline_access'],
      },
    };
    assert.equal((await api.request('PUT', `/api/mcp-servers/${sid}`, configured)).status, 200);
    const { location, authorizationUrl, rounds } = await browserLogin(admin, sid);
    assert.equal(authorizationUrl.searchParams.get('client_id'), 'svc-handmade');
    assert.equal(authorizationUrl.searchParams.get('scope'), 'mcp:tools offline_access');
    assert.equal(rounds, 2, 'invalid_scope, then the retry without scopes');
    assert.equal(location, `/mcp?server=${sid}&login=ok`);
    assert.equal(as2.registrations, 0);

    const dto = (await api.get(`/api/mcp-servers/${sid}`)).body;
    assert.equal(dto.auth.status, 'oauth');
    assert.equal(dto.auth.refreshable, false, 'no offline_access, no refresh token');
    assert.deepEqual(dto.oauth.clientSecret, '{{secret:handmade-secret}}');
    const tested = await api.post(`/api/mcp-servers/${sid}/test`);
    assert.equal(tested.body.ok, true, tested.body.error);
    assert.ok(!(await allEventsText()).includes('handmade-secret-value'));

    // Pointed elsewhere, the server loses its login: its tokens must not travel to the new address.
    const moved = await api.request('PUT', `/api/mcp-servers/${sid}`, { ...configured, url: mcp.url });
    assert.equal(moved.status, 200, moved.text);
    assert.notEqual(moved.body.auth.status, 'oauth');
  });
});
