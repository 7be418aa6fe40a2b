import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor } from '../wait.js';
import { Client, finishedRun, spawnServer, useSignInLink } from '../api/harness.js';

/**
 * A store the run's timeline writes to fails under a running `svc serve` process: the run's files directory becomes
 * a plain file, so a timeline entry too large to keep inline (saved beside the run) cannot be written. Those writes
 * were once fired and dropped, and the first failure killed the whole process.
 */
describe('a timeline that cannot be written', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-timeline-failure-'));
  let child: ChildProcess | null = null;
  after(() => {
    child?.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('fails that run cleanly, logs it with the run id, and the server keeps serving', async () => {
    const started = await spawnServer(dataDir);
    child = started.child;
    await waitFor('the first start to print a sign-in link', () => /\/api\/auth\/link\//.test(started.output()));
    const link = /(http:\/\/\S+\/api\/auth\/link\/\S+)/.exec(started.output())?.[1];
    assert.ok(link, `the first start prints a sign-in link: ${started.output()}`);
    const api = new Client(started.url, { cookie: await useSignInLink(link) });
    const providerId = (await api.post<{ id: string }>('/api/providers', { name: 'Fake', kind: 'fake' })).body.id;
    assert.equal(
      (await api.patch('/api/settings', { agentModelId: (await api.get('/api/models')).body.items[0].id })).status,
      200,
    );

    rmSync(join(dataDir, 'runs'), { recursive: true, force: true });
    writeFileSync(join(dataDir, 'runs'), 'not a directory: every file of a run fails to save\n');
    // The tool call's arguments are over 16 KiB, so its timeline entry is saved beside the run: that write fails.
    const big = { toolCalls: [{ name: 'write_file', args: { path: 'big.txt', content: 'x'.repeat(40_000) } }] };
    const finish = { toolCalls: [{ name: 'finish', args: { status: 'success', summary: 'done' } }] };
    assert.equal(
      (await api.post(`/api/providers/${providerId}/script`, { responses: [big, finish, finish], reset: true })).status,
      200,
    );
    const job = (
      await api.post<{ id: string }>('/api/jobs', {
        name: 'big timeline',
        instruction: 'write a big file',
        selfImprove: false,
      })
    ).body.id;
    const runId = (await api.post<{ runId: string }>(`/api/jobs/${job}/runs`, {})).body.runId;
    const { run } = await finishedRun(api, runId);

    assert.equal(run.status, 'failed', JSON.stringify(run));
    assert.match(run.error, /timeline could not be written/);
    assert.equal(child.exitCode, null, `the server process is alive: ${started.output().slice(-2000)}`);
    const info = await api.get<{ version: string }>('/api/system/info');
    assert.equal(info.status, 200);
    assert.ok(info.body.version);
    const logged = started
      .output()
      .split('\n')
      .filter((l) => l.includes('could not write a timeline entry'));
    assert.ok(logged.length > 0, started.output().slice(-2000));
    assert.equal((JSON.parse(logged[0]!) as { runId: string }).runId, runId, 'the log names the run');
    assert.ok(!/unhandled promise rejection/.test(started.output()), 'the failure was handled where it happened');
  });
});
