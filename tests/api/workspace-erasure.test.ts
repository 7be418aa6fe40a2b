import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, type Dirent } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { erasureProgressCollection, WorkspaceEraser } from '../../app/workspace-erasure.js';
import { workspaceErasureStreamId, workspaceStreamId } from '../../domain/workspace.js';
import { streams } from '../../domain/streams.js';
import { RunFiles } from '../../adapters/run-files.js';
import type { EventStore, RecordedEvent } from '../../store/event-store.js';
import { waitFor } from '../wait.js';
import {
  adminSession,
  Client,
  createToken,
  finishedRun,
  startTestServer,
  svcCli,
  userSession,
  type TestServer,
} from './harness.js';

/**
 * Deleting a workspace erases it for good (docs/design.md, "Workspace erasure"): its streams leave the log, so a
 * rebuild of the read models, a verification and the audit export give nothing of it back, and its secrets'
 * ciphertext leaves the database files. One data directory across restarts, as an operator's would be.
 */
const dataDir = mkdtempSync(join(tmpdir(), 'svc-erasure-'));
after(() => rmSync(dataDir, { recursive: true, force: true }));

function start(roles: string): Promise<TestServer> {
  return startTestServer({ SVC_ROLES: roles, SVC_WORKSPACES_ENABLED: 'true' }, dataDir);
}

/** Every event of the log: the data directories here hold a few thousand. */
async function wholeLog(events: EventStore): Promise<RecordedEvent[]> {
  return events.readAll();
}

/** What still names the workspace: events outside sessions (the user's) and the erasure record. */
function mentions(log: RecordedEvent[], workspaceId: string): string[] {
  return log
    .filter((e) => streams.session.keyOf(e.streamId) === null && e.streamId !== workspaceErasureStreamId(workspaceId))
    .filter((e) => JSON.stringify(e).includes(workspaceId))
    .map((e) => `${e.streamId} ${e.type}`);
}

/** Files of the data directory outside the databases that hold `text`: blobs left behind. */
function filesHolding(text: string): string[] {
  return (readdirSync(dataDir, { recursive: true, withFileTypes: true }) as Dirent[])
    .filter((d) => d.isFile() && !d.name.startsWith('events.db') && !d.name.startsWith('read.db'))
    .map((d) => join(d.parentPath ?? d.path, d.name))
    .filter((f) => readFileSync(f).includes(text));
}
const stateCanary = 'state-canary-9d2f4e1a';

/** The database files' bytes, write-ahead logs included: what someone with the disk would read. */
function diskBytes(): Buffer {
  const files = ['events.db', 'events.db-wal', 'read.db', 'read.db-wal'].map((f) => join(dataDir, f));
  return Buffer.concat(files.filter((f) => existsSync(f)).map((f) => readFileSync(f)));
}

async function erased(t: TestServer, workspaceId: string): Promise<void> {
  const events = t.server.services.stores.events;
  await waitFor(
    `workspace ${workspaceId} to be erased`,
    async () =>
      (await events.readStream(workspaceErasureStreamId(workspaceId))).length === 1 &&
      (await events.readStream(workspaceStreamId(workspaceId))).length === 0 &&
      (await t.server.services.stores.docs.collection('workspaces').count({ _id: workspaceId })) === 0 &&
      (await t.server.services.stores.docs.collection(erasureProgressCollection).count({})) === 0,
    { timeoutMs: 60_000 },
  );
}

async function cli(...args: string[]): Promise<{ code: number; out: string }> {
  try {
    const { stdout, stderr } = await svcCli([...args, '--data-dir', dataDir]);
    return { code: 0, out: stdout + stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, out: e.stdout + e.stderr };
  }
}

async function auditExport(): Promise<Array<Record<string, any>>> {
  const res = await cli('audit', 'export');
  assert.equal(res.code, 0, res.out);
  return res.out
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, any>);
}

/** The sealed values of the secrets written to a workspace, as the log holds them. */
async function sealedValues(events: EventStore, workspaceId: string): Promise<string[]> {
  return (await wholeLog(events))
    .filter((e) => streams.secret.keyOf(e.streamId) !== null && e.metadata.workspaceId === workspaceId)
    .map((e) => (e.data as { sealed?: string }).sealed)
    .filter((s): s is string => typeof s === 'string');
}

describe('workspace erasure', () => {
  // Filled by the first test, checked again by the later ones.
  const doomed = { id: '', name: `Doomed ${Math.random().toString(36).slice(2)}`, jobId: '', runId: '', token: '' };
  const kept = { jobId: '', secretId: '' };
  let sealed: string[] = [];

  it('erases every stream, record and file of a deleted workspace, and leaves the other alone', async () => {
    const t = await start('api,projector,runner,scheduler');
    try {
      const admin = await adminSession(t);
      kept.jobId = (await admin.post('/api/jobs', { name: 'Kept job', instruction: 'stay' })).body.id;
      kept.secretId = (await admin.post('/api/secrets', { name: 'KEPT', value: 'kept-secret-value' })).body.id;

      const owner = (await userSession(t, admin, 'doomed-owner@example.com')).client;
      const me = (await owner.get('/api/users/me')).body;
      doomed.id = me.workspace.id;
      assert.equal((await owner.patch('/api/workspace', { name: doomed.name })).status, 200);
      const provider = (await owner.post('/api/providers', { name: 'Fake', kind: 'fake' })).body.id;
      const model = (await owner.get('/api/models')).body.items.find(
        (m: { providerId: string }) => m.providerId === provider,
      ).id;
      assert.equal((await owner.patch('/api/settings', { agentModelId: model })).status, 200);
      const secret = await owner.post('/api/secrets', { name: 'DOOMED_KEY', value: 'doomed-secret-value-1' });
      assert.equal(secret.status, 201, secret.text);
      // A deleted secret: the read model forgets it, its stream (and ciphertext) would stay.
      const gone = await owner.post('/api/secrets', { name: 'ALREADY_GONE', value: 'doomed-secret-value-2' });
      assert.equal((await owner.delete(`/api/secrets/${gone.body.id}`)).status, 204);
      const job = await owner.post('/api/jobs', { name: 'Doomed job', instruction: 'Say it: `echo ok`' });
      assert.equal(job.status, 201, job.text);
      doomed.jobId = job.body.id;
      assert.equal(
        (await owner.request('PUT', `/api/jobs/${doomed.jobId}/secrets`, [{ secretId: secret.body.id, envName: 'K' }]))
          .status,
        200,
      );
      assert.equal(
        (await owner.request('PUT', `/api/jobs/${doomed.jobId}/state/cursor`, { value: 'doomed-state' })).status,
        200,
      );
      // Over the inline limit: the event keeps a reference and the value is a blob (docs/design.md, "Large payloads
      // out of line"), which must go with the workspace.
      const bigState = `${stateCanary}${'s'.repeat(200_000)}`;
      assert.equal(
        (await owner.request('PUT', `/api/jobs/${doomed.jobId}/state/big`, { value: bigState })).status,
        200,
      );
      assert.equal((await owner.get(`/api/jobs/${doomed.jobId}/state/big`)).body.value, bigState);
      const mcp = await owner.post('/api/mcp-servers', {
        name: 'doomed-mcp',
        transport: 'http',
        url: 'https://mcp.doomed.invalid/mcp',
      });
      assert.equal(mcp.status, 201, mcp.text);
      assert.equal((await owner.post('/api/workspace/invites', { role: 'member' })).status, 201);
      const token = await createToken(owner, 'doomed token');
      doomed.token = token.token;
      doomed.runId = (await token.client.post(`/api/jobs/${doomed.jobId}/runs`, {})).body.runId;
      const { run } = await finishedRun(owner, doomed.runId);
      assert.equal(run.status, 'succeeded', JSON.stringify(run));
      const runDir = join(dataDir, 'runs', doomed.runId);

      const events = t.server.services.stores.events;
      assert.ok(filesHolding(stateCanary).length > 0, 'the large state value is a blob on disk');
      sealed = await sealedValues(events, doomed.id);
      assert.equal(sealed.length, 2, 'both secrets were written sealed');
      const before = diskBytes();
      assert.ok(
        sealed.every((s) => before.includes(s)),
        'the ciphertext is on disk before the deletion',
      );
      assert.ok(mentions(await wholeLog(events), doomed.id).length > 20, 'the log holds the workspace');

      // Twice at once: one deletion, the other finds nothing to delete. Job creations race it with the token.
      const [answers, racers] = await Promise.all([
        Promise.all([
          admin.delete(`/api/admin/workspaces/${doomed.id}`),
          admin.delete(`/api/admin/workspaces/${doomed.id}`),
        ]),
        Promise.all(
          [1, 2, 3, 4, 5, 6].map((i) => token.client.post('/api/jobs', { name: `Racer ${i}`, instruction: 'x' })),
        ),
      ]);
      assert.deepEqual(answers.map((a) => a.status).sort(), [204, 404], answers.map((a) => a.text).join(' | '));
      for (const r of racers) assert.ok([201, 401, 404].includes(r.status), `a racing creation: ${r.status} ${r.text}`);
      await erased(t, doomed.id);
      assert.equal((await admin.delete(`/api/admin/workspaces/${doomed.id}`)).status, 404, 'deleting again');
      for (const r of racers.filter((x) => x.status === 201))
        assert.deepEqual(await events.readStream(streams.job.id(r.body.id)), [], 'a job that raced the deletion');

      assert.deepEqual(mentions(await wholeLog(events), doomed.id), [], 'streams left that name the workspace');
      const after = diskBytes();
      for (const s of sealed) assert.ok(!after.includes(s), 'a secret of the workspace is still on disk');
      assert.ok(!after.includes(doomed.name), 'the workspace name is still on disk');
      assert.equal(existsSync(runDir), false, "the run's files are gone");
      assert.deepEqual(filesHolding(stateCanary), [], 'a blob of the workspace is still on disk');
      const record = await events.readStream(workspaceErasureStreamId(doomed.id));
      assert.equal(record[0]!.metadata.actor.type, 'user', 'the erasure record keeps who deleted it');
      assert.ok((record[0]!.data as { streams: number }).streams > 10);

      assert.equal((await new Client(t.url, { token: doomed.token }).get('/api/jobs')).status, 401);
      assert.equal((await owner.get('/api/jobs')).status, 401, 'the owner session in it ended');
      assert.equal((await admin.get(`/api/jobs/${kept.jobId}`)).status, 200, 'the other workspace keeps its job');
      const secrets = (await admin.get('/api/secrets')).body.items as Array<{ id: string }>;
      assert.ok(
        secrets.some((s) => s.id === kept.secretId),
        'and its secret',
      );
    } finally {
      await t.stop();
    }
  });

  it('gives nothing of it back after a rebuild, through any route or the audit export', async () => {
    const rebuilt = await cli('admin', 'rebuild-projections');
    assert.equal(rebuilt.code, 0, rebuilt.out);
    const verified = await cli('admin', 'verify-projections');
    assert.equal(verified.code, 0, verified.out);

    const entries = await auditExport();
    const ofDoomed = entries.filter((e) => e.workspaceId === doomed.id);
    assert.deepEqual(
      ofDoomed.map((e) => e.type),
      ['WorkspaceErased'],
      'only the erasure record stays in the trail',
    );
    assert.equal(ofDoomed[0]!.actor.type, 'user');
    assert.ok(!JSON.stringify(entries).includes(doomed.name), 'the name is in the export');
    assert.ok(
      entries.some((e) => e.jobId === kept.jobId && e.type === 'JobCreated'),
      "the other workspace's trail",
    );

    const t = await start('api,projector');
    try {
      const admin = await adminSession(t);
      const listed = (await admin.get('/api/admin/workspaces?pageSize=100')).body.items as Array<{ id: string }>;
      assert.ok(!listed.some((w) => w.id === doomed.id), 'listed again');
      assert.equal((await admin.post(`/api/workspaces/${doomed.id}/switch`)).status, 404);
      assert.equal((await admin.get(`/api/jobs/${doomed.jobId}`)).status, 404);
      assert.equal((await admin.get(`/api/runs/${doomed.runId}`)).status, 404);
      assert.equal((await new Client(t.url, { token: doomed.token }).get('/api/jobs')).status, 401);
      const audit = await admin.get('/api/audit?pageSize=100');
      assert.ok(!audit.text.includes(doomed.id) && !audit.text.includes(doomed.name), 'in the audit route');
      assert.equal((await admin.get(`/api/jobs/${kept.jobId}`)).status, 200);
      const read = readFileSync(join(dataDir, 'read.db'));
      assert.ok(!read.includes(doomed.name), 'the name is back in the read models');
      for (const s of sealed) assert.ok(!diskBytes().includes(s), 'a secret is back on disk');
    } finally {
      await t.stop();
    }
  });

  it('finishes at the next start an erasure that stopped half-way, after refusing while a run was live', async () => {
    let victim = '';
    let victimJob = '';
    let adminCookie: Client['credential'] = null;
    // No runner: the run stays queued, which is what the refusal needs.
    const first = await start('api,projector');
    try {
      const admin = await adminSession(first);
      adminCookie = admin.credential;
      const owner = (await userSession(first, admin, 'second-owner@example.com')).client;
      victim = (await owner.get('/api/users/me')).body.workspace.id;
      victimJob = (await owner.post('/api/jobs', { name: 'Interrupted job', instruction: 'x' })).body.id;
      assert.equal((await owner.post('/api/secrets', { name: 'HALF', value: 'half-way-secret' })).status, 201);
      const run = await owner.post(`/api/jobs/${victimJob}/runs`, {});
      assert.equal(run.status, 201, run.text);
      const refused = await admin.delete(`/api/admin/workspaces/${victim}`);
      assert.equal(refused.status, 409, refused.text);
      assert.equal((await owner.get(`/api/jobs/${victimJob}`)).status, 200, 'a refused deletion changes nothing');
      assert.equal((await owner.post(`/api/runs/${run.body.runId}/cancel`)).status, 200);
    } finally {
      await first.stop();
    }

    // A process without the projector role deletes it; an erasure there dies after a few streams.
    const second = await start('api');
    try {
      const deleted = await new Client(second.url, adminCookie).delete(`/api/admin/workspaces/${victim}`);
      assert.equal(deleted.status, 204, deleted.text);
      const s = second.server.services;
      let deletes = 0;
      const crashing = new Proxy(s.stores.events, {
        get(target, prop) {
          if (prop === 'deleteStream')
            return async (id: string) => {
              if (++deletes > 3) throw new Error('the process died');
              await target.deleteStream(id);
            };
          const value = Reflect.get(target, prop, target) as unknown;
          return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
        },
      });
      const quiet = { info: () => {}, error: () => {} };
      const eraser = new WorkspaceEraser(
        crashing,
        s.stores.docs,
        s.bus,
        s.jobState,
        {
          removeRun: (id) => new RunFiles(s.stores.blobs).removeRun(id),
          removeImageLog: (id) => s.images.logs.remove(id),
        },
        quiet,
        () => Promise.resolve(),
      );
      await assert.rejects(eraser.erase(victim), /the process died/);
      assert.equal((await s.stores.events.readStream(workspaceErasureStreamId(victim))).length, 0, 'not recorded');
      assert.ok((await s.stores.events.readStream(workspaceStreamId(victim))).length > 0, 'its own stream waits');
      assert.ok(mentions(await wholeLog(s.stores.events), victim).length > 0, 'half of it is left');
    } finally {
      await second.stop();
    }

    const third = await start('api,projector');
    try {
      await erased(third, victim);
      assert.deepEqual(mentions(await wholeLog(third.server.services.stores.events), victim), []);
      assert.ok(!diskBytes().includes('Interrupted job'), "the job's name is still on disk");
      const admin = new Client(third.url, adminCookie);
      assert.equal((await admin.get(`/api/jobs/${victimJob}`)).status, 404);
      assert.equal((await admin.delete(`/api/admin/workspaces/${victim}`)).status, 404, 'deleting it again');
    } finally {
      await third.stop();
    }
    const verified = await cli('admin', 'verify-projections');
    assert.equal(verified.code, 0, verified.out);
  });
});
