import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { accessTable } from '../../api/access.js';
import { adminSession, Client, createToken, startTestServer, userSession, type TestServer } from '../api/harness.js';
import { startHttpMcpServer, type TestHttpServer } from './servers/http-server.js';

// The test MCP server listens on loopback: the operator's switch for private targets lets the host reach it.
process.env.SVC_ALLOW_PRIVATE_NETWORK_TARGETS = 'true';

let t: TestServer;
let admin: Client;
let api: Client;
let member: Client;
let mcp: TestHttpServer;

before(async () => {
  mcp = await startHttpMcpServer();
  t = await startTestServer({ SVC_ROLES: 'api,projector' });
  admin = await adminSession(t);
  api = (await createToken(admin)).client;
  member = (await userSession(t, admin, 'member@example.com')).client;
});
after(async () => {
  await t?.stop();
  await mcp?.close();
});

const fieldsOf = (body: { fields?: Array<{ field: string }> }) => (body.fields ?? []).map((f) => f.field).sort();

describe('MCP server registry', () => {
  it("creates, lists, reads, replaces and deletes servers, keeping only the chosen transport's fields", async () => {
    const created = await api.post('/api/mcp-servers', {
      name: 'files',
      transport: 'stdio',
      command: 'node',
      args: ['server.js'],
      env: { A: '1' },
      url: 'https://ignored.example',
      headers: { X: 'y' },
    });
    assert.equal(created.status, 201, created.text);
    assert.equal(created.headers.get('location'), `/api/mcp-servers/${created.body.id}`);
    assert.equal(created.body.url, null);
    assert.deepEqual(created.body.headers, {});
    assert.deepEqual(created.body.env, { A: '1' });
    assert.equal(created.body.enabled, true);
    assert.equal(created.body.tools, null);
    assert.equal(created.body.auth.status, 'unsupported');

    const list = await api.get('/api/mcp-servers?sort=-createdAt&pageSize=10');
    assert.equal(list.status, 200);
    assert.equal(list.body.total, 1);
    assert.equal(list.body.items[0].name, 'files');
    assert.equal((await api.get('/api/mcp-servers?sort=color')).body.fields[0].field, 'sort');

    const replaced = await api.request('PUT', `/api/mcp-servers/${created.body.id}`, {
      name: 'web',
      transport: 'http',
      url: mcp.url,
      command: 'dropped',
      enabled: false,
    });
    assert.equal(replaced.status, 200, replaced.text);
    assert.equal(replaced.body.command, null);
    assert.deepEqual(replaced.body.args, []);
    assert.equal(replaced.body.url, mcp.url);
    assert.equal(replaced.body.enabled, false);
    assert.equal(replaced.body.auth.status, 'unknown');
    assert.equal((await api.get(`/api/mcp-servers/${created.body.id}`)).body.name, 'web');

    // The old name is free again after a rename, the new one is taken.
    assert.equal((await api.post('/api/mcp-servers', { name: 'files', transport: 'stdio', command: 'x' })).status, 201);
    const dup = await api.post('/api/mcp-servers', { name: 'WEB', transport: 'stdio', command: 'x' });
    assert.equal(dup.status, 400);
    assert.equal(dup.body.code, 'validation_failed');
    assert.deepEqual(fieldsOf(dup.body), ['name']);

    assert.equal((await api.delete(`/api/mcp-servers/${created.body.id}`)).status, 204);
    assert.equal((await api.get(`/api/mcp-servers/${created.body.id}`)).body.code, 'not_found');
    assert.equal((await api.delete(`/api/mcp-servers/${created.body.id}`)).status, 404);
    // A deleted server's name can be used again.
    assert.equal((await api.post('/api/mcp-servers', { name: 'web', transport: 'http', url: mcp.url })).status, 201);
  });

  it('refuses bad input naming each field', async () => {
    const cases: Array<[unknown, string[]]> = [
      [{ name: 'bad name', transport: 'stdio', command: 'x' }, ['name']],
      [{ name: 'n1', transport: 'http', url: 'ftp://example.com' }, ['url']],
      [{ name: 'n2', transport: 'http', url: 'not a url' }, ['url']],
      [{ name: 'n3', transport: 'http' }, ['url']],
      [{ name: 'n4', transport: 'stdio' }, ['command']],
      [{ name: 'n5', transport: 'stdio', command: 'a\nb' }, ['command']],
      [
        { name: 'n6', transport: 'http', url: 'https://x.example', oauth: { scopes: ['read write'] } },
        ['oauth.scopes[0]'],
      ],
      [
        { name: 'n7', transport: 'stdio', command: 'x', env: { SVC_TOKEN: 'x', '1BAD': 'y' } },
        ['env.1BAD', 'env.SVC_TOKEN'],
      ],
      [
        { name: 'n8', transport: 'http', url: 'https://x.example', headers: { 'Bad Header': 'x' } },
        ['headers.Bad Header'],
      ],
      [{ name: 'n9', transport: 'stdio', command: 'x', env: { KEY: '{{secret:nope}}' } }, ['env.KEY']],
      [{ name: 'x'.repeat(51), transport: 'stdio', command: 'x' }, ['name']],
      [{ name: 'n10', transport: 'carrier-pigeon' }, ['transport']],
      [{ name: 'n11', transport: 'stdio', command: 'x', colour: 'red' }, ['colour']],
    ];
    for (const [body, fields] of cases) {
      const res = await api.post('/api/mcp-servers', body);
      assert.equal(res.status, 400, `${JSON.stringify(body)} → ${res.text}`);
      assert.equal(res.body.code, 'validation_failed');
      for (const f of fields)
        assert.ok(
          fieldsOf(res.body).some((x) => x === f || x.startsWith(f)),
          `${JSON.stringify(body)} names ${f}: ${res.text}`,
        );
    }
  });

  it('keeps secret references as written and never their values', async () => {
    assert.equal((await api.post('/api/secrets', { name: 'mcp-token', value: 'test-bearer' })).status, 201);
    const res = await api.post('/api/mcp-servers', {
      name: 'guarded',
      transport: 'http',
      url: mcp.protectedUrl,
      headers: { Authorization: 'Bearer {{secret:mcp-token}}' },
    });
    assert.equal(res.status, 201, res.text);
    assert.equal(res.body.headers.Authorization, 'Bearer {{secret:mcp-token}}');
    assert.equal(res.body.auth.status, 'bearer_token');
    assert.ok(!JSON.stringify((await api.get(`/api/mcp-servers/${res.body.id}`)).body).includes('test-bearer'));
    // The value is resolved on the host when the server is used: the protected endpoint sees it.
    const test = await api.post(`/api/mcp-servers/${res.body.id}/test`);
    assert.equal(test.body.ok, true, test.text);
    assert.ok(mcp.authorizations.includes('Bearer test-bearer'));
    assert.ok(!test.text.includes('test-bearer'));
  });

  it('tests a server: tools with readOnly from readOnlyHint, latency, cached for later', async () => {
    const created = await api.post('/api/mcp-servers', {
      name: 'tester',
      transport: 'http',
      url: mcp.url,
      description: 'the test server',
    });
    const test = await api.post(`/api/mcp-servers/${created.body.id}/test`);
    assert.equal(test.status, 200, test.text);
    assert.equal(test.body.ok, true);
    assert.equal(test.body.error, null);
    assert.ok(Number.isInteger(test.body.latencyMs));
    const byName = Object.fromEntries(test.body.tools.map((x: { name: string }) => [x.name, x]));
    assert.deepEqual(Object.keys(byName).sort(), ['broken', 'lookup', 'picture', 'record', 'slow', 'stats', 'whoami']);
    assert.equal(byName.lookup.readOnly, true);
    assert.equal(byName.record.readOnly, false);
    assert.equal(byName.record.destructive, false);
    assert.equal(byName.broken.destructive, true, 'destructive when the hint is absent');
    assert.equal(byName.lookup.inputSchema.type, 'object');
    const cached = await api.get(`/api/mcp-servers/${created.body.id}`);
    assert.equal(cached.body.tools.length, 7);
    assert.ok(cached.body.toolsCachedAt > 0);
  });

  it('falls back to the older SSE transport', async () => {
    const created = await api.post('/api/mcp-servers', { name: 'legacy', transport: 'http', url: mcp.sseUrl });
    const test = await api.post(`/api/mcp-servers/${created.body.id}/test`);
    assert.equal(test.body.ok, true, test.text);
    assert.equal(test.body.tools.length, 7);
  });

  it('reports servers that refuse, are missing or need a login, within the timeout', async () => {
    const login = await api.post('/api/mcp-servers', { name: 'locked', transport: 'http', url: mcp.protectedUrl });
    const locked = await api.post(`/api/mcp-servers/${login.body.id}/test`);
    assert.equal(locked.body.ok, false);
    assert.match(locked.body.error, /login required/);
    assert.equal(locked.body.auth.status, 'not_logged_in');
    assert.equal(locked.body.auth.refreshable, false);

    const gone = await api.post('/api/mcp-servers', { name: 'gone', transport: 'http', url: 'http://127.0.0.1:9/mcp' });
    const refused = await api.post(`/api/mcp-servers/${gone.body.id}/test`);
    assert.equal(refused.body.ok, false);
    assert.match(refused.body.error, /could not connect/);

    // Cloud metadata is never a target, whatever the private-network switch says: refused at save already
    // (tests/api/outbound-addresses.test.ts covers every spelling, and the check at dial).
    const meta = await api.post('/api/mcp-servers', {
      name: 'metadata',
      transport: 'http',
      url: 'http://169.254.169.254/mcp',
    });
    assert.equal(meta.status, 400);
    assert.equal(meta.body.fields[0].field, 'url');
    assert.match(meta.body.fields[0].message, /does not connect to/);
  });

  it('answers unsupported for a stdio test on a process without a runner', async () => {
    const created = await api.post('/api/mcp-servers', { name: 'stdio-here', transport: 'stdio', command: 'node' });
    const test = await api.post(`/api/mcp-servers/${created.body.id}/test`);
    assert.equal(test.status, 422);
    assert.equal(test.body.code, 'unsupported');
  });
});

describe('job grants', () => {
  it('grants servers and tools, checks tool names, drops deleted servers, refuses unknown ones', async () => {
    const job = await api.post('/api/jobs', { name: 'Grants', instruction: 'Use the tools.' });
    const server = await api.post('/api/mcp-servers', { name: 'granted', transport: 'http', url: mcp.url });
    const untested = await api.post('/api/mcp-servers', { name: 'untested', transport: 'http', url: mcp.url });
    assert.equal((await api.get(`/api/jobs/${job.body.id}/mcp-servers`)).body.length, 0);

    // Before a test nothing is known of the tools, so names are taken as given.
    const early = await api.request('PUT', `/api/jobs/${job.body.id}/mcp-servers`, [
      { serverId: untested.body.id, allowedTools: ['anything'] },
    ]);
    assert.equal(early.status, 200, early.text);

    await api.post(`/api/mcp-servers/${server.body.id}/test`);
    const unknown = await api.request('PUT', `/api/jobs/${job.body.id}/mcp-servers`, [
      { serverId: server.body.id, allowedTools: ['lookup', 'launch_missiles'] },
    ]);
    assert.equal(unknown.status, 400);
    assert.deepEqual(fieldsOf(unknown.body), ['[0].allowedTools[1]']);
    const twice = await api.request('PUT', `/api/jobs/${job.body.id}/mcp-servers`, [
      { serverId: server.body.id, allowedTools: null },
      { serverId: server.body.id, allowedTools: null },
    ]);
    assert.deepEqual(fieldsOf(twice.body), ['[1].serverId']);
    const missingField = await api.request('PUT', `/api/jobs/${job.body.id}/mcp-servers`, [
      { serverId: server.body.id },
    ]);
    assert.equal(missingField.status, 400);

    const set = await api.request('PUT', `/api/jobs/${job.body.id}/mcp-servers`, [
      { serverId: server.body.id, allowedTools: ['lookup', 'lookup', 'record'] },
      { serverId: untested.body.id, allowedTools: null, serverName: 'ignored' },
    ]);
    assert.equal(set.status, 200, set.text);
    assert.deepEqual(set.body, [
      { serverId: server.body.id, allowedTools: ['lookup', 'record'], serverName: 'granted' },
      { serverId: untested.body.id, allowedTools: null, serverName: 'untested' },
    ]);

    const ghost = await api.request('PUT', `/api/jobs/${job.body.id}/mcp-servers`, [
      { serverId: 'no-such-server', allowedTools: null },
    ]);
    assert.equal(ghost.status, 404);
    assert.equal(ghost.body.code, 'not_found');

    await api.delete(`/api/mcp-servers/${untested.body.id}`);
    assert.deepEqual(
      (await api.get(`/api/jobs/${job.body.id}/mcp-servers`)).body.map((g: { serverName: string }) => g.serverName),
      ['granted'],
    );
    const stale = await api.request('PUT', `/api/jobs/${job.body.id}/mcp-servers`, [
      { serverId: untested.body.id, allowedTools: null },
    ]);
    assert.equal(stale.status, 404);
    assert.match(stale.body.message, /MCP server not found/);

    assert.equal((await api.get('/api/jobs/no-such-job/mcp-servers')).status, 404);
  });
});

describe('access', () => {
  it('lists every MCP route in the access table, open to members with a session or a token', async () => {
    for (const key of [
      'GET /api/mcp-servers',
      'POST /api/mcp-servers',
      'GET /api/mcp-servers/:id',
      'PUT /api/mcp-servers/:id',
      'DELETE /api/mcp-servers/:id',
      'POST /api/mcp-servers/:id/test',
      'GET /api/jobs/:id/mcp-servers',
      'PUT /api/jobs/:id/mcp-servers',
    ]) {
      assert.deepEqual(accessTable[key], { access: 'member', session: false }, key);
    }
    assert.equal(
      (await member.post('/api/mcp-servers', { name: 'by-member', transport: 'stdio', command: 'x' })).status,
      201,
    );
    assert.equal((await new Client(t.url).get('/api/mcp-servers')).body.code, 'not_signed_in');
    assert.equal((await new Client(t.url, { token: 'svc_wrong' }).get('/api/mcp-servers')).body.code, 'invalid_token');
  });

  it('keeps workspaces apart', async () => {
    const own = await api.post('/api/mcp-servers', { name: 'private-one', transport: 'stdio', command: 'x' });
    const ws = await member.post('/api/workspaces', { name: 'Elsewhere' });
    if (ws.status !== 201) return; // workspaces of one's own are not built yet; the scoping below needs one
    await member.post(`/api/workspaces/${ws.body.id}/switch`);
    assert.equal((await member.get(`/api/mcp-servers/${own.body.id}`)).status, 404);
  });
});
