import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, createToken, spawnSvc, useSignInLink } from '../api/harness.js';
import { waitFor } from '../wait.js';
import { runtimeDir } from '../../server/runner-role.js';
import { openSqliteDocumentStore } from '../../store/sqlite-document-store.js';
import { openSqliteEventStore } from '../../store/sqlite-event-store.js';
import { runsCollection, type RunDoc } from '../../projections/runs.js';
import { scheduleStreamId } from '../../domain/schedule.js';
import type { RecordedEvent } from '../../store/event-store.js';

/*
 * Scale-out on one machine: two api, two runner, two projector (one standing by) and one scheduler process of
 * `svc serve` on the embedded stores of one data directory. 200 scripted runs are triggered through both api
 * processes while one runner and then the projector holding the lease are SIGKILLed. Every run must end exactly once
 * (claimed at most once, finished once, none lost), the read models must equal a replay of the log
 * (`svc admin verify-projections`), and a schedule of every minute must fire each occurrence once
 * (docs/scaling.md).
 */

const total = 200;
const quickMain = '#!/bin/sh\necho "done"\n';
const slowMain = '#!/bin/sh\nsleep 600\n';
const took = 'took the projector lease';
const standing = 'standing by for the projector lease';
const liveStatuses = ['queued', 'provisioning', 'running', 'verifying'];

interface Proc {
  child: ChildProcess;
  output: () => string;
}

/** The newest modification time of the service's sources. */
function newestSource(dir = '.'): number {
  let newest = 0;
  for (const name of readdirSync(dir)) {
    if (['node_modules', 'dist', 'web', 'tests', 'bench', 'demo', '.git'].includes(name)) continue;
    const path = join(dir, name);
    const st = statSync(path);
    if (st.isDirectory()) newest = Math.max(newest, newestSource(path));
    else if (name.endsWith('.ts')) newest = Math.max(newest, st.mtimeMs);
  }
  return newest;
}

/**
 * Seven processes compiling the sources with tsx take a minute of a loaded 2-core machine before the first run: the
 * built CLI is used when it is newer than every source (CI builds before it tests), else the sources.
 */
const cli =
  existsSync('dist/cli/main.js') && statSync('dist/cli/main.js').mtimeMs >= newestSource()
    ? ['dist/cli/main.js']
    : ['--import', 'tsx', 'cli/main.ts'];

function svcCli(args: string[]): Promise<{ stdout: string; stderr: string }> {
  return promisify(execFile)(process.execPath, [...cli, ...args]);
}

describe('chaos: every role twice on one data directory, a runner and the projector killed', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-chaos-'));
  const procs: Proc[] = [];
  const docs = openSqliteDocumentStore(join(dataDir, 'read.db'));
  after(async () => {
    for (const p of procs) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
    await docs.close();
    rmSync(runtimeDir(dataDir), { recursive: true, force: true });
    rmSync(dataDir, { recursive: true, force: true });
  });
  const start = (roles: string, logLevel = 'warn'): Proc => {
    const p = spawnSvc(dataDir, ['--roles', roles], logLevel, cli);
    procs.push(p);
    return p;
  };
  const stop = async (p: Proc) => {
    if (p.child.exitCode !== null || p.child.signalCode !== null) return;
    const exited = new Promise((resolve) => p.child.once('exit', resolve));
    p.child.kill('SIGTERM');
    await exited;
  };
  const startApi = async (): Promise<Proc & { url: string }> => {
    const file = join(dataDir, 'server.json');
    rmSync(file, { force: true });
    const p = start('api');
    await waitFor(
      'an api process to listen',
      () => {
        if (p.child.exitCode !== null) throw new Error(`it exited: ${p.output()}`);
        return existsSync(file);
      },
      { timeoutMs: 90_000 },
    );
    return { ...p, url: (JSON.parse(readFileSync(file, 'utf8')) as { url: string }).url };
  };
  const runnerIdOf = async (p: Proc) =>
    (await docs.collection<{ _id: string; pid: number }>('runners').findOne({ pid: p.child.pid! }))?._id ?? null;

  it('ends every run exactly once, keeps the read models equal to the log and fires the schedule once', async () => {
    const began = Date.now();
    // The first projector takes the lease before the second starts, so the one to kill is known.
    const projectorA = start('projector', 'info');
    const runner1 = start('runner');
    const runner2 = start('runner');
    const scheduler = start('scheduler');
    await waitFor('the first projector to take the lease', () => projectorA.output().includes(took), {
      timeoutMs: 90_000,
    });
    const projectorB = start('projector', 'info');
    // Each api process writes its address to server.json: one after the other.
    const api1 = await startApi();
    const api2 = await startApi();
    await waitFor('the second projector to stand by', () => projectorB.output().includes(standing), {
      timeoutMs: 90_000,
    });

    const { stdout } = await svcCli(['admin', 'sign-in-link', '--data-dir', dataDir]);
    const session = new Client(api1.url, { cookie: await useSignInLink(stdout.trim()) });
    const { token } = await createToken(session);
    const apis = [new Client(api1.url, { token }), new Client(api2.url, { token })];
    const [one, two] = apis as [Client, Client];
    assert.equal((await one.post('/api/providers', { name: 'Fake', kind: 'fake' })).status, 201);
    const model = (await two.get('/api/models')).body.items[0];
    assert.equal((await two.patch('/api/settings', { agentModelId: model.id })).status, 200);
    const scripted = async (name: string, main: string, extra: Record<string, unknown> = {}) => {
      const made = await one.post<{ id: string }>('/api/jobs', {
        name,
        instruction: 'Say done.',
        selfImprove: false,
        concurrency: 'parallel',
        ...extra,
      });
      assert.equal(made.status, 201, made.text);
      const put = await two.request('PUT', `/api/jobs/${made.body.id}/playbook`, { content: { main } });
      assert.equal(put.status, 200, put.text);
      return made.body.id;
    };
    const quick = await scripted('Quick', quickMain);
    const slow = await scripted('Slow', slowMain);
    const every = await scripted('Every minute', quickMain, { cron: '* * * * *', timezone: 'UTC' });
    const scheduleFrom = Date.now();

    // A runner killed while it executes a run: a slow run on runner 1 is surely live when the kill lands.
    const runner1Id = await waitFor('runner 1 to beat', () => runnerIdOf(runner1), { timeoutMs: 90_000 });
    // A slow run that lands on the other runner is cancelled at once (across processes), and another one tried.
    const slowRuns: string[] = [];
    let onRunner1: string | null = null;
    while (onRunner1 === null) {
      assert.ok(slowRuns.length < 8, 'no slow run landed on runner 1 in 8 tries');
      const res = await apis[slowRuns.length % 2]!.post<{ runId: string }>(`/api/jobs/${slow}/runs`, {});
      assert.equal(res.status, 201, res.text);
      const id = res.body.runId;
      slowRuns.push(id);
      const live = await waitFor(
        `slow run ${id} to run`,
        () => docs.collection<RunDoc>(runsCollection).findOne({ _id: id, status: 'running' }),
        { timeoutMs: 90_000, intervalMs: 100 },
      );
      if (live.runnerId === runner1Id) onRunner1 = id;
      else assert.ok((await two.post(`/api/runs/${id}/cancel`)).status < 300);
    }
    // 200 runs through both api processes, a few at a time, while the processes below are killed. An answer during
    // the projector's takeover may be a 503 that says the run was saved: it still counts as one run.
    const answers: Array<{ status: number; runId: string | null }> = [];
    const trigger = async (i: number) => {
      const res = await apis[i % 2]!.post<{ runId?: string; code?: string }>(`/api/jobs/${quick}/runs`, {});
      assert.ok(res.status === 201 || (res.status === 503 && res.body.code === 'projection_unavailable'), res.text);
      answers.push({ status: res.status, runId: res.body.runId ?? null });
    };
    const ended = async () =>
      docs.collection<RunDoc>(runsCollection).count({ jobId: quick, status: { $nin: liveStatuses } });
    // Paced like a steady load: at most 12 runs not yet ended, so triggers go on through both kills.
    let next = 0;
    const triggering = Promise.all(
      Array.from({ length: 4 }, async () => {
        while (next < total) {
          await waitFor('room for another run', async () => next - (await ended()) < 12, {
            timeoutMs: 120_000,
            intervalMs: 50,
          });
          if (next < total) await trigger(next++);
        }
      }),
    );

    await waitFor('40 quick runs to end', async () => (await ended()) >= 40, { timeoutMs: 90_000 });
    runner1.child.kill('SIGKILL');
    // Its supervisor starts it again; the new process ends the dead one's runs at once (same host, dead pid).
    const runner3 = start('runner');
    await waitFor(
      'the killed runner’s slow run to end as interrupted',
      async () => {
        const run = (await two.get(`/api/runs/${onRunner1!}`)).body;
        return run.status === 'failed' && /interrupted/.test(run.error ?? '') && run;
      },
      { timeoutMs: 90_000, intervalMs: 200 },
    );

    // Then the projector that holds the lease; the standby, on the same machine, sees it dead and takes over.
    await waitFor('100 quick runs to end', async () => (await ended()) >= 100, { timeoutMs: 120_000 });
    projectorA.child.kill('SIGKILL');
    await waitFor('the standby to take the lease', () => projectorB.output().includes(took), { timeoutMs: 60_000 });

    await triggering;
    await waitFor('every quick run to end', async () => (await ended()) === total, {
      timeoutMs: 180_000,
      intervalMs: 200,
    });
    // The slow runs still live are cancelled through the api, across processes to whichever runner has them.
    for (const id of slowRuns) {
      const run = (await one.get(`/api/runs/${id}`)).body;
      if (liveStatuses.includes(run.status)) assert.ok((await two.post(`/api/runs/${id}/cancel`)).status < 300);
    }
    await waitFor('every slow run to end', async () => {
      const statuses = await Promise.all(slowRuns.map(async (id) => (await one.get(`/api/runs/${id}`)).body.status));
      return statuses.every((s) => !liveStatuses.includes(s));
    });
    // At least one occurrence of the schedule, and its run ended.
    await waitFor(
      'the schedule to fire and its run to end',
      async () => {
        const list = (await one.get(`/api/runs?job=${every}`)).body;
        return list.total >= 1 && list.items.every((r: { status: string }) => !liveStatuses.includes(r.status));
      },
      { timeoutMs: 90_000, intervalMs: 250 },
    );
    const scheduleUntil = Date.now();

    for (const p of [api1, api2, scheduler, runner2, runner3, projectorB]) await stop(p);
    for (const p of [api1, api2, scheduler, runner2, runner3, projectorB])
      assert.equal(p.child.exitCode, 0, p.output().slice(-2000));

    // The log, read after every process stopped.
    const events = openSqliteEventStore(join(dataDir, 'events.db'));
    let log: RecordedEvent[];
    let fired: number[];
    try {
      log = await events.readAll({ filter: { streamPrefixes: ['run-'] } });
      fired = (await events.readStream(scheduleStreamId(every))).map(
        (e) => (e.data as { occurrence: number }).occurrence,
      );
    } finally {
      await events.close();
    }
    const byRun = new Map<string, RecordedEvent[]>();
    for (const e of log) byRun.set(e.streamId, [...(byRun.get(e.streamId) ?? []), e]);
    const quickRuns = [...byRun.entries()].filter(([, es]) => (es[0]!.data as { jobId: string }).jobId === quick);
    assert.equal(quickRuns.length, total, 'each trigger made one run, none lost');
    for (const a of answers.filter((x) => x.runId)) assert.ok(byRun.has(`run-${a.runId}`), a.runId!);
    const interrupted: string[] = [];
    for (const [stream, es] of byRun) {
      const count = (type: string) => es.filter((e) => e.type === type).length;
      const types = es.map((e) => e.type).join(',');
      assert.ok(count('RunClaimed') <= 1, `${stream} was claimed twice: ${types}`);
      assert.ok(count('RunStarted') <= 1, `${stream} started twice: ${types}`);
      assert.equal(count('RunFinished'), 1, `${stream} must end exactly once: ${types}`);
      const outcome = es.find((e) => e.type === 'RunFinished')!.data as { status: string; error: string | null };
      if (/interrupted/.test(outcome.error ?? '')) interrupted.push(stream);
      else if ((es[0]!.data as { jobId: string }).jobId !== slow)
        assert.equal(outcome.status, 'succeeded', `${stream}: ${JSON.stringify(outcome)}`);
    }
    assert.ok(interrupted.includes(`run-${onRunner1!}`));

    // The schedule: consecutive minutes from its creation, each once, each with one run.
    const minute = 60_000;
    const expected: number[] = [];
    for (let t = Math.floor(scheduleFrom / minute) * minute + minute; t <= fired[fired.length - 1]!; t += minute)
      expected.push(t);
    assert.deepEqual(fired, expected, 'every occurrence fired once');
    // An occurrence more than 10 s before the scheduler stopped has had ten of its ticks: it must have fired.
    assert.ok(fired.length >= 1 && fired[fired.length - 1]! >= Math.floor((scheduleUntil - 10_000) / minute) * minute);
    const scheduledRuns = [...byRun.values()].filter((es) => (es[0]!.data as { jobId: string }).jobId === every);
    assert.equal(scheduledRuns.length, fired.length, 'one run per occurrence');

    const verify = await svcCli(['admin', 'verify-projections', '--data-dir', dataDir]);
    assert.match(verify.stdout, /the read models are what the events say/, verify.stdout + verify.stderr);

    const answered503 = answers.filter((a) => a.status === 503).length;
    process.stdout.write(
      `# chaos: ${total} runs (${answered503} answered 503 during the takeover), ${interrupted.length} interrupted by the kill, ${fired.length} schedule occurrence(s), ${Math.round((Date.now() - began) / 1000)} s\n`,
    );
  });
});
