// npm run bench: machine-readable results on stdout (JSON) and in .bench/results.json. See docs/performance.md.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import autocannon from 'autocannon';
import { jobDecider, jobStreamId } from '../domain/job.js';
import { defaultWorkspaceId } from '../domain/workspace.js';
import { ProjectionEngine } from '../projections/engine.js';
import { allProjectors } from '../projections/index.js';
import { loadConfig } from '../app/config.js';
import { newId } from '../app/ids.js';
import { createLogger, startServer } from '../server/start.js';
import type { EventMetadata } from '../store/event-store.js';
import { openSqliteDocumentStore } from '../store/sqlite-document-store.js';
import { openSqliteEventStore } from '../store/sqlite-event-store.js';
import { summarize } from './stats.js';
import { serveEnv, serveNodeFlags } from '../cli/memory-settings.js';
import { apiTokenFromLink, cliArgs, rssMb, servedUrl, waitForFile } from './served.js';
import { dockerProvisioning, runBenchmarks, sandboxBenchmarks, sseFanOut } from './runs.js';
import { lifeBenchmark, scriptedOverhead } from './learning.js';
import { mcpBenchmarks } from './mcp.js';
import { creationsBenchmark } from './creations.js';
import { memoryBenchmark } from './memory.js';
import { overviewBenchmark } from './overview.js';
import { rebuildBenchmark } from './rebuild.js';
import { scalingBenchmark } from './scaling.js';
import { webBenchmarks } from './web.js';

const quick = process.argv.includes('--quick');
const root = mkdtempSync(join(tmpdir(), 'svc-bench-'));
const meta: EventMetadata = {
  workspaceId: 'w',
  actor: { type: 'system', id: null },
  requestId: null,
  correlationId: null,
  causationId: null,
  ts: 0,
};
const log = (msg: string) => process.stderr.write(`[bench] ${msg}\n`);

async function appends() {
  const store = openSqliteEventStore(join(root, 'appends.db'));
  const n = quick ? 2000 : 10_000;
  let t0 = performance.now();
  for (let i = 0; i < n; i++)
    await store.append(`s-${i % 100}`, [{ type: 'Bench', data: { i }, metadata: meta }], 'any');
  const single = n / ((performance.now() - t0) / 1000);
  const batches = quick ? 100 : 500;
  const batch = Array.from({ length: 100 }, (_, i) => ({ type: 'Bench', data: { i }, metadata: meta }));
  t0 = performance.now();
  for (let i = 0; i < batches; i++) await store.append(`b-${i}`, batch, 'no_stream');
  const secs = (performance.now() - t0) / 1000;
  await store.close();
  return {
    singleEventAppendsPerSec: Math.round(single),
    hundredEventAppendsPerSec: Math.round(batches / secs),
    eventsPerSecInBatches: Math.round((batches * 100) / secs),
  };
}

async function projectionLag() {
  const events = openSqliteEventStore(join(root, 'lag-events.db'));
  const docs = openSqliteDocumentStore(join(root, 'lag-read.db'));
  const engine = new ProjectionEngine(events, docs, allProjectors, { error: () => {}, info: () => {} });
  await engine.start();
  const samples: number[] = [];
  const n = quick ? 200 : 1000;
  for (let i = 0; i < n; i++) {
    const id = newId();
    const t0 = performance.now();
    const r = await events.append(
      jobStreamId(id),
      jobDecider
        .decide(
          {
            type: 'CreateJob',
            jobId: id,
            workspaceId: defaultWorkspaceId,
            fields: { name: `lag ${i}`, instruction: 'x' },
            now: Date.now(),
          },
          jobDecider.initialState,
        )
        .map((e) => ({ ...e, metadata: meta })),
      'no_stream',
    );
    await engine.waitFor(r.position, 5000);
    samples.push(performance.now() - t0);
  }
  await engine.stop();
  await events.close();
  await docs.close();
  return summarize(samples);
}

function spawnLine(
  args: string[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ child: ChildProcess; line: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'], env });
    let buf = '';
    child.stdout!.on('data', (d: Buffer) => {
      buf += d.toString();
      const nl = buf.indexOf('\n');
      if (nl >= 0) resolve({ child, line: buf.slice(0, nl).trim() });
    });
    child.once('exit', (code) => reject(new Error(`child exited with ${code}`)));
  });
}

async function cannon(url: string, headers: Record<string, string>) {
  const result = await autocannon({ url, connections: 10, duration: quick ? 3 : 10, headers });
  if (result.non2xx > 0 || result.errors > 0)
    throw new Error(`benchmark requests failed: ${result.non2xx} non-2xx, ${result.errors} errors`);
  return {
    requestsPerSec: Math.round(result.requests.average),
    latencyP50Ms: result.latency.p50,
    latencyP99Ms: result.latency.p99,
  };
}

async function serverRss() {
  const dataDir = join(root, 'rss');
  // Started as `npm start` and `svc serve` start it (cli/memory-settings.ts).
  const child = spawn(
    process.execPath,
    [...serveNodeFlags, ...cliArgs, 'serve', '--port', '0', '--data-dir', dataDir],
    {
      stdio: 'ignore',
      env: { ...process.env, ...serveEnv, SVC_LOG_LEVEL: 'warn' },
    },
  );
  await waitForFile(join(dataDir, 'server.json'), child);
  await new Promise((r) => setTimeout(r, 1000));
  const rss = rssMb(child.pid!);
  child.kill('SIGKILL');
  return { rssAfterStartMb: rss, runtime: cliArgs[0] === 'dist/cli/main.js' ? 'dist' : 'tsx' };
}

async function listBenchmark() {
  const dataDir = join(root, 'list');
  const jobs = quick ? 2000 : 10_000;
  // Seed through the real command path, in-process, then serve the data from a separate process.
  const seeded = await startServer(
    loadConfig({ port: 0, dataDir }, { NODE_ENV: 'test' }),
    createLogger('silent'),
    () => {},
  );
  const { bus, engine, identity } = seeded.services;
  for (let i = 0; i < jobs; i++) {
    const id = newId();
    await bus.execute(
      jobStreamId(id),
      jobDecider,
      {
        type: 'CreateJob',
        jobId: id,
        workspaceId: defaultWorkspaceId,
        fields: {
          name: `Job ${String(Math.floor(Math.random() * 1e6)).padStart(6, '0')}`,
          instruction: `instruction ${i}`,
        },
        now: Date.now(),
      },
      { workspaceId: defaultWorkspaceId, actor: { type: 'system', id: null }, requestId: null },
    );
  }
  await engine.catchUp();
  const link = await identity.issueSignInLink('bench@example.com');
  await seeded.close();
  log(`seeded ${jobs} jobs`);

  const server = spawn(process.execPath, [...cliArgs, 'serve', '--port', '0', '--data-dir', dataDir], {
    stdio: 'ignore',
    env: { ...process.env, SVC_LOG_LEVEL: 'warn' },
  });
  try {
    const url = await servedUrl(dataDir, server);
    const token = await apiTokenFromLink(url, link);
    const headers = { authorization: `Bearer ${token}` };
    const path = '/api/jobs?pageSize=25&sort=name';
    const body = await (await fetch(url + path, { headers })).text();
    const total = (JSON.parse(body) as { total: number }).total;
    if (total < jobs) throw new Error(`expected ${jobs} jobs, list says ${total}`);
    await cannon(url + path, headers); // warm-up
    const svc = await cannon(url + path, headers);
    const bare = await spawnLine(['--import', 'tsx', 'bench/bare-server.ts', body]);
    try {
      await cannon(bare.line + path, {});
      const baseline = await cannon(bare.line + path, {});
      return {
        jobs,
        responseBytes: Buffer.byteLength(body),
        svc,
        bareFastify: baseline,
        throughputRatio: Math.round((svc.requestsPerSec / baseline.requestsPerSec) * 100) / 100,
      };
    } finally {
      bare.child.kill('SIGKILL');
    }
  } finally {
    server.kill('SIGKILL');
  }
}

const results: Record<string, unknown> = {
  machine: { cpus: (await import('node:os')).cpus().length, node: process.version },
  quick,
};
// `npm run bench -- --only jobList,sse` runs only those steps (for a quick look; the write-up uses whole runs).
const only = process.argv.includes('--only')
  ? new Set((process.argv[process.argv.indexOf('--only') + 1] ?? '').split(','))
  : null;
const steps: Array<[string, string, () => Promise<unknown>]> = [
  ['appends', 'appends', appends],
  ['projectionLagMs', 'projection lag', projectionLag],
  ['server', 'server RSS', serverRss],
  ['jobList', 'job list', listBenchmark],
  ['creations', 'job creations', () => creationsBenchmark(root, quick)],
  ['sandbox', 'sandboxes and svc', () => sandboxBenchmarks(root, quick)],
  ['docker', 'docker sandboxes', () => dockerProvisioning(root, quick)],
  ['runs', 'runs', () => runBenchmarks(root, quick)],
  ['sse', 'SSE fan-out', () => sseFanOut(root, quick)],
  ['life', "a job's life", lifeBenchmark],
  ['scripted', 'scripted run overhead', () => scriptedOverhead(join(root, 'scripted'), quick)],
  ['mcp', 'MCP', () => mcpBenchmarks(root, quick)],
  ['overview', 'stats overview', () => overviewBenchmark(root, quick)],
  ['rebuild', 'rebuild projections', () => rebuildBenchmark(root, quick)],
  ['memory', 'memory through creations and runs', () => memoryBenchmark(root, quick)],
  ['web', 'web app in chromium', () => webBenchmarks(root, quick)],
  ['scaling', 'runs per second with 1, 2 and 4 runner processes', () => scalingBenchmark(root, quick)],
];
for (const [key, label, step] of steps) {
  if (only && !only.has(key)) continue;
  log(label);
  results[key] = await step();
}
type R = Record<string, any>;
const r = results as R;
/** A target's verdict, or null when its step did not run. */
const met = (key: string, check: (v: R) => boolean) => (r[key] === undefined ? null : check(r[key] as R));
const targets = {
  singleEventAppendsPerSec: met('appends', (v) => v.singleEventAppendsPerSec >= 5000),
  projectionLagP99: met('projectionLagMs', (v) => v.p99 <= 25),
  listP99: met('jobList', (v) => v.svc.latencyP99Ms <= 15),
  listThroughputHalfOfBare: met('jobList', (v) => v.throughputRatio >= 0.5),
  rssUnder150Mb: met('server', (v) => v.rssAfterStartMb < 150),
  memoryPeakUnder150Mb: met('memory', (v) => v.peakMb < 150),
  creations4000PerSec: met('creations', (v) => v.creationsPerSec >= 4000 && v.latencyP99Ms <= 25),
  bwrapProvisionP50: met('sandbox', (v) => v.bwrapProvisionMs.p50 <= 30),
  svcRoundTripP50: met('sandbox', (v) => v.svcStateSetRoundTripMs.perCallIncludingProcessStart <= 5),
  dockerProvisionP50: met('docker', (v) => ('dockerProvisionMs' in v ? v.dockerProvisionMs.p50 <= 300 : false)),
  triggerToRunningP50: met('runs', (v) => v.triggerToRunningMs.p50 <= 100),
  scriptedOverheadP50: met('scripted', (v) => v.overheadP50Ms <= 150),
  svcMcpCallUnder15Ms: met('mcp', (v) => v.svcMcpCall.perCallMs <= 15),
  sseDeliveryP99: met('sse', (v) => v.deliveryMs.p99 <= 100),
  // Warm (repeated queries) and live (a run projected before each query); the cold series is a process's first query.
  overviewP99: met('overview', (v) =>
    [v.overviewQueryMs, v.overviewLiveQueryMs].every((series) =>
      Object.values(series as Record<string, { p99: number }>).every((q) => q.p99 <= 20),
    ),
  ),
  rebuildAt50kEventsPerSec: met('rebuild', (v) => v.rebuildEventsPerSec >= 50_000),
  webInitialJsUnder200KbGzip: met('web', (v) => v.initialJavaScript.gzipKb <= 200),
  webJobsPage2000InteractiveUnder1s: met('web', (v) => v.jobsPage.interactiveMs.p50 <= 1000),
  webTimeline10000OpensUnder1s: met('web', (v) => v.timeline.open.allEntriesLoadedMs.p50 <= 1000),
  webTimelineLiveSmooth: met(
    'web',
    (v) => v.timeline.live.frameMs.p50 <= 17.5 && v.timeline.live.framesOver50Ms <= v.timeline.live.frames * 0.05,
  ),
};
results.targetsMet = targets;
// Issue 16 judges the write path against what the store alone does on the same machine in the same run.
if (r.creations && r.appends)
  results.creationsPerSingleAppend =
    Math.round((r.creations.creationsPerSec / r.appends.singleEventAppendsPerSec) * 1000) / 1000;
const json = JSON.stringify(results, null, 2);
mkdirSync('.bench', { recursive: true });
writeFileSync('.bench/results.json', json + '\n');
process.stdout.write(json + '\n');
rmSync(root, { recursive: true, force: true });
