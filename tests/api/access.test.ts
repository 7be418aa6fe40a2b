import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { accessTable, type AccessRule } from '../../api/access.js';
import { adminSession, Client, createToken, startTestServer, userSession, type TestServer } from './harness.js';

/**
 * Walks the access table: every route, with every role and every kind of credential. Handlers may still refuse
 * the dummy input (400, 404); what is checked is that authentication and authorization answer as the table says.
 */
let t: TestServer;
const callers: Record<
  string,
  { client: Client; role: 'member' | 'admin' | 'owner' | null; admin: boolean; session: boolean }
> = {};

before(async () => {
  t = await startTestServer();
  const owner = await adminSession(t, 'owner@example.com');
  const member = await userSession(t, owner, 'member@example.com');
  const admin = await userSession(t, owner, 'admin@example.com');
  assert.equal((await owner.patch(`/api/workspace/members/${admin.userId}`, { role: 'admin' })).status, 200);
  callers['none'] = { client: new Client(t.url), role: null, admin: false, session: false };
  callers['bad token'] = {
    client: new Client(t.url, { token: 'svc_not-a-real-token' }),
    role: null,
    admin: false,
    session: false,
  };
  callers['member session'] = { client: member.client, role: 'member', admin: false, session: true };
  callers['member token'] = {
    client: (await createToken(member.client)).client,
    role: 'member',
    admin: false,
    session: false,
  };
  callers['admin session'] = { client: admin.client, role: 'admin', admin: false, session: true };
  callers['admin token'] = {
    client: (await createToken(admin.client)).client,
    role: 'admin',
    admin: false,
    session: false,
  };
  callers['instance admin session'] = { client: owner, role: 'owner', admin: true, session: true };
  callers['instance admin token'] = {
    client: (await createToken(owner)).client,
    role: 'owner',
    admin: false,
    session: false,
  };
});
after(async () => t.stop());

const rank = { member: 1, admin: 2, owner: 3 } as const;
/** Public routes that check a credential of their own (a webhook token) and answer invalid_token for it. */
const ownCredential = new Set(['/hooks/:jobId']);
/** Server-sent-event routes stay open: only the status and the first bytes are read. */
const streaming = new Set(['GET /api/runs/:id/stream', 'GET /api/events']);
/**
 * With workspaces disabled (this server) nobody leaves Default or is removed from it: these answer 403 past the access
 * check too (docs/design.md, "Identity"). The enabled rules are walked by the access matrix and the workspaces tests.
 */
const refusedWithoutWorkspaces = new Set(['POST /api/workspace/leave', 'DELETE /api/workspace/members/:userId']);

async function call(client: Client, key: string, method: string, path: string) {
  if (!streaming.has(key))
    return client.request(method, path, method === 'GET' || method === 'DELETE' ? undefined : {});
  const headers: Record<string, string> = {};
  if (client.credential && 'cookie' in client.credential) headers.cookie = client.credential.cookie;
  if (client.credential && 'token' in client.credential) headers.authorization = `Bearer ${client.credential.token}`;
  const abort = new AbortController();
  const res = await fetch(client.base + path, { headers, signal: abort.signal });
  const body = res.headers.get('content-type')?.includes('json') ? ((await res.json()) as unknown) : null;
  abort.abort();
  return { status: res.status, body };
}

function expected(
  rule: AccessRule,
  caller: (typeof callers)[string],
  name: string,
): 'ok' | 'not_signed_in' | 'invalid_token' | 'forbidden' {
  if (rule.access === 'public') return 'ok';
  if (name === 'bad token') return 'invalid_token';
  if (caller.role === null) return 'not_signed_in';
  // Token routes (the MCP endpoint) read no cookie: a session is no credential there.
  if (rule.token && caller.session) return 'not_signed_in';
  if (rule.session && !caller.session) return 'forbidden';
  if (rule.access === 'iadmin') return caller.admin ? 'ok' : 'forbidden';
  return rank[caller.role] >= rank[rule.access] ? 'ok' : 'forbidden';
}

describe('access table', () => {
  it('has a row for every route the app serves, and a route for every row', () => {
    const served = new Set<string>();
    for (const key of Object.keys(accessTable)) {
      const [method, url] = key.split(' ') as [string, string];
      assert.ok(t.server.app!.hasRoute({ method: method as 'GET', url }), `${key} is in the table but not served`);
      served.add(key);
    }
    assert.ok(served.size >= 15);
  });

  it('answers every route as the table says, for every role and credential kind', async () => {
    const failures: string[] = [];
    for (const [key, rule] of Object.entries(accessTable)) {
      const [method, url] = key.split(' ') as [string, string];
      if (key === 'POST /api/auth/logout') continue; // clears the caller's cookie; covered in identity tests
      const path = url.replace(/:[A-Za-z]+/g, '00000000-0000-7000-8000-00000000beef');
      for (const [name, caller] of Object.entries(callers)) {
        const res = await call(caller.client, key, method, path);
        const code: string | undefined =
          res.body && typeof res.body === 'object' ? (res.body as { code?: string }).code : undefined;
        const allowed = expected(rule, caller, name);
        const want = allowed === 'ok' && refusedWithoutWorkspaces.has(key) ? 'forbidden' : allowed;
        const got =
          code === 'not_signed_in' || code === 'forbidden' || (code === 'invalid_token' && !ownCredential.has(url))
            ? code
            : 'ok';
        if (got !== want) failures.push(`${key} as ${name}: expected ${want}, got ${res.status} ${code ?? ''}`);
        if (want === 'not_signed_in' || want === 'invalid_token') {
          if (res.status !== 401) failures.push(`${key} as ${name}: status ${res.status}, expected 401`);
        }
        if (want === 'forbidden' && res.status !== 403)
          failures.push(`${key} as ${name}: status ${res.status}, expected 403`);
      }
    }
    assert.deepEqual(failures, []);
  });
});
