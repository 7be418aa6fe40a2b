// Memory through a long life (issue: performance): a served process on a fresh embedded store takes job creations
// and then runs of a scripted job, and its RSS is sampled all along. Goal: under 150 MB through 100,000 creations and
// 10,000 runs (`--quick`: 5,000 and 200). Results: docs/performance.md, "Memory through a long life".
import { spawn } from 'node:child_process';
import { diskHelpersCpuMs } from './disk-helpers.js';
import { cpuTimesMs } from './proc-stat.js';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { apiTokenFromLink, cliArgs, rssMb, seedSignInLink, servedUrl, apiCaller } from './served.js';
import { serveEnv, serveNodeFlags } from '../cli/memory-settings.js';

const inFlight = 20;
/** Each tenth of a phase on stderr as it is reached: a long run stopped early still says where it got to. */
const progress = (msg: string) => process.stderr.write(`[bench] memory: ${msg}\n`);

export async function memoryBenchmark(root: string, quick: boolean) {
  const creations = Number(process.env.SVC_BENCH_MEMORY_CREATIONS ?? (quick ? 5_000 : 100_000));
  const runs = Number(process.env.SVC_BENCH_MEMORY_RUNS ?? (quick ? 200 : 10_000));
  // Runs triggered at once, each loop on a job of its own. The service runs SVC_MAX_RUNS (3) at once and queues the
  // rest; more in flight only lengthens the queue unless the service's setting is raised too (docs/performance.md,
  // "Memory through a long life").
  const runsInFlight = Number(process.env.SVC_BENCH_MEMORY_RUNS_IN_FLIGHT ?? 4);
  const dataDir = join(root, 'memory');
  const link = await seedSignInLink(dataDir);

  // Started as `npm start` starts it, with the memory settings of `svc serve` (docs/design.md, "Memory settings of svc
  // serve"); SVC_BENCH_MEMORY_SETTINGS=none measures node's defaults for comparison.
  const withSettings = process.env.SVC_BENCH_MEMORY_SETTINGS !== 'none';
  // More node flags to try, e.g. SVC_BENCH_MEMORY_NODE_ARGS="--optimize-for-size".
  const extraFlags = (process.env.SVC_BENCH_MEMORY_NODE_ARGS ?? '').split(/\s+/).filter(Boolean);
  const server = spawn(
    process.execPath,
    [...(withSettings ? serveNodeFlags : []), ...extraFlags, ...cliArgs, 'serve', '--port', '0', '--data-dir', dataDir],
    {
      stdio: ['ignore', 'ignore', 'inherit'],
      env: { ...process.env, ...(withSettings ? serveEnv : {}), SVC_LOG_LEVEL: 'warn' },
    },
  );
  let peak = 0;
  const sampler = setInterval(() => (peak = Math.max(peak, rssMb(server.pid!))), 250);
  try {
    const url = await servedUrl(dataDir, server, 90_000);
    const token = await apiTokenFromLink(url, link);
    const call = apiCaller(url, token);
    const afterStartMb = rssMb(server.pid!);
    const afterStartSmaps = smapsMb(server.pid!);
    peak = afterStartMb;

    const rssByCreations: Array<{ created: number; rssMb: number }> = [];
    const cpuBefore = cpuMs(server.pid!);
    let created = 0;
    let answered = 0;
    const creator = async () => {
      while (created < creations) {
        await call('POST', '/api/jobs', {
          name: `Memory job ${++created}`,
          instruction: 'Count the files in the workspace.',
        });
        const n = ++answered;
        if (n % Math.max(1, Math.floor(creations / 10)) === 0) {
          rssByCreations.push({ created: n, rssMb: rssMb(server.pid!) });
          progress(`${n} creations, RSS ${rssMb(server.pid!)} MB (peak ${peak})`);
        }
      }
    };
    await Promise.all(Array.from({ length: inFlight }, creator));
    // The served process's CPU per creation: what a setting that trades memory for collector work costs.
    const serverCpuMsPerCreation = Math.round(((cpuMs(server.pid!) - cpuBefore) / creations) * 1000) / 1000;
    const afterCreationsMb = rssMb(server.pid!);
    const afterCreationsSmaps = smapsMb(server.pid!);
    const peakCreationsMb = peak;

    // Scripted runs: the sandbox, the broker session, the timeline and the projections of each. A run needs a model
    // to fall back to; the product's own fake provider serves, and is never called while main succeeds.
    const provider = await call('POST', '/api/providers', { name: 'Fake', kind: 'fake' });
    const models = (await call('GET', '/api/models')).items as Array<{ id: string; providerId: string }>;
    const model = models.find((m) => m.providerId === provider.id)!;
    await call('PATCH', '/api/settings', { agentModelId: model.id });
    // One job per loop: the runs of one job are admitted on its one stream, and many loops triggering the same job
    // measure that stream's conflicts, not the memory of runs.
    const jobs: string[] = [];
    for (let i = 0; i < runsInFlight; i++) {
      const job = await call('POST', '/api/jobs', {
        name: `Memory scripted job ${i + 1}`,
        instruction: 'Say ok.',
        selfImprove: false,
        concurrency: 'parallel',
      });
      await call('PUT', `/api/jobs/${String(job.id)}/playbook`, { content: { main: '#!/bin/sh\necho ok\n' } });
      jobs.push(String(job.id));
    }
    const rssByRuns: Array<{ finished: number; rssMb: number }> = [];
    const runMs: number[] = [];
    const failures: string[] = [];
    let triggered = 0;
    let finished = 0;
    let polls = 0;
    let lastRunId = '';
    const started = Date.now();
    const cpuBeforeRuns = cpuMs(server.pid!, true);
    const runner = async (jobId: string) => {
      while (triggered < runs) {
        triggered++;
        const t0 = Date.now();
        const { runId } = await call('POST', `/api/jobs/${jobId}/runs`, {});
        lastRunId = String(runId);
        for (;;) {
          const run = await call('GET', `/api/runs/${String(runId)}`);
          polls++;
          if (!['queued', 'provisioning', 'running', 'verifying'].includes(String(run.status))) {
            // A failed run is counted and shown, not fatal: one failure must not lose hours of measuring.
            if (run.status !== 'succeeded')
              failures.push(`run ${String(runId)} ended ${String(run.status)}: ${String(run.error)}`);
            break;
          }
          await new Promise((r) => setTimeout(r, 100));
        }
        runMs.push(Date.now() - t0);
        const n = ++finished;
        if (n % Math.max(1, Math.floor(runs / 10)) === 0) {
          rssByRuns.push({ finished: n, rssMb: rssMb(server.pid!) });
          progress(
            `${n} runs, RSS ${rssMb(server.pid!)} MB (peak ${peak}), ${JSON.stringify(smapsMb(server.pid!))}, ${failures.length} failed`,
          );
        }
      }
    };
    await Promise.all(jobs.map(runner));
    const cpuAfterRuns = cpuMs(server.pid!, true);
    runMs.sort((a, b) => a - b);
    const serverCpuMsPerRun = (cpuAfterRuns.own - cpuBeforeRuns.own) / Math.max(1, runs);
    // The benchmark's own status polls are in that CPU, and a client that waits on a run's stream does not pay them:
    // they are weighed after the runs, the same request on a quiet server, and taken out in a figure of their own.
    const pollCpuMs = lastRunId ? await cpuPerRequest(server.pid!, () => call('GET', `/api/runs/${lastRunId}`)) : 0;
    return {
      settings: [
        ...(withSettings ? [...serveNodeFlags, ...Object.entries(serveEnv).map(([k, v]) => `${k}=${v}`)] : []),
        ...extraFlags,
      ],
      creations,
      runs,
      runsInFlight,
      runsPerSec: Math.round((runs / ((Date.now() - started) / 1000)) * 10) / 10,
      // Trigger to seen final, polled every 100 ms; and the CPU of a run: the served process's own, and that of its
      // children it reaped (the sandboxes' processes).
      runMsP50: runMs[Math.floor(runMs.length / 2)] ?? null,
      serverCpuMsPerRun: Math.round(serverCpuMsPerRun),
      pollsPerRun: Math.round((polls / Math.max(1, runs)) * 10) / 10,
      serverCpuMsPerPoll: Math.round(pollCpuMs * 100) / 100,
      serverCpuMsPerRunWithoutPolls: Math.round(serverCpuMsPerRun - (polls / Math.max(1, runs)) * pollCpuMs),
      childrenCpuMsPerRun: Math.round((cpuAfterRuns.children - cpuBeforeRuns.children) / Math.max(1, runs)),
      runsFailed: failures.length,
      firstFailures: failures.slice(0, 3),
      afterStartMb,
      afterStartSmaps,
      afterCreationsMb,
      serverCpuMsPerCreation,
      afterCreationsSmaps,
      peakCreationsMb,
      afterRunsMb: rssMb(server.pid!),
      afterRunsSmaps: smapsMb(server.pid!),
      peakMb: peak,
      rssByCreations,
      rssByRuns,
    };
  } finally {
    clearInterval(sampler);
    server.kill('SIGTERM');
    await Promise.race([once(server, 'exit'), new Promise((r) => setTimeout(r, 10_000).unref())]);
    server.kill('SIGKILL');
  }
}

/** RSS split into anonymous memory (heaps, malloc) and file pages (node's binary, shared libraries), in MB. */
function smapsMb(pid: number): { anonMb: number; fileMb: number } {
  const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(rollup)?.[1] ?? 0);
  return { anonMb: Math.round(kb('Anonymous') / 1024), fileMb: Math.round((kb('Rss') - kb('Anonymous')) / 1024) };
}

/** The served process's CPU per request of `request`, over 500 of them one after the other, in ms. */
async function cpuPerRequest(pid: number, request: () => Promise<unknown>): Promise<number> {
  const n = 500;
  for (let i = 0; i < 50; i++) await request();
  const before = cpuMs(pid);
  for (let i = 0; i < n; i++) await request();
  return (cpuMs(pid) - before) / n;
}

/** User and system CPU time of a process so far, in ms (clock ticks of 10 ms, as Linux counts them). */
function cpuMs(pid: number): number;
/** The same, and that of the children it has waited for and of its disk helpers (which it has not). */
function cpuMs(pid: number, children: true): { own: number; children: number };
function cpuMs(pid: number, children?: true): number | { own: number; children: number } {
  const cpu = cpuTimesMs(pid);
  if (!children) return cpu.own;
  return { own: cpu.own, children: cpu.children + diskHelpersCpuMs(pid) };
}
