import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { jobRunsDecider, jobRunsStreamId } from '../../domain/job-runs.js';
import { Scheduler } from '../../runner/scheduler.js';
import { adminSession, Client, createToken, startTestServer, type TestServer } from './harness.js';

/**
 * The trigger path without a runner (roles api and projector): runs stay where admission put them, so the overlap
 * policies, cancel, retry, webhooks and schedules can be checked one decision at a time.
 */
let t: TestServer;
let session: Client;
let token: Client;

before(async () => {
  t = await startTestServer({ SVC_ROLES: 'api,projector,scheduler' });
  session = await adminSession(t);
  token = (await createToken(session)).client;
});
after(async () => t.stop());

async function job(fields: Record<string, unknown> = {}): Promise<string> {
  const res = await session.post<{ id: string }>('/api/jobs', {
    name: `job ${Math.random()}`,
    instruction: 'Do it',
    ...fields,
  });
  assert.equal(res.status, 201, res.text);
  return res.body.id;
}

async function admission(jobId: string) {
  return (await t.server.services.bus.load(jobRunsStreamId(jobId), jobRunsDecider)).state;
}

describe('runs: trigger path', () => {
  it('starts a run: manual with a session, api with a token, numbered per job', async () => {
    const id = await job({ concurrency: 'parallel' });
    const a = await session.post(`/api/jobs/${id}/runs`, { input: { city: 'Oslo' }, instructions: 'Be brief' });
    assert.equal(a.status, 201, a.text);
    assert.equal(a.body.status, 'queued');
    const b = await token.post(`/api/jobs/${id}/runs`, {});
    const runA = (await session.get(`/api/runs/${a.body.runId}`)).body;
    const runB = (await session.get(`/api/runs/${b.body.runId}`)).body;
    assert.equal(runA.trigger, 'manual');
    assert.equal(runB.trigger, 'api');
    assert.deepEqual([runA.number, runB.number], [1, 2]);
    assert.deepEqual(runA.input, { city: 'Oslo' });
    assert.equal(runA.instructions, 'Be brief');
    assert.deepEqual(runB.input, {});
    assert.equal(runA.mode, 'explore');
    assert.equal(runA.playbookVersion, 0);
    assert.equal(runA.reflection, 'skipped');
    const list = (await session.get(`/api/jobs`)).body.items.find((j: { id: string }) => j.id === id);
    assert.equal(list.runCount, 2);
    assert.deepEqual(
      list.recentRuns.map((r: { number: number }) => r.number),
      [2, 1],
    );
    assert.equal(list.lastRun.id, b.body.runId);
    assert.equal(list.lastMode, 'explore');
    assert.equal((await session.get(`/api/jobs/${id}`)).body.lastRun.number, 2);
  });

  it('keeps at most ten recent runs, newest first', async () => {
    const id = await job({ concurrency: 'parallel' });
    for (let i = 0; i < 12; i++) await session.post(`/api/jobs/${id}/runs`, {});
    const entry = (
      await session.get(`/api/jobs?search=${encodeURIComponent((await session.get(`/api/jobs/${id}`)).body.name)}`)
    ).body.items[0];
    assert.equal(entry.runCount, 12);
    assert.equal(entry.recentRuns.length, 10);
    assert.deepEqual(
      entry.recentRuns.map((r: { number: number }) => r.number),
      [12, 11, 10, 9, 8, 7, 6, 5, 4, 3],
    );
  });

  it('skips a run while another is active under skip', async () => {
    const id = await job();
    const first = await session.post(`/api/jobs/${id}/runs`, {});
    const second = await session.post(`/api/jobs/${id}/runs`, {});
    assert.equal(first.body.status, 'queued');
    assert.equal(second.body.status, 'skipped');
    const run = (await session.get(`/api/runs/${second.body.runId}`)).body;
    assert.equal(run.status, 'skipped');
    assert.match(run.error, /another run of this job was still active/);
    assert.equal(run.startedAt, null);
    assert.ok(run.finishedAt >= run.queuedAt);
  });

  it('queues under queue and starts waiting runs one at a time in trigger order', async () => {
    const id = await job({ concurrency: 'queue' });
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await session.post(`/api/jobs/${id}/runs`, {})).body.runId);
    let state = await admission(id);
    assert.deepEqual(state.active, [ids[0]]);
    assert.deepEqual(state.waiting, [ids[1], ids[2]]);
    // Cancelling the waiting middle run removes it; cancelling the active one lets the next go.
    assert.equal((await session.post(`/api/runs/${ids[1]}/cancel`)).body.status, 'cancelled');
    assert.equal((await session.post(`/api/runs/${ids[0]}/cancel`)).status, 200);
    state = await admission(id);
    assert.deepEqual(state.active, [ids[2]]);
    assert.deepEqual(state.waiting, []);
  });

  it('runs in parallel under parallel', async () => {
    const id = await job({ concurrency: 'parallel' });
    const answers = await Promise.all([1, 2, 3, 4].map(() => session.post(`/api/jobs/${id}/runs`, {})));
    assert.deepEqual(
      answers.map((a) => a.body.status),
      ['queued', 'queued', 'queued', 'queued'],
    );
    assert.equal((await admission(id)).active.length, 4);
    const numbers = await Promise.all(
      answers.map(async (a) => (await session.get(`/api/runs/${a.body.runId}`)).body.number),
    );
    assert.deepEqual([...numbers].sort(), [1, 2, 3, 4], 'concurrent triggers get distinct numbers');
  });

  it('admits sixteen triggers of one job sent at once, each numbered and queued in one order', async () => {
    // All of them write the job's admission stream: within one process they must queue, not spend their retries.
    const id = await job({ concurrency: 'queue' });
    const answers = await Promise.all(Array.from({ length: 16 }, () => session.post(`/api/jobs/${id}/runs`, {})));
    assert.deepEqual(
      answers.map((a) => a.status),
      Array.from({ length: 16 }, () => 201),
      answers.map((a) => a.text).join('\n'),
    );
    const runIds = answers.map((a) => a.body.runId as string);
    const state = await admission(id);
    assert.equal(state.active.length, 1);
    assert.deepEqual([...state.active, ...state.waiting].sort(), [...runIds].sort());
    const numbers = await Promise.all(runIds.map(async (r) => (await session.get(`/api/runs/${r}`)).body.number));
    assert.deepEqual(
      [...numbers].sort((a, b) => a - b),
      Array.from({ length: 16 }, (_, i) => i + 1),
    );
  });

  it('cancels a queued run at once, and answers 409 for a finished one', async () => {
    const id = await job();
    const run = (await session.post(`/api/jobs/${id}/runs`, {})).body.runId;
    const cancelled = await session.post(`/api/runs/${run}/cancel`);
    assert.equal(cancelled.status, 200);
    assert.equal(cancelled.body.status, 'cancelled');
    assert.match(cancelled.body.error, /cancelled before it started/i);
    const again = await session.post(`/api/runs/${run}/cancel`);
    assert.equal(again.status, 409);
    assert.equal(again.body.code, 'conflict');
    assert.equal((await session.post(`/api/runs/nope/cancel`)).status, 404);
  });

  it('retries with the same input and instructions, trigger retry', async () => {
    const id = await job({ concurrency: 'parallel' });
    const first = (await session.post(`/api/jobs/${id}/runs`, { input: [1, 2], instructions: 'again' })).body.runId;
    const retry = await token.post(`/api/runs/${first}/retry`);
    assert.equal(retry.status, 201);
    const run = (await session.get(`/api/runs/${retry.body.runId}`)).body;
    assert.equal(run.trigger, 'retry');
    assert.deepEqual(run.input, [1, 2]);
    assert.equal(run.instructions, 'again');
    assert.equal(run.number, 2);
  });

  it('cancels queued runs when the job is archived, and keeps the runs', async () => {
    const id = await job({ concurrency: 'queue' });
    const runs = [];
    for (let i = 0; i < 2; i++) runs.push((await session.post(`/api/jobs/${id}/runs`, {})).body.runId);
    assert.equal((await session.delete(`/api/jobs/${id}`)).status, 204);
    for (const r of runs) {
      const run = (await session.get(`/api/runs/${r}`)).body;
      assert.equal(run.status, 'cancelled');
      assert.equal(run.jobDeleted, true);
    }
    assert.equal((await session.post(`/api/jobs/${id}/runs`, {})).status, 404);
    assert.equal((await session.post(`/api/runs/${runs[0]}/retry`)).status, 404);
  });

  it('refuses bad input', async () => {
    const id = await job();
    const long = await session.post(`/api/jobs/${id}/runs`, { instructions: 'x'.repeat(10_001) });
    assert.equal(long.status, 400);
    assert.equal(long.body.fields[0].field, 'instructions');
    const extra = await session.post(`/api/jobs/${id}/runs`, { nope: 1 });
    assert.equal(extra.status, 400);
    assert.equal((await session.post(`/api/jobs/missing/runs`, {})).status, 404);
    const events = await session.get(`/api/runs/x/events?limit=2001`);
    assert.equal(events.status, 400);
    assert.equal(events.body.fields[0].field, 'limit');
  });
});

describe('runs: list', () => {
  it('filters, sorts and searches the run list', async () => {
    const a = await job({ name: 'Alpha 100% sure', concurrency: 'parallel' });
    const b = await job({ name: 'Bravo_report', concurrency: 'skip' });
    const ra = (await session.post(`/api/jobs/${a}/runs`, {})).body.runId;
    const rb1 = (await session.post(`/api/jobs/${b}/runs`, {})).body.runId;
    const rb2 = (await session.post(`/api/jobs/${b}/runs`, {})).body.runId; // skipped
    const both = `job=${a},${b}`;
    const all = (await session.get(`/api/runs?${both}`)).body;
    assert.equal(all.total, 3);
    assert.deepEqual(
      all.items.map((r: { id: string }) => r.id),
      [rb2, rb1, ra],
      'default sort -queuedAt',
    );
    assert.deepEqual(
      (await session.get(`/api/runs?${both}&status=skipped`)).body.items.map((r: { id: string }) => r.id),
      [rb2],
    );
    assert.equal((await session.get(`/api/runs?${both}&trigger=api`)).body.total, 0);
    assert.equal((await session.get(`/api/runs?${both}&mode=explore&trigger=manual`)).body.total, 3);
    assert.deepEqual(
      (await session.get(`/api/runs?${both}&search=100%25`)).body.items.map((r: { id: string }) => r.id),
      [ra],
      'search is literal',
    );
    assert.equal((await session.get(`/api/runs?${both}&search=o_r`)).body.total, 2);
    assert.equal(
      (await session.get(`/api/runs?${both}&search=still%20active`)).body.total,
      1,
      'search covers the error',
    );
    const byJob = (await session.get(`/api/runs?${both}&sort=job,-number`)).body.items.map((r: { id: string }) => r.id);
    assert.deepEqual(byJob, [ra, rb2, rb1]);
    const first = (await session.get(`/api/runs?${both}`)).body.items[0].queuedAt;
    assert.equal((await session.get(`/api/runs?${both}&from=${first + 1}`)).body.total, 0);
    assert.equal((await session.get(`/api/runs?${both}&to=${first}`)).body.total, 2, 'to is exclusive');
    const bad = await session.get('/api/runs?sort=nope&status=weird&pageSize=101');
    assert.equal(bad.status, 400);
    assert.deepEqual(bad.body.fields.map((f: { field: string }) => f.field).sort(), ['pageSize']);
    const badSort = await session.get('/api/runs?sort=nope');
    assert.equal(badSort.body.fields[0].field, 'sort');
    const badStatus = await session.get('/api/runs?status=weird');
    assert.equal(badStatus.body.fields[0].field, 'status');
  });
});

describe('webhooks', () => {
  it('creates a token shown once, rotates it, and starts runs with the body as input', async () => {
    const id = await job({ concurrency: 'parallel' });
    assert.equal((await session.get(`/api/jobs/${id}`)).body.hasWebhookToken, false);
    const created = await session.post(`/api/jobs/${id}/webhook-token`);
    assert.equal(created.status, 201);
    assert.match(created.body.token, /^svh_/);
    assert.equal(created.body.url, `/hooks/${id}`);
    assert.equal((await session.get(`/api/jobs/${id}`)).body.hasWebhookToken, true);
    const hook = (body: string | undefined, tok: string, type = 'application/json') =>
      fetch(`${t.url}/hooks/${id}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${tok}`, ...(body !== undefined ? { 'content-type': type } : {}) },
        body,
      });
    const ok = await hook('{"order": 7}', created.body.token);
    assert.equal(ok.status, 200);
    const answer = (await ok.json()) as { runId: string; status: string };
    assert.equal(answer.status, 'queued');
    const run = (await session.get(`/api/runs/${answer.runId}`)).body;
    assert.equal(run.trigger, 'webhook');
    assert.deepEqual(run.input, { order: 7 });
    const text = (await (await hook('plain words', created.body.token, 'text/plain')).json()) as { runId: string };
    assert.equal((await session.get(`/api/runs/${text.runId}`)).body.input, 'plain words');
    const empty = (await (await hook(undefined, created.body.token)).json()) as { runId: string };
    assert.deepEqual((await session.get(`/api/runs/${empty.runId}`)).body.input, {});

    const rotated = await session.post(`/api/jobs/${id}/webhook-token`);
    const old = await hook('{}', created.body.token);
    assert.equal(old.status, 401);
    assert.equal(((await old.json()) as { code: string }).code, 'invalid_token');
    assert.equal((await hook('{}', rotated.body.token)).status, 200);
    assert.equal((await fetch(`${t.url}/hooks/${id}`, { method: 'POST' })).status, 401);
    assert.equal((await hook('{}', 'svh_wrong')).status, 401);
  });

  it('declines a disabled job with skipped and no run, and rate-limits with Retry-After', async () => {
    const id = await job({ enabled: false, concurrency: 'parallel' });
    const tok = (await session.post(`/api/jobs/${id}/webhook-token`)).body.token as string;
    const call = () => fetch(`${t.url}/hooks/${id}`, { method: 'POST', headers: { authorization: `Bearer ${tok}` } });
    const declined = (await (await call()).json()) as { runId: string | null; status: string };
    assert.deepEqual(declined, { runId: null, status: 'skipped' });
    assert.equal((await session.get(`/api/runs?job=${id}`)).body.total, 0);
    // Manual runs still work on a disabled job.
    assert.equal((await session.post(`/api/jobs/${id}/runs`, {})).body.status, 'queued');
    let limited: Response | null = null;
    for (let i = 0; i < 40 && !limited; i++) {
      const res = await call();
      if (res.status === 429) limited = res;
    }
    assert.ok(limited, 'the burst of 30 is exhausted within 40 calls');
    assert.ok(Number(limited.headers.get('retry-after')) >= 1);
    assert.equal(((await limited.json()) as { code: string }).code, 'rate_limited');
  });
});

describe('schedules', () => {
  it('fires each occurrence exactly once with several schedulers, then moves nextRunAt on', async () => {
    const id = await job({ cron: '*/5 * * * *', timezone: 'Europe/Oslo', concurrency: 'parallel' });
    const dto = (await session.get(`/api/jobs/${id}`)).body;
    assert.ok(dto.nextRunAt > Date.now());
    assert.equal(dto.nextRunAt % (5 * 60_000), 0);
    const s = t.server.services;
    let now = dto.nextRunAt as number;
    const clock = { now: () => now };
    const log = { error: () => {} };
    const schedulers = [1, 2, 3].map(() => new Scheduler(s.bus, s.stores.docs, s.engine, s.runs, log, clock));
    const fired = await Promise.all(schedulers.map((x) => x.tick()));
    assert.equal(
      fired.reduce((a, b) => a + b, 0),
      1,
      'one scheduler fired it',
    );
    const runs = (await session.get(`/api/runs?job=${id}`)).body;
    assert.equal(runs.total, 1);
    assert.equal(runs.items[0].trigger, 'schedule');
    const next = (await session.get(`/api/jobs/${id}`)).body.nextRunAt;
    assert.equal(next, dto.nextRunAt + 5 * 60_000);
    // Down for an hour: the missed occurrences fire once, not twelve times.
    now = next + 60 * 60_000 + 1000;
    assert.equal((await schedulers[0]!.tick()) + (await schedulers[1]!.tick()), 1);
    assert.equal((await session.get(`/api/runs?job=${id}`)).body.total, 2);
    assert.ok((await session.get(`/api/jobs/${id}`)).body.nextRunAt > now);
  });

  it('skips a disabled job and clears nextRunAt', async () => {
    const id = await job({ cron: '@hourly' });
    assert.notEqual((await session.get(`/api/jobs/${id}`)).body.nextRunAt, null);
    const off = await session.patch(`/api/jobs/${id}`, { enabled: false });
    assert.equal(off.body.nextRunAt, null);
    const on = await session.patch(`/api/jobs/${id}`, { enabled: true });
    assert.ok(on.body.nextRunAt > Date.now());
    assert.equal((await session.patch(`/api/jobs/${id}`, { cron: '' })).body.nextRunAt, null);
  });
});

describe('instance events', () => {
  it('streams a run message per status change of the workspace', async () => {
    const id = await job();
    const abort = new AbortController();
    const res = await fetch(`${t.url}/api/events`, {
      headers: { cookie: (session.credential as { cookie: string }).cookie },
      signal: abort.signal,
    });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /text\/event-stream/);
    assert.ok(res.headers.get('x-request-id'));
    const reader = res.body!.getReader();
    const run = (await session.post(`/api/jobs/${id}/runs`, {})).body.runId as string;
    await session.post(`/api/runs/${run}/cancel`);
    let text = '';
    while (!text.includes('"status":"cancelled"')) text += new TextDecoder().decode((await reader.read()).value);
    abort.abort();
    assert.match(
      text,
      new RegExp(`event: run\\ndata: \\{"kind":"run","runId":"${run}","jobId":"${id}","status":"queued"\\}`),
    );
    assert.match(text, /"status":"cancelled"/);
  });
});
