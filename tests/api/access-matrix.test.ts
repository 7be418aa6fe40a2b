import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { accessTable, type AccessRule } from '../../api/access.js';
import { waitFor } from '../wait.js';
import { adminSession, Client, createToken, startTestServer, userSession, type TestServer } from './harness.js';

/**
 * The access matrix (docs/security.md, "Requests: validation cost, bounds, access"): every operation of the
 * OpenAPI document, called with every kind of credential, answers as the access table says. The document is the
 * source of routes, so a new route without a row in api/access.ts fails here. Handlers may still refuse the
 * dummy input (400, 404); what is checked is who gets past authentication and authorization.
 */

type Role = 'member' | 'admin' | 'owner';
interface Caller {
  client: Client;
  /** The role its credential acts with; null when it is no valid credential. */
  role: Role | null;
  instanceAdmin: boolean;
  session: boolean;
  /** What a route that needs a credential answers when this one is not valid. */
  refused?: 'not_signed_in' | 'invalid_token';
}

let t: TestServer;
let doc: {
  paths: Record<
    string,
    Record<
      string,
      {
        parameters?: { name: string; in: string; schema: { type?: string } }[];
        'x-access': { role: string; session: boolean; token?: boolean };
      }
    >
  >;
};
const callers: Record<string, Caller> = {};

/** Polls until `client` is refused, the condition an expiring token is waited on. */
async function untilRefused(client: Client): Promise<void> {
  await waitFor('the token to expire', async () => (await client.get('/api/users/me')).status === 401, {
    intervalMs: 50,
  });
}

before(async () => {
  // Workspaces enabled: the (B) rules, where members can be removed and can leave.
  t = await startTestServer({ SVC_WORKSPACES_ENABLED: 'true' });
  // The instance admin owns the default workspace; the others join it through invites to their (verified) emails.
  const iadmin = await adminSession(t, 'iadmin@example.com');
  for (const [email, role] of [
    ['member@example.com', 'member'],
    ['admin@example.com', 'admin'],
  ])
    assert.equal((await iadmin.post('/api/workspace/invites', { email, role })).status, 201);
  const member = await userSession(t, iadmin, 'member@example.com');
  const admin = await userSession(t, iadmin, 'admin@example.com');
  assert.equal((await iadmin.patch(`/api/workspace/members/${admin.userId}`, { role: 'admin' })).status, 200);

  const expiring = await createToken(member.client, 'expiring', Date.now() + 1_000);
  const revoked = await createToken(admin.client, 'revoked');
  assert.equal((await admin.client.delete(`/api/tokens/${revoked.id}`)).status, 204);
  const job = await member.client.post<{ id: string }>('/api/jobs', { name: 'hooked', instruction: 'x' });
  const hook = await member.client.post<{ token: string }>(`/api/jobs/${job.body.id}/webhook-token`);
  assert.equal(hook.status, 201);

  const none = { role: null, instanceAdmin: false, session: false } as const;
  callers['none'] = { client: new Client(t.url), ...none, refused: 'not_signed_in' };
  callers['bad token'] = {
    client: new Client(t.url, { token: 'svc_not-a-real-token' }),
    ...none,
    refused: 'invalid_token',
  };
  callers['not a bearer header'] = { client: new Client(t.url), ...none, refused: 'invalid_token' };
  callers['forged session cookie'] = {
    client: new Client(t.url, { cookie: 'svc_session=eyJ1IjoiYWRtaW4ifQ.forged' }),
    ...none,
    refused: 'not_signed_in',
  };
  callers['expired token'] = { client: expiring.client, ...none, refused: 'invalid_token' };
  callers['revoked token'] = { client: revoked.client, ...none, refused: 'invalid_token' };
  callers['webhook token'] = {
    client: new Client(t.url, { token: hook.body.token }),
    ...none,
    refused: 'invalid_token',
  };
  callers['member session'] = { client: member.client, role: 'member', instanceAdmin: false, session: true };
  callers['member token'] = {
    client: (await createToken(member.client)).client,
    role: 'member',
    instanceAdmin: false,
    session: false,
  };
  callers['admin session'] = { client: admin.client, role: 'admin', instanceAdmin: false, session: true };
  callers['admin token'] = {
    client: (await createToken(admin.client)).client,
    role: 'admin',
    instanceAdmin: false,
    session: false,
  };
  callers['instance admin (owner) session'] = { client: iadmin, role: 'owner', instanceAdmin: true, session: true };
  // A token carries the role of its membership only: an instance admin's token has no instance admin rights.
  callers['instance admin (owner) token'] = {
    client: (await createToken(iadmin)).client,
    role: 'owner',
    instanceAdmin: false,
    session: false,
  };
  await untilRefused(expiring.client);

  doc = (await callers['none'].client.get('/api/openapi.json')).body;
});
after(async () => t?.stop());

const rank: Record<Role, number> = { member: 1, admin: 2, owner: 3 };
/**
 * Public routes that check a credential of their own (a webhook token) and answer invalid_token for it. The
 * sign-in routes (a link, a login callback) redirect every refusal to the login page instead.
 */
const ownCredential = new Set(['POST /hooks/:jobId']);
/** Server-sent-event routes stay open: only the status and the first bytes are read. */
const streaming = new Set(['GET /api/runs/:id/stream', 'GET /api/events']);
/**
 * End the caller's session or membership: called only by callers that hold none (leaving is tested in
 * tests/api/workspaces.test.ts).
 */
const endsSession = new Set(['POST /api/auth/logout', 'POST /api/workspace/leave']);

type Outcome = 'ok' | 'not_signed_in' | 'invalid_token' | 'forbidden';

function expected(rule: AccessRule, caller: Caller): Outcome {
  if (rule.access === 'public') return 'ok';
  if (caller.role === null) return caller.refused!;
  // Token routes (the MCP endpoint) read no cookie: a session is no credential there.
  if (rule.token && caller.session) return 'not_signed_in';
  if (rule.session && !caller.session) return 'forbidden';
  if (rule.access === 'iadmin') return caller.instanceAdmin ? 'ok' : 'forbidden';
  return rank[caller.role] >= rank[rule.access] ? 'ok' : 'forbidden';
}

function headersOf(name: string, client: Client): Record<string, string> {
  const h: Record<string, string> = {};
  if (name === 'not a bearer header') h.authorization = 'Basic YWRtaW46YWRtaW4=';
  if (client.credential && 'cookie' in client.credential) h.cookie = client.credential.cookie;
  if (client.credential && 'token' in client.credential) h.authorization = `Bearer ${client.credential.token}`;
  return h;
}

async function call(
  name: string,
  caller: Caller,
  key: string,
  method: string,
  path: string,
): Promise<{ status: number; code: string | undefined }> {
  const headers = headersOf(name, caller.client);
  const abort = new AbortController();
  const hasBody = method !== 'GET' && method !== 'DELETE';
  if (hasBody) headers['content-type'] = 'application/json';
  const res = await fetch(caller.client.base + path, {
    method,
    headers,
    body: hasBody ? '{}' : undefined,
    redirect: 'manual',
    signal: abort.signal,
  });
  let code: string | undefined;
  if (res.headers.get('content-type')?.includes('json')) code = ((await res.json()) as { code?: string }).code;
  else if (!streaming.has(key)) await res.arrayBuffer();
  abort.abort();
  return { status: res.status, code };
}

describe('access matrix', () => {
  it('has a row in the access table for every operation of the OpenAPI document, with the same access', () => {
    const missing: string[] = [];
    let operations = 0;
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        operations++;
        const key = `${method.toUpperCase()} ${path.replace(/\{([^}]+)\}/g, ':$1')}`;
        const rule = accessTable[key];
        if (!rule) missing.push(`${key} has no row in api/access.ts`);
        else if (
          op['x-access'].role !== rule.access ||
          op['x-access'].session !== rule.session ||
          (op['x-access'].token ?? false) !== (rule.token ?? false)
        )
          missing.push(`${key}: the document says ${JSON.stringify(op['x-access'])}`);
      }
    }
    assert.ok(operations > 60, `only ${operations} operations in the document`);
    assert.deepEqual(missing, []);
  });

  it('answers every operation as the table says, for every credential kind and role', async (tc) => {
    const failures: string[] = [];
    let calls = 0;
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        const upper = method.toUpperCase();
        const key = `${upper} ${path.replace(/\{([^}]+)\}/g, ':$1')}`;
        const rule = accessTable[key];
        if (!rule) continue; // reported by the test above
        // Path parameters that exist nowhere: a handler that gets this far answers 404 or 400, never acts.
        const types = new Map((op.parameters ?? []).filter((p) => p.in === 'path').map((p) => [p.name, p.schema.type]));
        const url = path.replace(/\{([^}]+)\}/g, (_m, name: string) =>
          types.get(name) === 'integer' ? '987654' : '00000000-0000-7000-8000-00000000beef',
        );
        for (const [name, caller] of Object.entries(callers)) {
          if (endsSession.has(key) && caller.role !== null) continue;
          calls++;
          const res = await call(name, caller, key, upper, url);
          const want = expected(rule, caller);
          const refusal =
            res.code === 'not_signed_in' ||
            res.code === 'forbidden' ||
            (res.code === 'invalid_token' && !ownCredential.has(key));
          const got: Outcome = refusal ? (res.code as Outcome) : 'ok';
          if (got !== want) failures.push(`${key} as ${name}: expected ${want}, got ${res.status} ${res.code ?? ''}`);
          const status = { ok: null, not_signed_in: 401, invalid_token: 401, forbidden: 403 }[want];
          if (status !== null && res.status !== status)
            failures.push(`${key} as ${name}: status ${res.status}, expected ${status}`);
          if (want === 'ok' && res.status >= 500) failures.push(`${key} as ${name}: ${res.status}`);
        }
      }
    }
    tc.diagnostic(`${calls} calls over ${Object.keys(callers).length} credential kinds`);
    assert.ok(calls > 600, `only ${calls} calls`);
    assert.deepEqual(failures, []);
  });
});
