import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { jobDecider, jobStreamId } from '../../domain/job.js';
import {
  adminSession,
  Client,
  createToken,
  foreignJobAndRun,
  startTestServer,
  userSession,
  type TestServer,
} from './harness.js';

/**
 * The tenant rule of the query layer (docs/api.md), tried from outside: ids of another workspace's job and run, and of
 * an archived job, sent to every route that takes one. Each must answer exactly like a missing id, and change nothing.
 */
let t: TestServer;
let session: Client;
let token: Client;
let own: string;
let archived: string;
let foreignJob: string;
let foreignRun: string;
const otherWorkspace = 'another-workspace';

before(async () => {
  // No runner: runs stay queued, so nothing but the routes under test changes them.
  t = await startTestServer({ SVC_ROLES: 'api,projector' });
  session = await adminSession(t);
  token = (await createToken(session)).client;
  ({ jobId: foreignJob, runId: foreignRun } = await foreignJobAndRun(t, otherWorkspace));

  const created = await session.post<{ id: string }>('/api/jobs', { name: 'Own job', instruction: 'Mine' });
  assert.equal(created.status, 201, created.text);
  own = created.body.id;
  const gone = await session.post<{ id: string }>('/api/jobs', { name: 'Archived job', instruction: 'Gone' });
  archived = gone.body.id;
  assert.equal((await session.delete(`/api/jobs/${archived}`)).status, 204);
});
after(async () => t.stop());

type Call = [method: string, path: string, body?: unknown];

/** Every route that takes a job id, with a body its schema accepts (so only the tenant check can refuse it). */
const jobCalls = (id: string): Call[] => [
  ['GET', `/api/jobs/${id}`],
  ['GET', `/api/jobs/${id}?at=${Date.now()}`],
  ['GET', `/api/jobs/${id}/history`],
  ['PATCH', `/api/jobs/${id}`, { name: 'Taken over' }],
  ['POST', `/api/jobs/${id}/runs`, {}],
  ['POST', `/api/jobs/${id}/webhook-token`, {}],
  ['GET', `/api/jobs/${id}/secrets`],
  ['PUT', `/api/jobs/${id}/secrets`, []],
  ['GET', `/api/jobs/${id}/mcp-servers`],
  ['PUT', `/api/jobs/${id}/mcp-servers`, []],
  ['GET', `/api/jobs/${id}/state`],
  ['GET', `/api/jobs/${id}/state/key`],
  ['PUT', `/api/jobs/${id}/state/key`, { value: 'v' }],
  ['DELETE', `/api/jobs/${id}/state/key`],
  ['GET', `/api/jobs/${id}/images`],
  ['GET', `/api/jobs/${id}/images/some-image`],
  ['POST', `/api/jobs/${id}/images/rebuild`, {}],
  ['GET', `/api/jobs/${id}/playbook`],
  ['GET', `/api/jobs/${id}/playbook?at=${Date.now()}`],
  ['PUT', `/api/jobs/${id}/playbook`, { content: {} }],
  ['GET', `/api/jobs/${id}/playbook/versions`],
  ['GET', `/api/jobs/${id}/playbook/versions/1`],
  ['POST', `/api/jobs/${id}/playbook/rollback`, { version: 0 }],
  ['GET', `/api/jobs/${id}/stats`],
  ['DELETE', `/api/jobs/${id}`],
];

const runCalls = (id: string): Call[] => [
  ['GET', `/api/runs/${id}`],
  ['POST', `/api/runs/${id}/cancel`, {}],
  ['POST', `/api/runs/${id}/retry`, {}],
  ['POST', `/api/runs/${id}/learn`, {}],
  ['GET', `/api/runs/${id}/events`],
  ['GET', `/api/runs/${id}/events/1`],
  ['GET', `/api/runs/${id}/stream`],
  ['GET', `/api/runs/${id}/artifacts`],
  ['GET', `/api/runs/${id}/artifact?path=out.txt`],
];

/**
 * Answers every call with both credential kinds and returns the ones that were not a plain 404 `not_found` from the
 * route itself. The router answers a path it does not know with the same code ("No route for ..."), so that answer
 * counts as wrong: a renamed route would otherwise pass here without its tenant check ever running.
 */
async function notFoundEverywhere(calls: Call[]): Promise<string[]> {
  const wrong: string[] = [];
  for (const client of [session, token])
    for (const [method, path, body] of calls) {
      const res = await client.request(method, path, body);
      const { code, message } = (res.body as { code?: string; message?: string } | null) ?? {};
      const routed = !message?.startsWith('No route for ');
      if (res.status !== 404 || code !== 'not_found' || !routed)
        wrong.push(`${method} ${path}: ${res.status} ${res.text}`);
    }
  return wrong;
}

describe('tenant rule', () => {
  it('answers a job of another workspace as not found on every job route, and leaves it unchanged', async () => {
    assert.deepEqual(await notFoundEverywhere(jobCalls(foreignJob)), []);
    const { state } = await t.server.services.bus.load(jobStreamId(foreignJob), jobDecider);
    assert.equal(state.status, 'active', 'the DELETE did not archive it');
    assert.equal(state.status === 'active' ? state.config.name : null, 'Foreign job', 'the PATCH did not rename it');
  });

  it('answers an archived job as not found on every job route', async () => {
    assert.deepEqual(await notFoundEverywhere(jobCalls(archived)), []);
  });

  it('answers a run of another workspace as not found on every run route, and leaves it queued', async () => {
    assert.deepEqual(await notFoundEverywhere(runCalls(foreignRun)), []);
    const run = await t.server.services.runs.find(otherWorkspace, foreignRun);
    assert.equal(run.status, 'queued', 'the cancel did not reach it');
  });

  it('lists neither foreign nor archived jobs, nor foreign runs, even when asked for them by id', async () => {
    const jobs = await session.get<{ items: Array<{ id: string }>; total: number }>('/api/jobs');
    assert.deepEqual(
      jobs.body.items.map((j) => j.id),
      [own],
    );
    const runs = await session.get<{ items: unknown[]; total: number }>(`/api/runs?job=${foreignJob}`);
    assert.equal(runs.status, 200);
    assert.equal(runs.body.total, 0);
    assert.deepEqual(runs.body.items, []);
  });

  it('still serves the caller its own job on the same routes', async () => {
    for (const path of [`/api/jobs/${own}`, `/api/jobs/${own}/state`, `/api/jobs/${own}/playbook`]) {
      const res = await session.get(path);
      assert.equal(res.status, 200, `${path}: ${res.text}`);
    }
  });

  it('refuses the webhook of an archived or foreign job like a wrong token', async () => {
    for (const id of [archived, foreignJob]) {
      const res = await new Client(t.url).request('POST', `/hooks/${id}`, {}, { authorization: 'Bearer svh_guess' });
      assert.equal(res.status, 401);
      assert.equal((res.body as { code: string }).code, 'invalid_token');
    }
  });
});

/**
 * Two real workspaces (workspaces enabled), each with its owner: every route the first owner calls with the second
 * workspace's ids (job, run, provider, model, secret, token, member, invite, the workspace itself) answers 404 and
 * changes nothing there.
 */
describe('two workspaces', () => {
  let w: TestServer;
  let a: Client;
  let b: Client;
  const ids: Record<string, string> = {};

  before(async () => {
    w = await startTestServer({ SVC_ROLES: 'api,projector', SVC_WORKSPACES_ENABLED: 'true' });
    const iadmin = await adminSession(w);
    a = (await userSession(w, iadmin, 'alice@example.com')).client;
    b = (await userSession(w, iadmin, 'bob@example.com')).client;
    ids.workspace = (await b.get('/api/users/me')).body.workspace.id;
    const job = await b.post<{ id: string }>('/api/jobs', { name: 'Bob job', instruction: 'x' });
    ids.job = job.body.id;
    ids.run = (await b.post<{ runId: string }>(`/api/jobs/${ids.job}/runs`, {})).body.runId;
    ids.provider = (await b.post<{ id: string }>('/api/providers', { name: 'Fake', kind: 'fake' })).body.id;
    ids.model = (await b.get('/api/models')).body.items[0].id;
    const secret = await b.post<{ id: string }>('/api/secrets', { name: 'BOB_KEY', value: 'bob-secret-value' });
    ids.secret = secret.body.id;
    ids.token = (await createToken(b)).id;
    const link = await b.post<{ url: string; invite: { id: string } }>('/api/workspace/invites', { role: 'member' });
    ids.invite = link.body.invite.id;
    ids.bob = (await b.get('/api/users/me')).body.id;
    for (const [name, id] of Object.entries(ids)) assert.ok(id, `${name} was created`);
  });
  after(async () => w?.stop());

  it("answers every route given the other workspace's ids with 404 and changes nothing", async () => {
    const calls: Call[] = [
      ...jobCalls(ids.job!).filter(([m]) => m !== 'DELETE'),
      ...runCalls(ids.run!),
      ['GET', `/api/providers/${ids.provider}`],
      ['PATCH', `/api/providers/${ids.provider}`, { name: 'Taken' }],
      ['POST', `/api/providers/${ids.provider}/sync`, {}],
      ['PATCH', `/api/models/${ids.model}`, { label: 'Taken' }],
      ['PUT', `/api/secrets/${ids.secret}`, { value: 'overwritten' }],
      ['DELETE', `/api/tokens/${ids.token}`],
      ['PATCH', `/api/workspace/members/${ids.bob}`, { role: 'member' }],
      ['DELETE', `/api/workspace/members/${ids.bob}`],
      ['DELETE', `/api/workspace/invites/${ids.invite}`],
      ['POST', `/api/workspace/transfer`, { userId: ids.bob }],
      ['POST', `/api/workspaces/${ids.workspace}/switch`, {}],
      ['DELETE', `/api/secrets/${ids.secret}`],
      ['DELETE', `/api/models/${ids.model}`],
      ['DELETE', `/api/providers/${ids.provider}`],
      ['DELETE', `/api/jobs/${ids.job}`],
    ];
    const wrong: string[] = [];
    for (const [method, path, body] of calls) {
      const res = await a.request(method, path, body);
      const { code, message } = (res.body as { code?: string; message?: string } | null) ?? {};
      if (res.status !== 404 || code !== 'not_found' || message?.startsWith('No route for '))
        wrong.push(`${method} ${path}: ${res.status} ${res.text}`);
    }
    assert.deepEqual(wrong, []);
    // Bob's workspace is as he left it.
    assert.equal((await b.get(`/api/jobs/${ids.job}`)).body.name, 'Bob job');
    assert.equal((await b.get(`/api/runs/${ids.run}`)).body.status, 'queued');
    assert.equal((await b.get(`/api/providers/${ids.provider}`)).body.name, 'Fake');
    assert.equal((await b.get('/api/tokens')).body.total, 1);
    assert.equal((await b.get('/api/workspace/invites')).body.total, 1);
    const members = await b.get('/api/workspace/members');
    assert.deepEqual(
      members.body.items.map((m: { userId: string; role: string }) => [m.userId, m.role]),
      [[ids.bob, 'owner']],
    );
    const lists = ['/api/jobs', '/api/runs', '/api/providers', '/api/secrets', '/api/tokens', '/api/workspace/invites'];
    for (const path of lists) {
      const res = await a.get(path);
      assert.ok(!res.text.includes(ids.job!) && !res.text.includes(ids.provider!), `${path} shows nothing of Bob's`);
    }
  });
});
