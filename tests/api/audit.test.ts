import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { systemContext, type CommandContext } from '../../app/commands.js';
import { Jobs } from '../../app/jobs.js';
import { waitFor } from '../wait.js';
import { adminSession, Client, createToken, startTestServer, userSession, type TestServer } from './harness.js';

/**
 * The audit trail and time travel (docs/events.md, "Audit trail"; docs/api.md, "Time travel"): entries name the right
 * actor and summary, filters narrow them, only admins read the workspace's trail, another workspace's changes never
 * show, and no secret value or token appears anywhere in what it answers.
 */
let t: TestServer;
let admin: Client;
let adminId: string;
let member: Client;
let token: { client: Client; token: string; id: string };
let jobId: string;
let foreignJob: string;
const secretValue = 'audit-canary-7f3e9b1c-do-not-leak';
let webhookToken: string;

interface Entry {
  id: string;
  at: number;
  actor: { type: string; id: string | null; name: string | null };
  type: string;
  summary: string;
  streamId: string;
  revision: number;
  jobId: string | null;
}

async function trail(client: Client, query = ''): Promise<{ items: Entry[]; total: number }> {
  const res = await client.get<{ items: Entry[]; total: number }>(`/api/audit?pageSize=100${query}`);
  assert.equal(res.status, 200, res.text);
  return res.body;
}

/** Every page of the trail, as text: what an auditor could ever read. */
async function everything(client: Client, path: string): Promise<string> {
  let text = '';
  for (let page = 1; ; page++) {
    const res = await client.get<{ items: Entry[]; total: number }>(`${path}?pageSize=100&page=${page}`);
    assert.equal(res.status, 200, res.text);
    text += res.text;
    if (page * 100 >= res.body.total) return text;
  }
}

/** Waits until the clock has moved past `ms`, so the next change is decided at a later instant than `ms`. */
const after_ = (ms: number) => waitFor(`the clock to pass ${ms}`, () => Date.now() > ms);

before(async () => {
  t = await startTestServer({ SVC_ROLES: 'api,projector' });
  admin = await adminSession(t);
  adminId = (await admin.get<{ id: string }>('/api/users/me')).body.id;
  member = (await userSession(t, admin, 'auditee@example.com')).client;
  token = await createToken(admin, 'deploy bot');

  const created = await token.client.post<{ id: string }>('/api/jobs', { name: 'Audited job', instruction: 'v1' });
  assert.equal(created.status, 201, created.text);
  jobId = created.body.id;
  const secret = await admin.post<{ id: string }>('/api/secrets', { name: 'AUDIT_KEY', value: secretValue });
  assert.equal(secret.status, 201, secret.text);
  const mapped = await admin.request('PUT', `/api/jobs/${jobId}/secrets`, [
    { secretId: secret.body.id, envName: 'AUDIT_KEY' },
  ]);
  assert.equal(mapped.status, 200, mapped.text);
  const hook = await admin.post<{ token: string }>(`/api/jobs/${jobId}/webhook-token`);
  assert.equal(hook.status, 201, hook.text);
  webhookToken = hook.body.token;
  assert.equal((await admin.request('PUT', `/api/jobs/${jobId}/state/cursor`, { value: secretValue })).status, 200);

  // Another workspace's job, made through the service as the tenancy test does: its changes must never show.
  const s = t.server.services;
  const foreignCtx: CommandContext = { ...systemContext, workspaceId: 'another-workspace' };
  const jobs = new Jobs(s.bus, s.playbooks, s.runs, (position) => s.engine.waitFor(position));
  foreignJob = await jobs.create(foreignCtx, 'another-workspace', { name: 'Foreign secret job', instruction: 'x' });
});
after(async () => t?.stop());

describe('GET /api/audit', () => {
  it('lists known changes with their actor, summary, stream and revision, newest first', async () => {
    const { items } = await trail(admin);
    const created = items.find((e) => e.type === 'JobCreated' && e.jobId === jobId);
    assert.ok(created, JSON.stringify(items.map((e) => e.type)));
    assert.deepEqual(created.actor, { type: 'token', id: token.id, name: 'deploy bot' });
    assert.equal(created.summary, 'Created job "Audited job"');
    assert.equal(created.streamId, `job-${jobId}`);
    assert.equal(created.revision, 0);

    const secret = items.find((e) => e.type === 'SecretCreated');
    assert.equal(secret?.summary, 'Created secret "AUDIT_KEY"');
    assert.equal(secret?.actor.type, 'user');
    assert.equal(secret?.actor.id, adminId);
    assert.equal(secret?.actor.name, 'admin@example.com');
    assert.equal(items.find((e) => e.type === 'JobSecretsSet')?.summary, 'Mapped secrets to 1 variable: AUDIT_KEY');
    assert.equal(items.find((e) => e.type === 'JobWebhookTokenSet')?.summary, 'Issued a new webhook token');
    assert.equal(items.find((e) => e.type === 'ApiTokenCreated')?.summary, 'Created API token "deploy bot"');

    const times = items.map((e) => e.at);
    assert.deepEqual(
      times,
      [...times].sort((a, b) => b - a),
      'newest first',
    );
    assert.ok(!items.some((e) => e.type === 'ApiTokenUsed'), 'usage bookkeeping is not a change');
  });

  it('filters by job, actor, event type and time range', async () => {
    const byJob = await trail(admin, `&job=${jobId}`);
    assert.ok(byJob.items.length >= 4);
    assert.ok(byJob.items.every((e) => e.jobId === jobId));

    const byToken = await trail(admin, '&actor=token');
    assert.ok(byToken.items.length >= 1);
    assert.ok(byToken.items.every((e) => e.actor.type === 'token'));
    const byTokenId = await trail(admin, `&actorId=${token.id}`);
    assert.deepEqual(
      byTokenId.items.map((e) => e.id),
      byToken.items.map((e) => e.id),
    );

    const byType = await trail(admin, '&type=SecretCreated,JobSecretsSet');
    assert.deepEqual(byType.items.map((e) => e.type).sort(), ['JobSecretsSet', 'SecretCreated']);

    const all = await trail(admin);
    const created = all.items.find((e) => e.type === 'JobCreated' && e.jobId === jobId)!;
    const window = await trail(admin, `&from=${created.at}&to=${created.at + 1}`);
    assert.ok(window.items.some((e) => e.id === created.id));
    assert.ok(window.items.every((e) => e.at === created.at));
    assert.equal((await trail(admin, `&to=${created.at}`)).items.filter((e) => e.id === created.id).length, 0);

    const searched = await trail(admin, '&search=audit_key');
    assert.ok(searched.items.length >= 2 && searched.items.every((e) => /audit_key/i.test(e.summary)));
    const oldestFirst = await trail(admin, '&sort=at');
    assert.deepEqual(
      oldestFirst.items.map((e) => e.at),
      [...oldestFirst.items.map((e) => e.at)].sort((a, b) => a - b),
    );
  });

  it('refuses malformed filters naming the field', async () => {
    for (const [query, field] of [
      ['actor=robot', 'actor'],
      ['type=job;drop', 'type'],
      ['from=yesterday', 'from'],
      ['to=-1', 'to'],
      ['sort=summary', 'sort'],
      ['pageSize=1000', 'pageSize'],
      [`job=${'j,'.repeat(1001)}`, 'job'],
      [`actorId=${'a'.repeat(101)}`, 'actorId'],
      [`search=${'s'.repeat(201)}`, 'search'],
      [`type=${Array.from({ length: 40 }, (_, i) => `Type${String.fromCharCode(65 + (i % 26))}x`).join(',')}`, 'type'],
    ] as const) {
      const res = await admin.get(`/api/audit?${query}`);
      assert.equal(res.status, 400, `${query}: ${res.text}`);
      assert.equal(res.body.code, 'validation_failed');
      assert.ok(
        res.body.fields.some((f: { field: string }) => f.field === field),
        `${query} names ${field}: ${res.text}`,
      );
    }
  });

  it('is for admins: a member gets 403', async () => {
    const res = await member.get('/api/audit');
    assert.equal(res.status, 403, res.text);
    assert.equal(res.body.code, 'forbidden');
  });

  it("never shows another workspace's changes", async () => {
    const text = await everything(admin, '/api/audit');
    assert.ok(!text.includes(foreignJob), 'the foreign job id');
    assert.ok(!text.includes('Foreign secret job'), 'the foreign job name');
    assert.equal((await trail(admin, `&job=${foreignJob}`)).total, 0);
    assert.equal((await admin.get(`/api/jobs/${foreignJob}/history`)).status, 404);
  });

  it('never shows a secret value, an API token, a webhook token or a token hash', async () => {
    const text = (await everything(admin, '/api/audit')) + (await everything(admin, `/api/jobs/${jobId}/history`));
    assert.ok(text.includes('AUDIT_KEY'), 'the scan reads the entries about the secret');
    for (const [what, value] of [
      ['secret value', secretValue],
      ['API token', token.token],
      ['webhook token', webhookToken],
    ] as const)
      assert.ok(!text.includes(value), `the ${what} appears in the trail`);
    assert.ok(!/"(sealed|tokenHash|secretHash|apiKeySealed)"/.test(text), 'a sealed or hashed field appears');
    assert.ok(!/[0-9a-f]{64}/.test(text), 'something shaped like a SHA-256 hash appears');
  });
});

describe('GET /api/jobs/{id}/history', () => {
  it("lists the job's changes across its streams, newest first", async () => {
    const res = await member.get<{ items: Entry[]; total: number }>(`/api/jobs/${jobId}/history?pageSize=100`);
    assert.equal(res.status, 200, res.text);
    const streams = new Set(res.body.items.map((e) => e.streamId.split('-')[0]));
    assert.deepEqual([...streams].sort(), ['job', 'jobsecrets', 'jobstate']);
    assert.equal(res.body.items.at(-1)?.type, 'JobCreated', 'the oldest is last');
    assert.ok(res.body.items.some((e) => e.type === 'JobStateSet' && e.summary.startsWith('Set state key "cursor"')));
    const paged = await member.get<{ items: Entry[]; total: number }>(`/api/jobs/${jobId}/history?pageSize=1&page=2`);
    assert.equal(paged.body.items[0]?.id, res.body.items[1]?.id);
    assert.equal(paged.body.total, res.body.total);
  });

  it('answers 404 for a missing or archived job', async () => {
    assert.equal((await admin.get('/api/jobs/no-such-job/history')).status, 404);
    const gone = await admin.post<{ id: string }>('/api/jobs', { name: 'Gone', instruction: 'x' });
    assert.equal((await admin.delete(`/api/jobs/${gone.body.id}`)).status, 204);
    assert.equal((await admin.get(`/api/jobs/${gone.body.id}/history`)).status, 404);
  });
});

describe('time travel', () => {
  it('answers the job and its playbook as they were at each instant', async () => {
    const before = Date.now();
    await after_(before);
    const made = await admin.post<{ id: string }>('/api/jobs', { name: 'Traveller', instruction: 'first' });
    assert.equal(made.status, 201, made.text);
    const id = made.body.id;
    const instants: Array<{ at: number; instruction: string; learnings: string[]; version: number }> = [];
    const mark = async (instruction: string, learnings: string[], version: number) => {
      const at = Date.now();
      instants.push({ at, instruction, learnings, version });
      await after_(at);
    };
    await mark('first', [], 0);
    for (const n of [2, 3, 4]) {
      const patched = await admin.patch(`/api/jobs/${id}`, { instruction: `change ${n}` });
      assert.equal(patched.status, 200, patched.text);
      const learnings = Array.from({ length: n - 1 }, (_, i) => `lesson ${i + 1}`);
      const put = await admin.request('PUT', `/api/jobs/${id}/playbook`, {
        content: { learnings: learnings.map((text) => ({ text })) },
      });
      assert.equal(put.status, 200, put.text);
      await mark(`change ${n}`, learnings, n - 1);
    }

    const now = await admin.get(`/api/jobs/${id}`);
    for (const want of instants) {
      const job = await admin.get(`/api/jobs/${id}?at=${want.at}`);
      assert.equal(job.status, 200, job.text);
      assert.equal(job.body.instruction, want.instruction, `instruction at ${want.at}`);
      assert.equal(job.body.playbookVersion, want.version);
      assert.deepEqual(Object.keys(job.body).sort(), Object.keys(now.body).sort(), 'the same DTO shape');
      const playbook = await admin.get(`/api/jobs/${id}/playbook?at=${want.at}`);
      assert.equal(playbook.status, 200, playbook.text);
      assert.equal(playbook.body.version, want.version);
      assert.deepEqual(
        playbook.body.content.learnings.map((l: { text: string }) => l.text),
        want.learnings,
      );
    }
    // The latest instant answers what the read model answers today.
    const latest = await admin.get(`/api/jobs/${id}?at=${instants.at(-1)!.at}`);
    assert.deepEqual(latest.body, now.body);
    const latestPlaybook = await admin.get(`/api/jobs/${id}/playbook?at=${instants.at(-1)!.at}`);
    assert.deepEqual(latestPlaybook.body, (await admin.get(`/api/jobs/${id}/playbook`)).body);

    const early = await admin.get(`/api/jobs/${id}?at=${before}`);
    assert.equal(early.status, 404, early.text);
    assert.equal((await admin.get(`/api/jobs/${id}/playbook?at=${before}`)).status, 404);
  });

  it('refuses an instant in the future or a malformed one, naming `at`', async () => {
    for (const at of [String(Date.now() + 60_000), 'yesterday', '-5', '1e30', '']) {
      for (const path of [`/api/jobs/${jobId}?at=${at}`, `/api/jobs/${jobId}/playbook?at=${at}`]) {
        const res = await admin.get(path);
        assert.equal(res.status, 400, `${path}: ${res.text}`);
        assert.equal(res.body.code, 'validation_failed');
        assert.deepEqual(
          res.body.fields.map((f: { field: string }) => f.field),
          ['at'],
          path,
        );
      }
    }
  });

  it("answers another workspace's job as not found at any instant", async () => {
    assert.equal((await admin.get(`/api/jobs/${foreignJob}?at=${Date.now()}`)).status, 404);
    assert.equal((await admin.get(`/api/jobs/${foreignJob}/playbook?at=${Date.now()}`)).status, 404);
  });
});
