import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor } from '../wait.js';
import { Client, createToken, spawnServer, svcCli, useSignInLink } from './harness.js';

const dataDir = mkdtempSync(join(tmpdir(), 'svc-restart-'));
const children: ChildProcess[] = [];
after(() => {
  for (const c of children) c.kill('SIGKILL');
  rmSync(dataDir, { recursive: true, force: true });
});

async function serve(): Promise<{ child: ChildProcess; url: string; stdout: () => string }> {
  const started = await spawnServer(dataDir);
  children.push(started.child);
  return { child: started.child, url: started.url, stdout: started.output };
}

async function killHard(child: ChildProcess): Promise<void> {
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGKILL');
  await exited;
}

describe('crash safety', () => {
  it('prints a sign-in link on first start, keeps everything across SIGKILL, and rebuilds read models', async () => {
    const first = await serve();
    await waitFor('the first start to print a sign-in link', () => /\/api\/auth\/link\//.test(first.stdout()));
    const link = /(http:\/\/\S+\/api\/auth\/link\/\S+)/.exec(first.stdout())?.[1];
    assert.ok(link, `the first start prints a sign-in link: ${first.stdout()}`);
    const session = new Client(first.url, { cookie: await useSignInLink(link) });
    const { token } = await createToken(session, 'survivor');
    let api = new Client(first.url, { token });
    const ids: string[] = [];
    for (let i = 0; i < 25; i++) {
      const res = await api.post('/api/jobs', { name: `job ${String(i).padStart(2, '0')}`, instruction: `do ${i}` });
      assert.equal(res.status, 201);
      ids.push(res.body.id);
    }
    assert.equal((await api.patch(`/api/jobs/${ids[3]}`, { instruction: 'patched', enabled: false })).status, 200);
    assert.equal((await api.delete(`/api/jobs/${ids[4]}`)).status, 204);
    // The last write is answered, then the process dies before it can save its projection checkpoints.
    await api.post('/api/jobs', { name: 'job last', instruction: 'written just before the crash' });
    await killHard(first.child);

    const second = await serve();
    api = new Client(second.url, { token });
    const list = await api.get('/api/jobs?pageSize=100');
    assert.equal(list.status, 200, list.text);
    assert.equal(list.body.total, 25, 'every job but the archived one, none twice');
    assert.ok(list.body.items.some((j: { name: string }) => j.name === 'job last'));
    const patched = await api.get(`/api/jobs/${ids[3]}`);
    assert.equal(patched.body.instruction, 'patched');
    assert.equal(patched.body.enabled, false);
    assert.equal((await api.get(`/api/jobs/${ids[4]}`)).status, 404);

    // `svc admin sign-in-link` works beside the running server, on the same data directory.
    const { stdout } = await svcCli(['admin', 'sign-in-link', '--data-dir', dataDir, '--email', 'second@example.com']);
    const url = stdout.trim();
    assert.ok(url.startsWith(`${second.url}/api/auth/link/`), url);
    const other = new Client(second.url, { cookie: await useSignInLink(url) });
    assert.equal((await other.get('/api/users/me')).body.email, 'second@example.com');
    await killHard(second.child);

    // Read models are disposable: drop them and rebuild from the log.
    rmSync(join(dataDir, 'read.db'), { force: true });
    rmSync(join(dataDir, 'read.db-wal'), { force: true });
    rmSync(join(dataDir, 'read.db-shm'), { force: true });
    const rebuilt = await svcCli(['admin', 'rebuild-projections', '--data-dir', dataDir]);
    assert.match(rebuilt.stdout, /rebuilt .*jobs/);
    const third = await serve();
    api = new Client(third.url, { token });
    const again = await api.get('/api/jobs?pageSize=100');
    assert.equal(again.body.total, 25);
    assert.deepEqual(
      again.body.items.map((j: { id: string }) => j.id).sort(),
      list.body.items.map((j: { id: string }) => j.id).sort(),
    );
    await killHard(third.child);
  });
});
