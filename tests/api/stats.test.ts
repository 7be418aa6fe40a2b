import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { summarizeJobRuns } from '../../api/routes/stats.js';
import { waitFor } from '../wait.js';
import { adminSession, Client, createToken, startTestServer, userSession, type TestServer } from './harness.js';

/** `GET /api/jobs/{id}/stats` over real runs of the fake provider. */
let t: TestServer;
let api: Client;

before(async () => {
  t = await startTestServer();
  api = await adminSession(t);
  const provider = (await api.post<{ id: string }>('/api/providers', { name: 'Fake', kind: 'fake' })).body.id;
  const model = (await api.get('/api/models')).body.items.find(
    (m: { providerId: string }) => m.providerId === provider,
  ).id;
  // A nominal price, so runs cost something: one micro-USD per token.
  assert.equal(
    (await api.patch(`/api/models/${model}`, { price: { in: 1_000_000, out: 1_000_000, cacheRead: 0, cacheWrite: 0 } }))
      .status,
    200,
  );
  assert.equal((await api.patch('/api/settings', { agentModelId: model })).status, 200);
});
after(async () => t?.stop());

async function finished(runId: string): Promise<Record<string, any>> {
  return waitFor(`run ${runId} to end`, async () => {
    const run = (await api.get(`/api/runs/${runId}`)).body as Record<string, any>;
    return !['queued', 'provisioning', 'running', 'verifying'].includes(run.status) && run;
  });
}

describe('job stats', () => {
  it('summarizes non-skipped runs with learning costs, and marks playbook versions', async () => {
    const id = (
      await api.post('/api/jobs', {
        name: `stats ${Math.random()}`,
        instruction: 'Say it: `echo ok`',
        selfImprove: false,
      })
    ).body.id as string;
    const first = await api.post(`/api/jobs/${id}/runs`, {});
    const skipped = await api.post(`/api/jobs/${id}/runs`, {});
    assert.equal(skipped.body.status, 'skipped');
    const r1 = await finished(first.body.runId);
    assert.equal(r1.status, 'succeeded', JSON.stringify(r1));
    assert.equal(
      (await api.request('PUT', `/api/jobs/${id}/playbook`, { content: { learnings: [{ text: 'It says ok' }] } }))
        .status,
      200,
    );
    assert.equal((await api.patch(`/api/jobs/${id}`, { instruction: 'Fail: `false`' })).status, 200);
    const r2 = await finished((await api.post(`/api/jobs/${id}/runs`, {})).body.runId);
    assert.equal(r2.status, 'failed', JSON.stringify(r2));

    const token = (await createToken(api)).client;
    const res = await token.get(`/api/jobs/${id}/stats`);
    assert.equal(res.status, 200, res.text);
    const s = res.body;
    assert.deepEqual(Object.keys(s).sort(), ['avgCost', 'p50Ms', 'runs', 'successRate', 'versions']);
    assert.deepEqual(
      s.runs.map((p: { number: number }) => p.number),
      [1, 3],
    );
    const point = (r: Record<string, any>) => ({
      runId: r.id,
      number: r.number,
      queuedAt: r.queuedAt,
      status: r.status,
      mode: r.mode,
      cost: r.cost + r.reflectionCost + r.verifyCost,
      msTotal: r.msTotal,
      turns: r.turns,
      playbookVersion: r.playbookVersion,
    });
    assert.deepEqual(s.runs, [point(r1), point(r2)]);
    assert.equal(s.runs[1].playbookVersion, 1);
    assert.ok(r1.cost > 0);
    assert.equal(s.successRate, 0.5);
    assert.equal(s.avgCost, Math.round((point(r1).cost + point(r2).cost) / 2));
    assert.equal(s.p50Ms, Math.min(r1.msTotal, r2.msTotal));
    assert.equal(s.versions.length, 1);
    assert.deepEqual([s.versions[0].version, s.versions[0].author], [1, 'user']);
    assert.equal((await api.get(`/api/jobs/${id}/stats?range=7d`)).body.runs.length, 2);
    assert.equal((await api.get(`/api/jobs/${id}/stats?range=90d`)).body.runs.length, 2);
  });

  it('answers zeros for a job without runs, 400 for other ranges, 404 and 401 as everywhere', async () => {
    const id = (await api.post('/api/jobs', { name: `idle ${Math.random()}`, instruction: 'Nothing' })).body
      .id as string;
    assert.deepEqual((await api.get(`/api/jobs/${id}/stats`)).body, {
      runs: [],
      versions: [],
      successRate: 0,
      avgCost: 0,
      p50Ms: 0,
    });
    for (const range of ['24h', '1y', '']) {
      const bad = await api.get(`/api/jobs/${id}/stats?range=${range}`);
      assert.equal(bad.status, 400, `${range}: ${bad.text}`);
      assert.equal(bad.body.code, 'validation_failed');
    }
    assert.equal((await api.get('/api/jobs/nope/stats')).status, 404);
    assert.equal((await new Client(t.url).get(`/api/jobs/${id}/stats`)).status, 401);
  });
});

describe('job stats rules', () => {
  const run = (n: number, status: string, msTotal: number | null, cost = 10) =>
    ({
      _id: `r${n}`,
      number: n,
      queuedAt: n,
      status,
      mode: 'explore',
      cost,
      reflectionCost: 1,
      verifyCost: 2,
      msTotal,
      turns: 1,
      playbookVersion: 0,
    }) as Parameters<typeof summarizeJobRuns>[0][number];

  it('counts timed out runs as failures, leaves cancelled and live ones out of the rate, and takes the lower median', () => {
    const s = summarizeJobRuns([
      run(1, 'succeeded', 400),
      run(2, 'timed_out', 100),
      run(3, 'cancelled', 300),
      run(4, 'running', null),
      run(5, 'succeeded', 200),
    ]);
    assert.equal(s.successRate, 2 / 3);
    assert.equal(s.avgCost, 13);
    // Sorted 100, 200, 300, 400: offset ⌊(4 − 1) / 2⌋ = 1.
    assert.equal(s.p50Ms, 200);
  });

  it('keeps the newest 500 runs, oldest first', () => {
    const many = Array.from({ length: 620 }, (_, i) => run(i + 1, 'succeeded', 10));
    const s = summarizeJobRuns(many);
    assert.equal(s.runs.length, 500);
    assert.deepEqual([s.runs[0]!.number, s.runs[499]!.number], [121, 620]);
    assert.equal(s.avgCost, 13);
  });
});

/** Every run of the workspace, through the public list. */
async function allRuns(): Promise<Array<Record<string, any>>> {
  const out: Array<Record<string, any>> = [];
  for (let page = 1; ; page++) {
    const res = await api.get(`/api/runs?pageSize=100&page=${page}`);
    out.push(...res.body.items);
    if (out.length >= res.body.total) return out;
  }
}

async function someFinishedRun(
  name: string,
  instruction = 'Say it: `echo ok`',
  selfImprove = false,
): Promise<Record<string, any>> {
  const id = (await api.post('/api/jobs', { name: `${name} ${Math.random()}`, instruction, selfImprove })).body
    .id as string;
  return finished((await api.post(`/api/jobs/${id}/runs`, {})).body.runId);
}

describe('stats overview', () => {
  it('answers the (B) shape from the read model, agreeing with the runs the API lists', async () => {
    await someFinishedRun('overview');
    // A run that reflects: its model's tokens count as learning tokens.
    const learner = await someFinishedRun('overview learns', undefined, true);
    const reflected = await waitFor('the reflection to end', async () => {
      const r = (await api.get(`/api/runs/${learner.id}`)).body as Record<string, any>;
      return r.reflection !== 'pending' && r;
    });
    assert.ok(reflected.reflectionCost > 0, JSON.stringify(reflected));
    const token = (await createToken(api)).client;
    const res = await token.get('/api/stats/overview');
    assert.equal(res.status, 200, res.text);
    const o = res.body;
    assert.deepEqual(Object.keys(o).sort(), [
      'bucket',
      'bucketMs',
      'costByJob',
      'current',
      'from',
      'gettingCheaper',
      'gettingLeaner',
      'hasRuns',
      'perDay',
      'previous',
      'range',
      'recentFailures',
      'running',
      'to',
    ]);
    assert.deepEqual([o.range, o.bucket, o.bucketMs, o.perDay.length], ['7d', 'day', 86_400_000, 7]);
    assert.equal(o.to - o.from, 7 * 86_400_000);
    assert.equal(o.from % 86_400_000, 0);
    assert.equal(o.hasRuns, true);
    // The oracle: the runs as GET /api/runs lists them, summed by the stated rules.
    const runs = (await allRuns()).filter((r) => r.queuedAt >= o.from && r.status !== 'skipped');
    const ms = runs
      .map((r) => r.msTotal)
      .filter((m): m is number => m !== null)
      .sort((a, b) => a - b);
    const succeeded = runs.filter((r) => r.status === 'succeeded').length;
    const failed = runs.filter((r) => r.status === 'failed' || r.status === 'timed_out').length;
    assert.deepEqual(o.current, {
      runs: runs.length,
      succeeded,
      failed,
      successRate: succeeded / (succeeded + failed),
      p50Ms: ms[Math.floor(((ms.length - 1) * 50) / 100)],
      p95Ms: ms[Math.floor(((ms.length - 1) * 95) / 100)],
      runCost: runs.reduce((n, r) => n + r.cost, 0),
      learningCost: runs.reduce((n, r) => n + r.reflectionCost + r.verifyCost, 0),
      runTokens: runs.reduce((n, r) => n + r.tokIn + r.tokOut, 0),
      // At one micro-USD a token (and no cached tokens from the fake provider), tokens and cost agree.
      learningTokens: runs.reduce((n, r) => n + r.reflectionCost + r.verifyCost, 0),
    });
    const today = o.perDay[o.perDay.length - 1];
    assert.ok(today.skipped >= 1, 'skipped runs are counted in the buckets');
    assert.deepEqual(o.previous.runs, 0);

    const hourly = (await api.get('/api/stats/overview?range=24h')).body;
    assert.deepEqual([hourly.bucket, hourly.perDay.length, hourly.current.runs], ['hour', 24, runs.length]);
  });

  it('refuses other ranges and unknown parameters; needs a credential', async () => {
    for (const q of ['range=1y', 'range=', 'range=7D', 'range=24h&range=7d', 'days=7']) {
      const bad = await api.get(`/api/stats/overview?${q}`);
      assert.equal(bad.status, 400, `${q}: ${bad.text}`);
      assert.equal(bad.body.code, 'validation_failed');
    }
    assert.equal((await new Client(t.url).get('/api/stats/overview')).status, 401);
  });
});

describe('run deletion', () => {
  it('is for admins: members get 403, an admin token works; the run leaves lists, timeline and stats figures stay', async () => {
    const member = await userSession(t, api, `member-${Math.random()}@example.com`);
    const run = await someFinishedRun('delete me');
    const before = (await api.get('/api/stats/overview')).body;
    const jobStatsBefore = (await api.get(`/api/jobs/${run.jobId}/stats`)).body;

    const refused = await member.client.request('DELETE', `/api/runs/${run.id}`);
    assert.equal(refused.status, 403, refused.text);
    assert.equal(
      (await (await createToken(member.client)).client.post('/api/runs/delete', { ids: [run.id] })).status,
      403,
    );
    assert.equal((await api.get(`/api/runs/${run.id}`)).status, 200, 'still there after the refusals');

    const adminToken = (await createToken(api)).client;
    const gone = await adminToken.request('DELETE', `/api/runs/${run.id}`);
    assert.equal(gone.status, 204, gone.text);
    assert.equal((await api.get(`/api/runs/${run.id}`)).status, 404);
    assert.equal((await api.get(`/api/runs/${run.id}/events`)).status, 404);
    assert.equal((await api.request('DELETE', `/api/runs/${run.id}`)).status, 404);
    assert.ok(!(await allRuns()).some((r) => r.id === run.id));
    // Statistics keep the deleted run's figures (docs/design.md, "Stats").
    const after = (await api.get('/api/stats/overview')).body;
    assert.deepEqual(after.current, before.current);
    assert.deepEqual((await api.get(`/api/jobs/${run.jobId}/stats`)).body, jobStatsBefore);
  });

  it('bulk: at most 100 well-formed ids; unknown, foreign and unfinished ones are skipped and reported', async () => {
    const ids = (n: number) => Array.from({ length: n }, (_, i) => `id-${i}`);
    for (const body of [
      { ids: ids(101) },
      { ids: [] },
      {},
      { ids: 'abc' },
      { ids: [42] },
      { ids: ['x'.repeat(101)] },
      { ids: [''] },
      { ids: ['a'], more: true },
    ]) {
      const bad = await api.post('/api/runs/delete', body);
      assert.equal(bad.status, 400, `${JSON.stringify(body).slice(0, 80)}: ${bad.text}`);
      assert.equal(bad.body.code, 'validation_failed');
    }
    const done = await someFinishedRun('bulk');
    const jobId = (await api.post('/api/jobs', { name: `slow ${Math.random()}`, instruction: 'Wait: `sleep 30`' })).body
      .id as string;
    const liveId = (await api.post(`/api/jobs/${jobId}/runs`, {})).body.runId as string;
    const answer = await api.post('/api/runs/delete', {
      ids: [done.id, liveId, '../../etc/passwd', done.id, 'nope'],
    });
    assert.equal(answer.status, 200, answer.text);
    assert.deepEqual(answer.body.deleted, [done.id]);
    assert.deepEqual(
      answer.body.skipped.map((s: { id: string; reason: string }) => [s.id, s.reason]),
      [
        [liveId, 'unfinished'],
        ['../../etc/passwd', 'not_found'],
        ['nope', 'not_found'],
      ],
    );
    const live = await api.request('DELETE', `/api/runs/${liveId}`);
    assert.equal(live.status, 409, live.text);
    assert.equal((await api.post(`/api/runs/${liveId}/cancel`, {})).status, 200);
    // 100 ids is the limit, not past it.
    assert.equal((await api.post('/api/runs/delete', { ids: ids(100) })).body.skipped.length, 100);
  });
});
