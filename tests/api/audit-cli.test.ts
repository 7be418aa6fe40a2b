import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import { loadConfig } from '../../app/config.js';
import { createLogger, startServer } from '../../server/start.js';
import { runtimeDir } from '../../server/runner-role.js';
import { waitFor } from '../wait.js';
import { adminSession, createToken, type TestServer } from './harness.js';

/**
 * `svc audit export` and `svc admin verify-projections` (docs/events.md, "Audit trail" and "Verifying the read
 * models") over a data directory a real server wrote and then left, run as the CLI an operator runs.
 */
const execute = promisify(execFile);
const dataDir = mkdtempSync(join(tmpdir(), 'svc-audit-cli-'));
const secretValue = 'cli-canary-0d1e2f3a-never-exported';
let apiToken: string;
let jobId: string;
let otherJobId: string;
let changedAt: number;

async function svc(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await execute(process.execPath, ['--import', 'tsx', 'cli/main.ts', ...args], {
      env: { ...process.env, SVC_LOG_LEVEL: 'warn' },
      maxBuffer: 64 * 1024 * 1024,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

async function exported(...flags: string[]): Promise<Array<Record<string, any>>> {
  const res = await svc('audit', 'export', '--data-dir', dataDir, ...flags);
  assert.equal(res.code, 0, res.stderr);
  return res.stdout
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, any>);
}

before(async () => {
  const config = loadConfig({ host: '127.0.0.1', port: 0, dataDir }, { SVC_ROLES: 'api,projector', NODE_ENV: 'test' });
  const server = await startServer(config, createLogger('silent'), () => {});
  const t = { url: server.url, dataDir, server } as TestServer;
  try {
    const admin = await adminSession(t);
    const token = await createToken(admin, 'exporter');
    apiToken = token.token;
    jobId = (await token.client.post<{ id: string }>('/api/jobs', { name: 'Exported', instruction: 'one' })).body.id;
    otherJobId = (await admin.post<{ id: string }>('/api/jobs', { name: 'Other', instruction: 'x' })).body.id;
    const secret = await admin.post('/api/secrets', { name: 'CLI_KEY', value: secretValue });
    assert.equal(secret.status, 201, secret.text);
    const before = Date.now();
    await waitFor('the clock to move on', () => Date.now() > before);
    changedAt = Date.now();
    assert.equal((await admin.patch(`/api/jobs/${jobId}`, { instruction: 'two' })).status, 200);
  } finally {
    await server.close();
    rmSync(runtimeDir(dataDir), { recursive: true, force: true });
  }
});
after(() => rmSync(dataDir, { recursive: true, force: true }));

describe('svc audit export', () => {
  it('prints one JSON entry per line, oldest first, without secrets or tokens', async () => {
    const res = await svc('audit', 'export', '--data-dir', dataDir);
    assert.equal(res.code, 0, res.stderr);
    assert.ok(!res.stdout.includes(secretValue), 'the secret value is exported');
    assert.ok(!res.stdout.includes(apiToken), 'the API token is exported');
    const lines = res.stdout.split('\n').filter((l) => l !== '');
    const entries = lines.map((l) => JSON.parse(l) as Record<string, any>);
    const created = entries.find((e) => e.type === 'JobCreated' && e.jobId === jobId);
    assert.deepEqual(created?.actor.type, 'token');
    assert.equal(created?.actor.name, 'exporter');
    assert.equal(created?.summary, 'Created job "Exported"');
    assert.ok(entries.some((e) => e.type === 'SecretCreated' && e.summary === 'Created secret "CLI_KEY"'));
    const times = entries.map((e) => e.at as number);
    assert.deepEqual(
      times,
      [...times].sort((a, b) => a - b),
    );
  });

  it('follows --job, --since and --until', async () => {
    // One job's entries from an instant on: the creation before it and the other job are left out.
    const since = await exported('--job', jobId, '--since', String(changedAt));
    assert.deepEqual(
      since.map((e) => e.type),
      ['JobUpdated'],
    );
    const until = await exported('--until', new Date(changedAt).toISOString());
    assert.ok(until.some((e) => e.jobId === otherJobId));
    assert.ok(until.every((e) => e.at < changedAt));
    assert.ok(!until.some((e) => e.type === 'JobUpdated'));
    const bad = await svc('audit', 'export', '--data-dir', dataDir, '--since', 'last tuesday');
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--since: not a time/);
  });
});

describe('svc admin verify-projections', () => {
  it('exits 0 on a healthy data directory, and 1 naming the collection and document after tampering', async () => {
    const healthy = await svc('admin', 'verify-projections', '--data-dir', dataDir);
    assert.equal(healthy.code, 0, healthy.stdout + healthy.stderr);
    assert.match(healthy.stdout, /the read models are what the events say/);

    const db = new Database(join(dataDir, 'read.db'));
    try {
      const changed = db
        .prepare(`UPDATE doc_jobs SET body = json_set(body, '$.instruction', 'tampered') WHERE id = ?`)
        .run(jobId);
      assert.equal(changed.changes, 1);
      const removed = db.prepare(`DELETE FROM doc_audit WHERE id = ?`).run(`job-${otherJobId}@0000000000`);
      assert.equal(removed.changes, 1);
    } finally {
      db.close();
    }
    const tampered = await svc('admin', 'verify-projections', '--data-dir', dataDir);
    assert.equal(tampered.code, 1, tampered.stdout + tampered.stderr);
    assert.match(
      tampered.stdout,
      new RegExp(`jobs: jobs "${jobId}": fields differ from what the events give: instruction`),
    );
    assert.match(
      tampered.stdout,
      new RegExp(`audit: audit "job-${otherJobId}@0000000000": missing from the live read model`),
    );
    assert.match(tampered.stdout, /2 difference\(s\)/);
  });
});
