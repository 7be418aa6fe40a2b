import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { AddressRefused, guardedFetch } from '../../adapters/egress/guarded-fetch.js';
import { clientFor, discover } from '../../adapters/mcp/oauth-flow.js';
import type { ResolvedConfig } from '../../adapters/mcp/connection.js';
import { adminSession, Client, startTestServer, userSession, type TestServer } from './harness.js';

/**
 * One outbound address rule at save and at dial (docs/design.md "Outbound addresses"): MCP server URLs (create and
 * replace, by a plain member) and the notification webhook, on a server with SVC_ALLOW_PRIVATE_NETWORK_TARGETS off
 * and one with it on; and the guarded fetch that every host-side dial goes through, against a real local server.
 */
const metadata = [
  'http://169.254.169.254/latest/meta-data/',
  'http://2852039166/',
  'http://0xa9.0xfe.0xa9.0xfe/',
  'http://0251.0376.0251.0376/',
  'http://169.254.43518/',
  'http://[::ffff:169.254.169.254]/',
  'http://[::ffff:0:a9fe:a9fe]/',
  'http://[64:ff9b::a9fe:a9fe]/',
  'http://[64:ff9b:1::a9fe:a9fe]/',
  'http://[2002:a9fe:a9fe::]/',
  'http://[fd00:ec2::254]/',
  'http://0.0.0.0/',
];
const local = [
  'http://127.0.0.1:9/mcp',
  'http://127.1/',
  'http://2130706433/',
  'http://0x7f000001/',
  'http://[::1]/',
  'http://[::ffff:7f00:1]/',
  'http://localhost:9/',
  'http://10.1.2.3/',
  'http://[fd12::1]/',
];

interface Guarded {
  t: TestServer;
  admin: Client;
  member: Client;
}

async function start(allowPrivate: boolean): Promise<Guarded> {
  // The switch is read when a server starts.
  const before = process.env.SVC_ALLOW_PRIVATE_NETWORK_TARGETS;
  process.env.SVC_ALLOW_PRIVATE_NETWORK_TARGETS = String(allowPrivate);
  try {
    const t = await startTestServer({ SVC_ROLES: 'api,projector' });
    const admin = await adminSession(t);
    const member = (await userSession(t, admin, `member-${allowPrivate}@example.com`)).client;
    return { t, admin, member };
  } finally {
    if (before === undefined) delete process.env.SVC_ALLOW_PRIVATE_NETWORK_TARGETS;
    else process.env.SVC_ALLOW_PRIVATE_NETWORK_TARGETS = before;
  }
}

const server = (name: string, url: string) => ({ name, transport: 'http', url });

function assertRefused(res: { status: number; body: any; text: string }, field: string, what: string): void {
  assert.equal(res.status, 400, `${what}: ${res.text}`);
  assert.equal(res.body.code, 'validation_failed', what);
  assert.equal(res.body.fields[0].field, field, what);
  assert.equal(res.body.fields[0].code, 'not_allowed', what);
}

describe('outbound addresses at save', () => {
  let off: Guarded;
  let on: Guarded;
  before(async () => {
    off = await start(false);
    on = await start(true);
  });
  after(async () => {
    await off?.t.stop();
    await on?.t.stop();
  });

  it('refuses MCP server URLs naming metadata, link-local or unspecified addresses, switch or not', async () => {
    for (const g of [off, on]) {
      for (const [i, url] of metadata.entries())
        assertRefused(await g.member.post('/api/mcp-servers', server(`meta${i}`, url)), 'url', url);
      const listed = (await g.member.get('/api/mcp-servers')).body.items as Array<{ name: string }>;
      assert.ok(!listed.some((s) => s.name.startsWith('meta')), 'nothing refused was saved');
    }
  });

  it('refuses loopback and private MCP server URLs without the switch, takes them with it', async () => {
    for (const [i, url] of local.entries()) {
      assertRefused(await off.member.post('/api/mcp-servers', server(`local${i}`, url)), 'url', url);
      assert.equal((await on.member.post('/api/mcp-servers', server(`local${i}`, url))).status, 201, url);
    }
  });

  it('applies the same check when a server is replaced', async () => {
    for (const g of [off, on]) {
      const created = await g.member.post<{ id: string }>(
        '/api/mcp-servers',
        server('replaced', 'https://mcp.example.com/mcp'),
      );
      assert.equal(created.status, 201, created.text);
      for (const url of ['http://169.254.169.254/', 'http://[::ffff:a9fe:a9fe]/', 'http://[64:ff9b:1::a9fe:a9fe]/']) {
        assertRefused(
          await g.member.request('PUT', `/api/mcp-servers/${created.body.id}`, server('replaced', url)),
          'url',
          url,
        );
      }
      assert.equal(
        (await g.member.get(`/api/mcp-servers/${created.body.id}`)).body.url,
        'https://mcp.example.com/mcp',
        'unchanged',
      );
    }
  });

  it('refuses notification webhooks by the same rule', async () => {
    for (const g of [off, on]) {
      for (const url of metadata)
        assertRefused(await g.admin.patch('/api/settings', { notifyWebhookUrl: url }), 'notifyWebhookUrl', url);
    }
    for (const url of local) {
      assertRefused(await off.admin.patch('/api/settings', { notifyWebhookUrl: url }), 'notifyWebhookUrl', url);
      assert.equal((await on.admin.patch('/api/settings', { notifyWebhookUrl: url })).status, 200, url);
    }
  });

  it('takes names, which are judged when they are dialled', async () => {
    assert.equal(
      (await off.member.post('/api/mcp-servers', server('named', 'https://mcp.example.com/sse'))).status,
      201,
    );
    assert.equal(
      (await off.admin.patch('/api/settings', { notifyWebhookUrl: 'https://hooks.example.com/T1' })).status,
      200,
    );
  });
});

describe('outbound addresses at dial', () => {
  let local: Server;
  let port: number;
  before(async () => {
    local = createServer((_req, res) => res.end('reached'));
    await new Promise<void>((resolve) => local.listen(0, '127.0.0.1', resolve));
    port = (local.address() as AddressInfo).port;
  });
  after(() => new Promise<void>((resolve) => local.close(() => resolve())));

  it('refuses a name that resolves to loopback without the switch, and reaches it with it', async () => {
    await assert.rejects(
      guardedFetch(false)(`http://localhost:${port}/`),
      (err: Error) => err instanceof AddressRefused && /SVC_ALLOW_PRIVATE_NETWORK_TARGETS=true/.test(err.message),
    );
    assert.equal(await (await guardedFetch(true)(`http://localhost:${port}/`)).text(), 'reached');
  });

  it('refuses every embedded or odd spelling of a loopback literal without the switch', async () => {
    for (const host of ['127.0.0.1', '127.1', '2130706433', '0x7f.0.0.1', '[::ffff:7f00:1]', '[::ffff:127.0.0.1]']) {
      await assert.rejects(guardedFetch(false)(`http://${host}:${port}/`), AddressRefused, host);
    }
  });

  it('refuses metadata forms at dial even with the switch', async () => {
    for (const host of [
      '169.254.169.254',
      '[::ffff:a9fe:a9fe]',
      '[::ffff:0:a9fe:a9fe]',
      '[64:ff9b::a9fe:a9fe]',
      '[64:ff9b:1::a9fe:a9fe]',
      '[fd00:ec2::254]',
    ]) {
      await assert.rejects(guardedFetch(true, 2_000)(`http://${host}/`), AddressRefused, host);
    }
  });
});

describe('outbound addresses: OAuth endpoints an MCP server advertises', () => {
  let resource: Server;
  let base: string;
  /** Where the protected resource says its authorization server is, and what that server's metadata lists. */
  let authorizationServer = '';
  const metadataTarget = 'http://169.254.169.254';
  before(async () => {
    resource = createServer((req, res) => {
      const json = (body: unknown) =>
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      if (req.url === '/mcp')
        return res
          .writeHead(401, {
            'www-authenticate': `Bearer resource_metadata="${base}/.well-known/oauth-protected-resource/mcp"`,
          })
          .end();
      if (req.url?.startsWith('/.well-known/oauth-protected-resource'))
        return json({ resource: `${base}/mcp`, authorization_servers: [authorizationServer] });
      if (
        req.url?.startsWith('/.well-known/oauth-authorization-server') ||
        req.url?.startsWith('/.well-known/openid-configuration')
      ) {
        return json({
          issuer: base,
          authorization_endpoint: `${base}/authorize`,
          token_endpoint: `${metadataTarget}/token`,
          registration_endpoint: `${metadataTarget}/register`,
          response_types_supported: ['code'],
          code_challenge_methods_supported: ['S256'],
        });
      }
      res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => resource.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(resource.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((resolve) => resource.close(() => resolve())));

  /** The guarded fetch (loopback allowed, as an operator with a local MCP server would), noting what it refused. */
  function recording(): { fetch: FetchLike; refused: string[] } {
    const refused: string[] = [];
    const inner = guardedFetch(true, 2_000);
    const fetch: FetchLike = async (url, init) => {
      try {
        return await inner(url, init);
      } catch (err) {
        if (err instanceof AddressRefused) refused.push(String(url));
        throw err;
      }
    };
    return { fetch, refused };
  }

  const config = (): ResolvedConfig => ({
    name: 'oauth',
    description: '',
    transport: 'http',
    command: null,
    args: [],
    env: {},
    url: `${base}/mcp`,
    headers: {},
    oauth: null,
    enabled: true,
  });

  it('never fetches a discovered authorization server on a metadata address', async () => {
    authorizationServer = metadataTarget;
    const { fetch, refused } = recording();
    assert.equal(await discover(config(), fetch), null, 'no login is offered');
    assert.ok(
      refused.length > 0 && refused.every((u) => u.startsWith(metadataTarget)),
      `refused: ${refused.join(', ')}`,
    );
  });

  it('never registers a client at a discovered registration endpoint on a metadata address', async () => {
    authorizationServer = base;
    const { fetch, refused } = recording();
    const found = await discover(config(), fetch);
    assert.ok(found, 'the local authorization server is found');
    assert.equal(found.metadata.registration_endpoint, `${metadataTarget}/register`);
    await assert.rejects(clientFor(config(), found, 'http://127.0.0.1/callback', fetch));
    assert.deepEqual(refused, [`${metadataTarget}/register`]);
  });
});
