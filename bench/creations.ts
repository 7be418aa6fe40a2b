// Job creations through the API (issue: performance): POST /api/jobs at 50 connections against a served process on a
// fresh embedded store, each answer the created job read back (read-your-writes). Results: docs/performance.md.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { readFileSync } from 'node:fs';
import { serveEnv, serveNodeFlags } from '../cli/memory-settings.js';
import { cpuTimesMs } from './proc-stat.js';
import { apiTokenFromLink, benchStores, cliArgs, rssMb, seedSignInLink, servedUrl } from './served.js';

/** The read and write system calls a process has made, and the bytes it wrote (files and sockets), from /proc. */
function ioCounts(pid: number): { syscr: number; syscw: number; wchar: number } {
  const io = readFileSync(`/proc/${pid}/io`, 'utf8');
  const field = (name: string) => Number(new RegExp(`${name}: (\\d+)`).exec(io)?.[1] ?? NaN);
  return { syscr: field('syscr'), syscw: field('syscw'), wchar: field('wchar') };
}

/** The burst that warms a fresh served process before the measured one. */
const warmupSeconds = 2;

export async function creationsBenchmark(root: string, quick: boolean) {
  const dataDir = join(root, 'creations');
  const stores = benchStores();
  const link = await seedSignInLink(dataDir);

  // BENCH_SERVER_NODE_ARGS="--cpu-prof --cpu-prof-dir=DIR" profiles the served process (Node refuses --cpu-prof in
  // NODE_OPTIONS).
  const nodeArgs = (process.env.BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter((a) => a !== '');
  // Started as `npm start` and `svc serve` start it (docs/design.md, "Memory settings of svc serve"): the young
  // generation's size changes how often a burst of requests waits on a collection.
  const server = spawn(
    process.execPath,
    [...serveNodeFlags, ...nodeArgs, ...cliArgs, 'serve', '--port', '0', '--data-dir', dataDir],
    { stdio: 'ignore', env: { ...process.env, ...serveEnv, ...stores.env, SVC_LOG_LEVEL: 'warn' } },
  );
  try {
    const url = await servedUrl(dataDir, server, 90_000);
    const token = await apiTokenFromLink(url, link);
    // Counted from before the burst: a store on a server may hold jobs of earlier runs.
    const totalJobs = async () =>
      (
        (await (
          await fetch(`${url}/api/jobs?pageSize=1`, { headers: { authorization: `Bearer ${token}` } })
        ).json()) as { total: number }
      ).total;
    let n = 0;
    const burst = (seconds: number) =>
      autocannon({
        url: `${url}/api/jobs`,
        connections: 50,
        duration: seconds,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        requests: [
          {
            method: 'POST',
            setupRequest: (req) => ({
              ...req,
              body: JSON.stringify({ name: `Bench job ${++n}`, instruction: 'Count the files in the workspace.' }),
            }),
          },
        ],
      });
    // The first second of a fresh process compiles its routes' validators and serializers on first use and its hot
    // code (docs/performance.md, "Warm and cold"): reported on its own, the goal is judged on the process warmed.
    const warmup = await burst(warmupSeconds);
    const jobsBefore = await totalJobs();
    const rssBeforeMb = rssMb(server.pid!);
    // CPU time (user + system): on a shared machine CPU per creation compares across runs where rates do not.
    const cpuBefore = cpuTimesMs(server.pid!).own;
    const ioBefore = ioCounts(server.pid!);
    const result = await burst(quick ? 3 : 10);
    const cpuUsed = cpuTimesMs(server.pid!).own - cpuBefore;
    const ioAfter = ioCounts(server.pid!);
    for (const r of [warmup, result])
      if (r.non2xx > 0 || r.errors > 0) throw new Error(`creations failed: ${r.non2xx} non-2xx, ${r.errors} errors`);
    const created = (await totalJobs()) - jobsBefore;
    const perCreation = (n: number) => Math.round((n / Math.max(1, created)) * 100) / 100;
    return {
      adapters: stores.adapters,
      connections: 50,
      created,
      creationsPerSec: Math.round(result.requests.average),
      latencyP50Ms: result.latency.p50,
      latencyP99Ms: result.latency.p99,
      warmup: {
        seconds: warmupSeconds,
        creationsPerSec: Math.round(warmup.requests.average),
        latencyP50Ms: warmup.latency.p50,
        latencyP99Ms: warmup.latency.p99,
      },
      serverCpuMsPerCreation: Math.round((cpuUsed / Math.max(1, created)) * 1000) / 1000,
      // What the CPU goes to beyond JavaScript: each SQLite page written to a WAL is two write calls, each answer one.
      serverWriteCallsPerCreation: perCreation(ioAfter.syscw - ioBefore.syscw),
      serverReadCallsPerCreation: perCreation(ioAfter.syscr - ioBefore.syscr),
      serverKbWrittenPerCreation: perCreation((ioAfter.wchar - ioBefore.wchar) / 1024),
      rssBeforeMb,
      rssAfterMb: rssMb(server.pid!),
    };
  } finally {
    // A clean stop, so a profile asked for with BENCH_SERVER_NODE_ARGS is written.
    server.kill('SIGTERM');
    await Promise.race([once(server, 'exit'), new Promise((r) => setTimeout(r, 10_000).unref())]);
    server.kill('SIGKILL');
  }
}
