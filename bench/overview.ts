// The stats overview over many runs (issue: stats): the rebuild of the stats read model from the log in events per
// second, then GET /api/stats/overview's query over it, per range. Results: docs/performance.md.
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { JobQueries } from '../app/queries/jobs.js';
import { StatsQueries } from '../app/queries/stats.js';
import { runStreamId, type RunEvent } from '../domain/run.js';
import type { OverviewRange } from '../domain/stats.js';
import { ProjectionEngine } from '../projections/engine.js';
import { ReadCache } from '../projections/read-cache.js';
import { runsProjector } from '../projections/runs.js';
import { statsProjector } from '../projections/stats.js';
import type { EventMetadata, NewEvent } from '../store/event-store.js';
import { openSqliteDocumentStore } from '../store/sqlite-document-store.js';
import { openSqliteEventStore } from '../store/sqlite-event-store.js';
import { summarize } from './stats.js';

const dayMs = 24 * 60 * 60 * 1000;
const quiet = { error: () => {}, info: () => {} };

/** A run's life as its stream holds it: queued, claimed, started, finished (skipped runs: one event). */
function runEvents(i: number, queuedAt: number, jobs: number): RunEvent[] {
  const runId = `bench-run-${i}`;
  const jobId = `bench-job-${i % jobs}`;
  const plan = {
    runId,
    jobId,
    jobName: `Job ${i % jobs}`,
    workspaceId: 'w',
    number: Math.floor(i / jobs) + 1,
    trigger: 'schedule' as const,
    triggeredBy: null,
    input: {},
    instructions: null,
    mode: 'explore' as const,
    playbookVersion: 0,
    modelId: null,
    queuedAt,
  };
  if (i % 50 === 7) return [{ type: 'RunSkipped', data: { ...plan, error: 'busy', finishedAt: queuedAt } }];
  const startedAt = queuedAt + 200;
  const msTotal = 1000 + ((i * 7919) % 120_000);
  const status = i % 13 === 0 ? 'failed' : i % 97 === 0 ? 'timed_out' : 'succeeded';
  return [
    { type: 'RunQueued', data: { ...plan, submitted: true } },
    { type: 'RunClaimed', data: { runId, jobId, runnerId: 'bench', startedAt } },
    { type: 'RunStarted', data: { runId, jobId, sandbox: { id: 's', backend: 'bwrap' } } },
    {
      type: 'RunFinished',
      data: {
        runId,
        jobId,
        status,
        error: null,
        summary: null,
        outputs: {},
        cost: 1000 + (i % 5000),
        turns: 3,
        tokIn: 2000 + (i % 700),
        tokOut: 300,
        fellBack: false,
        verifyCost: 0,
        verifyTokens: 0,
        reflection: 'skipped',
        finishedAt: startedAt + msTotal,
        msTotal,
      },
    },
  ];
}

export async function overviewBenchmark(root: string, quick: boolean) {
  const runs = Number(process.env.SVC_BENCH_OVERVIEW_RUNS ?? (quick ? 20_000 : 100_000));
  const jobs = 50;
  const now = Date.now();
  const events = openSqliteEventStore(join(root, 'overview-events.db'));
  const docs = openSqliteDocumentStore(join(root, 'overview-read.db'));
  const meta: EventMetadata = {
    workspaceId: 'w',
    actor: { type: 'system', id: null },
    requestId: null,
    correlationId: null,
    causationId: null,
    ts: now,
  };
  let eventCount = 0;
  for (let i = 0; i < runs; i++) {
    // Spread over the last 90 days, oldest first, so per-job numbers grow with time as real ones do.
    const queuedAt = now - 90 * dayMs + Math.floor((i / runs) * 90 * dayMs);
    const list: NewEvent[] = runEvents(i, queuedAt, jobs).map((e) => ({ type: e.type, data: e.data, metadata: meta }));
    eventCount += list.length;
    await events.append(runStreamId(`bench-run-${i}`), list, 'no_stream');
  }
  // The overview reads the runs read model for live runs and failures, and the stats read model for the rest.
  // Both through the rebuild's path (paged replay, docs/design.md, "Replay"), as `svc admin rebuild-projections` does.
  const engine = new ProjectionEngine(events, docs, [runsProjector, statsProjector], quiet);
  const t0 = performance.now();
  await engine.replay();
  const bothSecs = (performance.now() - t0) / 1000;
  process.stderr.write(`[bench] overview: ${eventCount} events projected in ${bothSecs.toFixed(1)} s\n`);
  const statsOnly = new ProjectionEngine(events, docs, [statsProjector], quiet);
  const t1 = performance.now();
  await statsOnly.rebuild();
  await statsOnly.replay();
  const statsSecs = (performance.now() - t1) / 1000;

  const jobQueries = new JobQueries(docs, new ReadCache(statsOnly, () => false), 'w');
  const samples = quick ? 50 : 200;
  const warmUp = 20;
  /** Wall times and the process's CPU per query; `before` runs untimed ahead of each query. */
  const measure = async (
    range: OverviewRange,
    queries: () => StatsQueries,
    before: () => Promise<void> = async () => {},
  ) => {
    const ms: number[] = [];
    let cpu = 0;
    for (let i = 0; i < samples + warmUp; i++) {
      await before();
      const q = queries();
      const c = process.cpuUsage();
      const s = performance.now();
      await q.overview(range, Date.now());
      const wall = performance.now() - s;
      const used = process.cpuUsage(c);
      // The first ones warm up the JIT (and, for the cached kinds, the cache).
      if (i < warmUp) continue;
      ms.push(wall);
      cpu += (used.user + used.system) / 1000;
    }
    return { ...summarize(ms), cpuMsPerQuery: Math.round((cpu / samples) * 100) / 100 };
  };
  const ranges: OverviewRange[] = ['24h', '7d', '30d', '90d'];
  // Warm: one process's cache, nothing changes between queries. Cold: every query with an empty cache (a new
  // process). Live: a run of the present hour finishes before each query, as on a busy service, so today's day and
  // the present hour are read again every time.
  const shared = new StatsQueries(docs, jobQueries, 'w');
  const overview: Record<string, Awaited<ReturnType<typeof measure>>> = {};
  const overviewCold: Record<string, Awaited<ReturnType<typeof measure>>> = {};
  const overviewLive: Record<string, Awaited<ReturnType<typeof measure>>> = {};
  for (const range of ranges) overview[range] = await measure(range, () => shared);
  for (const range of ranges) overviewCold[range] = await measure(range, () => new StatsQueries(docs, jobQueries, 'w'));
  const check = await shared.overview('90d', Date.now());
  const live = new ProjectionEngine(events, docs, [runsProjector, statsProjector], quiet);
  await live.start();
  let extra = runs;
  const finishOne = async () => {
    const i = extra++;
    const list = runEvents(i, Date.now(), jobs).map((e) => ({
      type: e.type,
      data: e.data,
      metadata: meta,
    }));
    const { position } = await events.append(runStreamId(`bench-run-${i}`), list, 'no_stream');
    if (!(await live.waitFor(position, 30_000))) throw new Error('the live projection did not catch up');
  };
  for (const range of ranges) overviewLive[range] = await measure(range, () => shared, finishOne);
  await live.stop();
  await events.close();
  await docs.close();
  return {
    runs,
    events: eventCount,
    runsCountedIn90d: check.current.runs + check.perDay.reduce((n, b) => n + b.skipped, 0),
    rebuildRunsAndStatsEventsPerSec: Math.round(eventCount / bothSecs),
    rebuildStatsEventsPerSec: Math.round(eventCount / statsSecs),
    overviewQueryMs: overview,
    overviewColdQueryMs: overviewCold,
    overviewLiveQueryMs: overviewLive,
  };
}
