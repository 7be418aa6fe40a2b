import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { RunFigures } from '../../domain/run-figures.js';
import {
  addTotals,
  bucketRun,
  byQueue,
  dayMs,
  edgePoints,
  gettingCheaper,
  gettingLeaner,
  hourMs,
  overviewPeriod,
  percentileByOffset,
  segments,
  summarize,
  valueAtOffset,
  type JobPoints,
} from '../../domain/stats.js';

const t0 = Date.UTC(2026, 0, 10, 12, 30, 15);

function run(n: number, over: Partial<RunFigures> = {}): RunFigures {
  return {
    runId: `r${n}`,
    jobId: 'j1',
    jobName: 'one',
    workspaceId: 'w',
    number: n,
    queuedAt: t0 + n,
    status: 'succeeded',
    mode: 'explore',
    playbookVersion: 0,
    cost: 10,
    reflectionCost: 0,
    verifyCost: 0,
    verifyTokens: 0,
    tokens: 100,
    learningTokens: 0,
    msTotal: 1000,
    turns: 1,
    ...over,
  };
}

const aggregate = (runs: RunFigures[]) => summarize(runs.map(bucketRun));

/** What the rules read of these runs, as the overview gathers it: counts per job, first and latest runs in queue order. */
function judge(runs: RunFigures[]): Record<string, JobPoints> {
  const list = runs.map(bucketRun).sort(byQueue);
  const edges = edgePoints(list);
  const out: Record<string, JobPoints> = {};
  for (const [jobId, jobName, , , succeeded] of summarize(list).totals.jobs)
    out[jobId] = { jobName, succeeded, ...(edges.get(jobId) ?? { first: [], last: [] }) };
  return out;
}

describe('overview periods', () => {
  it('24h: 24 hourly buckets ending with the current hour; previous cut at the same point', () => {
    const p = overviewPeriod('24h', t0);
    const hour = Date.UTC(2026, 0, 10, 12);
    assert.deepEqual(p, {
      bucket: 'hour',
      bucketMs: hourMs,
      from: hour + hourMs - 24 * hourMs,
      to: hour + hourMs,
      previousFrom: hour + hourMs - 48 * hourMs,
      previousTo: t0 - 24 * hourMs,
    });
  });

  it('7d, 30d, 90d: UTC days including today', () => {
    const today = Date.UTC(2026, 0, 10);
    for (const [range, n] of [
      ['7d', 7],
      ['30d', 30],
      ['90d', 90],
    ] as const) {
      const p = overviewPeriod(range, t0);
      assert.equal(p.bucket, 'day');
      assert.equal(p.to, today + dayMs);
      assert.equal(p.from, today + dayMs - n * dayMs);
      assert.equal((p.to - p.from) / p.bucketMs, n);
      assert.equal(p.previousFrom, p.from - n * dayMs);
      assert.equal(p.previousTo, t0 - n * dayMs);
    }
  });

  it('a moment exactly on a boundary still has its bucket in the period', () => {
    const midnight = Date.UTC(2026, 0, 10);
    const p = overviewPeriod('7d', midnight);
    assert.equal(p.to, midnight + dayMs);
    assert.ok(p.from <= midnight && midnight < p.to);
  });
});

describe('segments', () => {
  it('cuts a window into whole days, whole hours and single runs at the edges', () => {
    const start = Date.UTC(2026, 0, 1, 22, 10);
    const end = Date.UTC(2026, 0, 4, 2, 45);
    assert.deepEqual(segments(start, end), {
      days: [[Date.UTC(2026, 0, 2), Date.UTC(2026, 0, 4)]],
      hours: [
        [Date.UTC(2026, 0, 1, 23), Date.UTC(2026, 0, 2)],
        [Date.UTC(2026, 0, 4), Date.UTC(2026, 0, 4, 2)],
      ],
      runs: [
        [start, Date.UTC(2026, 0, 1, 23)],
        [Date.UTC(2026, 0, 4, 2), end],
      ],
    });
  });

  it('within one hour it is runs only; empty windows are empty', () => {
    const a = Date.UTC(2026, 0, 1, 5, 10);
    assert.deepEqual(segments(a, a + 60_000), { days: [], hours: [], runs: [[a, a + 60_000]] });
    assert.deepEqual(segments(a, a), { days: [], hours: [], runs: [] });
    assert.deepEqual(segments(a, a - 1), { days: [], hours: [], runs: [] });
  });

  it('covers every millisecond exactly once', () => {
    const start = Date.UTC(2026, 0, 1, 0, 0, 0, 1);
    const end = Date.UTC(2026, 0, 3, 0, 0, 0, 0);
    const s = segments(start, end);
    const all = [...s.days, ...s.hours, ...s.runs].sort((x, y) => x[0] - y[0]);
    assert.equal(all[0]![0], start);
    assert.equal(all[all.length - 1]![1], end);
    for (let i = 1; i < all.length; i++) assert.equal(all[i]![0], all[i - 1]![1]);
  });
});

describe('percentiles by offset', () => {
  it('picks ⌊(n−1)·q⌋ of the ascending values across lists, exactly', () => {
    const lists = [
      [5, 10, 40],
      [1, 10, 30, 100],
      [7, 8],
    ];
    const sorted = lists.flat().sort((a, b) => a - b); // 1 5 7 8 10 10 30 40 100
    for (let k = 0; k < sorted.length; k++) assert.equal(valueAtOffset(lists, k), sorted[k]);
    // n = 9: p50 at ⌊8·0.5⌋ = 4 → 10; p95 at ⌊8·0.95⌋ = 7 → 40.
    assert.equal(percentileByOffset(lists, 50), 10);
    assert.equal(percentileByOffset(lists, 95), 40);
  });

  it('uses integer arithmetic: n = 21 gives offset 19 for p95, n = 2 gives the lower value for p50', () => {
    const values = Array.from({ length: 21 }, (_, i) => (i + 1) * 10);
    assert.equal(percentileByOffset([values], 95), 200);
    assert.equal(percentileByOffset([[3, 9]], 50), 3);
    assert.equal(percentileByOffset([[3, 9]], 95), 3);
    assert.equal(percentileByOffset([], 50), 0);
    assert.equal(percentileByOffset([[], []], 95), 0);
  });

  it('agrees with sorting on random lists (duplicates, zeros, one long tail)', () => {
    let seed = 7;
    const rnd = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (let round = 0; round < 50; round++) {
      const lists = Array.from({ length: 1 + Math.floor(rnd() * 6) }, () =>
        Array.from({ length: Math.floor(rnd() * 30) }, () => Math.floor(rnd() ** 3 * 100_000)).sort((a, b) => a - b),
      );
      const sorted = lists.flat().sort((a, b) => a - b);
      if (sorted.length === 0) continue;
      for (const q of [50, 95])
        assert.equal(percentileByOffset(lists, q), sorted[Math.floor(((sorted.length - 1) * q) / 100)]);
    }
  });
});

describe('buckets', () => {
  it('counts skipped runs by status but leaves them out of the totals; failed and timed out stay apart', () => {
    const { totals: agg, durations } = aggregate([
      run(1, { msTotal: 300, reflectionCost: 4, verifyCost: 1, learningTokens: 7 }),
      run(2, { status: 'failed', msTotal: 100 }),
      run(3, { status: 'timed_out', msTotal: null }),
      run(4, { status: 'cancelled', msTotal: 200 }),
      run(5, { status: 'skipped', cost: 0, tokens: 0, msTotal: null }),
      run(6, { status: 'running', msTotal: null }),
    ]);
    assert.deepEqual(agg.counts, { succeeded: 1, failed: 1, cancelled: 1, timedOut: 1, skipped: 1, other: 1 });
    assert.equal(agg.runs, 5);
    assert.equal(agg.runCost, 50);
    assert.equal(agg.learningCost, 5);
    assert.equal(agg.cost, 55);
    assert.equal(agg.runTokens, 500);
    assert.equal(agg.learningTokens, 7);
    assert.equal(agg.tokens, 507);
    assert.deepEqual(durations, [100, 200, 300]);
    assert.deepEqual(agg.jobs, [['j1', 'one', 55, 507, 1]]);
  });

  it('adds up to the same totals as one bucket of all the runs', () => {
    const runs = Array.from({ length: 40 }, (_, i) =>
      run(i, { jobId: `j${i % 3}`, cost: i, msTotal: (i * 37) % 11, status: i % 4 === 0 ? 'failed' : 'succeeded' }),
    );
    const whole = aggregate(runs);
    const parts = [aggregate(runs.slice(0, 13)), aggregate(runs.slice(13, 30)), aggregate(runs.slice(30))];
    assert.deepEqual(addTotals(parts.map((p) => p.totals)), whole.totals);
    assert.deepEqual(
      parts.flatMap((p) => p.durations).sort((a, b) => a - b),
      whole.durations,
    );
  });

  it('names a job as its latest bucket does', () => {
    const a = aggregate([run(1, { jobName: 'old name' })]).totals;
    const b = aggregate([run(2, { jobName: 'new name' })]).totals;
    assert.deepEqual(addTotals([a, b]).jobs, [['j1', 'new name', 20, 200, 2]]);
  });
});

describe('getting cheaper and leaner', () => {
  const job = (jobId: string, jobName: string, costs: number[], tokens: number[] = costs) =>
    costs.map((cost, i) =>
      run(i + 1, { runId: `${jobId}-${i}`, jobId, jobName, cost, tokens: tokens[i]!, queuedAt: t0 + i * 1000 }),
    );

  it('needs 6 succeeded runs, compares the first 3 with the latest 3 by integer averages, top 5 by drop', () => {
    const cheaper = gettingCheaper(
      judge([
        ...job('a', 'alpha', [100, 100, 101, 90, 80, 50, 50, 51]),
        ...job('b', 'beta', [60, 60, 60, 30, 30, 30]),
        ...job('c', 'gamma', [100, 100, 100, 1, 1]), // 5 runs: not judged
        ...job('d', 'delta', [6, 6, 6, 3, 3, 3]), // the same drop as beta: by name
        ...job('e', 'eps', [0, 0, 0, 0, 0, 0]), // first sum 0
        ...job('f', 'phi', [10, 10, 10, 20, 10, 10]), // latest not below first
      ]),
    );
    // Three drops of 0.5 (a tie), so by name.
    assert.deepEqual(cheaper, [
      // First three 100+100+101 = 301 → 100; latest three 50+50+51 = 151 → 50.
      { jobId: 'a', jobName: 'alpha', firstCost: 100, recentCost: 50, dropPct: 0.5, runs: 8 },
      { jobId: 'b', jobName: 'beta', firstCost: 60, recentCost: 30, dropPct: 0.5, runs: 6 },
      { jobId: 'd', jobName: 'delta', firstCost: 6, recentCost: 3, dropPct: 0.5, runs: 6 },
    ]);
  });

  it('orders ties by name then id, and keeps the top 5', () => {
    const runs = ['f', 'b', 'e', 'a', 'd', 'c'].flatMap((id) => job(id, `job ${id}`, [40, 40, 40, 10, 10, 10]));
    const cheaper = gettingCheaper(judge(runs));
    assert.deepEqual(
      cheaper.map((c) => [c.jobId, c.dropPct]),
      [
        ['a', 0.75],
        ['b', 0.75],
        ['c', 0.75],
        ['d', 0.75],
        ['e', 0.75],
      ],
    );
  });

  it('takes the first and latest runs by queue time, then number, not by the order they are given in', () => {
    const runs = job('a', 'alpha', [9, 9, 9, 6, 3, 3], [90, 90, 90, 40, 30, 30]);
    // The latest runs come first, and two runs share a queue time: the number orders them.
    runs[4]!.queuedAt = runs[5]!.queuedAt;
    const judged = judge([...runs.slice(3).reverse(), ...runs.slice(0, 3)]);
    assert.deepEqual(gettingCheaper(judged), [
      { jobId: 'a', jobName: 'alpha', firstCost: 9, recentCost: 4, dropPct: 1 - 4 / 9, runs: 6 },
    ]);
    assert.deepEqual(gettingLeaner(judged), [
      { jobId: 'a', jobName: 'alpha', firstTokens: 90, recentTokens: 33, tokenDropPct: 1 - 33 / 90, runs: 6 },
    ]);
  });

  it('leaves failed, skipped and live runs out of the rule', () => {
    const runs = [
      ...job('a', 'alpha', [50, 50, 50, 10, 10]),
      run(99, { jobId: 'a', status: 'failed', cost: 1, queuedAt: t0 + 99_000 }),
      run(98, { jobId: 'a', status: 'skipped', cost: 0, queuedAt: t0 + 98_000 }),
    ];
    assert.deepEqual(gettingCheaper(judge(runs)), []);
  });
});
