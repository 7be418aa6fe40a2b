import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, createToken, spawnServer, useSignInLink } from '../api/harness.js';
import { waitFor } from '../wait.js';
import { runtimeDir } from '../../server/runner-role.js';

/** After SIGKILL, live runs end as interrupted (never resumed) and queued runs start again (docs/runs.md). */
const dataDirs = [mkdtempSync(join(tmpdir(), 'svc-run-restart-')), mkdtempSync(join(tmpdir(), 'svc-reflect-restart-'))];
const children: ChildProcess[] = [];
after(() => {
  for (const c of children) c.kill('SIGKILL');
  for (const dir of dataDirs) {
    rmSync(runtimeDir(dir), { recursive: true, force: true });
    rmSync(dir, { recursive: true, force: true });
  }
});

async function serve(dataDir = dataDirs[0]!): Promise<{ child: ChildProcess; url: string; out: () => string }> {
  const started = await spawnServer(dataDir);
  children.push(started.child);
  return { child: started.child, url: started.url, out: started.output };
}

async function until<T>(what: string, fn: () => Promise<T | null>, ms = 20_000): Promise<T> {
  // Wrapped, so a value the probe found is never mistaken for "not yet" however falsy it is.
  const found = await waitFor(
    what,
    async () => {
      const v = await fn();
      return v === null ? null : { v };
    },
    { timeoutMs: ms, intervalMs: 100 },
  );
  return found.v;
}

describe('runs across a crash', () => {
  it('fails the live run as interrupted and starts the queued one after SIGKILL', async () => {
    const first = await serve();
    const link = await until(
      'the sign-in link',
      async () => /(http:\/\/\S+\/api\/auth\/link\/\S+)/.exec(first.out())?.[1] ?? null,
    );
    const session = new Client(first.url, { cookie: await useSignInLink(link) });
    await session.post('/api/providers', { name: 'Fake', kind: 'fake' });
    const model = (await session.get('/api/models')).body.items[0].id as string;
    assert.equal((await session.patch('/api/settings', { agentModelId: model })).status, 200);
    const { token } = await createToken(session);
    let api = new Client(first.url, { token });
    const job = (
      await api.post('/api/jobs', {
        name: 'Sleeper',
        concurrency: 'queue',
        instruction: 'Sleep as long as the input says: `sleep "$(tr -dc 0-9 < /svc/input.json)"`',
      })
    ).body.id as string;
    const live = (await api.post(`/api/jobs/${job}/runs`, { input: 30 })).body.runId as string;
    const queued = (await api.post(`/api/jobs/${job}/runs`, { input: 0 })).body.runId as string;
    await until('the first run to be running', async () =>
      (await api.get(`/api/runs/${live}`)).body.status === 'running' ? true : null,
    );
    assert.equal((await api.get(`/api/runs/${queued}`)).body.status, 'queued');

    const exited = new Promise((r) => first.child.once('exit', r));
    first.child.kill('SIGKILL');
    await exited;

    const second = await serve();
    api = new Client(second.url, { token });
    const ended = await until(
      'the live run to end',
      async () => {
        const run = (await api.get(`/api/runs/${live}`)).body;
        return ['failed', 'succeeded', 'cancelled', 'timed_out'].includes(run.status) ? run : null;
      },
      10_000,
    );
    assert.equal(ended.status, 'failed');
    assert.match(ended.error, /^interrupted/);
    const next = await until('the queued run to finish', async () => {
      const run = (await api.get(`/api/runs/${queued}`)).body;
      return ['failed', 'succeeded', 'cancelled', 'timed_out'].includes(run.status) ? run : null;
    });
    assert.equal(next.status, 'succeeded', JSON.stringify(next));
    const events = (await api.get(`/api/runs/${live}/events`)).body as Array<{
      type: string;
      payload: { status?: string };
    }>;
    assert.equal(events.filter((e) => e.type === 'run.status').pop()?.payload.status, 'failed');
  });

  it('finishes a reflection that was pending when its runner died, on the runner that comes next', async () => {
    const first = await serve(dataDirs[1]);
    const link = await until(
      'the sign-in link',
      async () => /(http:\/\/\S+\/api\/auth\/link\/\S+)/.exec(first.out())?.[1] ?? null,
    );
    const session = new Client(first.url, { cookie: await useSignInLink(link) });
    const provider = (await session.post('/api/providers', { name: 'Fake', kind: 'fake' })).body.id as string;
    await session.patch('/api/settings', { agentModelId: (await session.get('/api/models')).body.items[0].id });
    const { token } = await createToken(session);
    let api = new Client(first.url, { token });
    const job = (
      await api.post('/api/jobs', {
        name: 'Learner',
        selfImprove: false,
        instruction: 'Report it with `svc output set answer 42`.',
      })
    ).body.id as string;
    const runId = (await api.post(`/api/jobs/${job}/runs`, {})).body.runId as string;
    await until('the run to succeed', async () =>
      (await api.get(`/api/runs/${runId}`)).body.status === 'succeeded' ? true : null,
    );
    // This reflector's model call hangs for a minute: the process dies in the middle of it.
    await session.post(`/api/providers/${provider}/script`, {
      responses: [{ text: '{"summary":"late","usedLearnings":[],"ops":[]}', delayMs: 60_000 }],
      reset: true,
    });
    assert.equal((await api.post(`/api/runs/${runId}/learn`, {})).status, 202);
    // The fake provider takes a scripted answer when a call starts: none pending means the reflector's call is in
    // flight, the moment to kill the process.
    await until('the reflector to start its model call', async () => {
      const left = await session.post(`/api/providers/${provider}/script`, { responses: [], reset: false });
      return left.body.pending === 0 ? true : null;
    });
    const exited = new Promise((r) => first.child.once('exit', r));
    first.child.kill('SIGKILL');
    await exited;

    const second = await serve(dataDirs[1]);
    api = new Client(second.url, { token });
    const done = await until('the reflection to end', async () => {
      const run = (await api.get(`/api/runs/${runId}`)).body;
      return run.reflection === 'pending' ? null : run;
    });
    assert.equal(done.reflection, 'done', done.reflectionError);
    assert.notEqual(done.reflectionSummary, 'late', "the answer came from the new runner's call");
    assert.equal(
      (await api.get(`/api/jobs/${job}/playbook`)).body.version,
      1,
      'the fake reflection added its script and learning',
    );
  });
});
