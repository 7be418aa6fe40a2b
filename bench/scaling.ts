// Throughput with more runner processes (docs/scaling.md): one `svc serve --roles api,projector,scheduler` process and
// 1, 2, then 4 `--roles runner` processes on one data directory (the embedded stores); a scripted job's runs are
// triggered with a backlog kept full, and runs per second counted from the first trigger to the last final status.
// Alone: `node --import tsx bench/scaling.ts [--quick]` prints one JSON document; also `npm run bench -- --only scaling`.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { apiCaller, apiTokenFromLink, cliArgs, servedUrl } from './served.js';

const main = '#!/bin/sh\necho "done"\n';

function serve(dataDir: string, roles: string): ChildProcess {
  return spawn(process.execPath, [...cliArgs, 'serve', '--port', '0', '--data-dir', dataDir, '--roles', roles], {
    env: { ...process.env, NODE_ENV: 'test', SVC_LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

/** Runs per second of `runs` scripted runs with `runners` runner processes, on a fresh data directory. */
async function measure(root: string, runners: number, runs: number) {
  const dataDir = join(root, `runners-${runners}`);
  mkdirSync(dataDir, { recursive: true });
  const api = serve(dataDir, 'api,projector,scheduler');
  const workers: ChildProcess[] = [];
  try {
    const url = await servedUrl(dataDir, api, 120_000);
    const { stdout } = await promisify(execFile)(process.execPath, [
      ...cliArgs,
      'admin',
      'sign-in-link',
      '--data-dir',
      dataDir,
    ]);
    const link = new URL(stdout.trim()).pathname;
    const token = await apiTokenFromLink(url, link);
    const call = apiCaller(url, token);
    await call('POST', '/api/providers', { name: 'Fake', kind: 'fake' });
    await call('PATCH', '/api/settings', { agentModelId: (await call('GET', '/api/models')).items[0].id });
    const job = (
      await call('POST', '/api/jobs', {
        name: 'Scaling',
        instruction: 'Say done.',
        selfImprove: false,
        concurrency: 'parallel',
      })
    ).id as string;
    await call('PUT', `/api/jobs/${job}/playbook`, { content: { main } });
    for (let i = 0; i < runners; i++) workers.push(serve(dataDir, 'runner'));
    // One warm-up run per runner process, so the measure starts with every runner up.
    const warm = await Promise.all(workers.map(() => call('POST', `/api/jobs/${job}/runs`, {})));
    const count = async (status: string) =>
      (await call('GET', `/api/runs?job=${job}&pageSize=1&status=${status}`)).total as number;
    while ((await count('succeeded')) < warm.length) await new Promise((r) => setTimeout(r, 100));
    const before = warm.length;
    const t0 = performance.now();
    await Promise.all(Array.from({ length: runs }, () => call('POST', `/api/jobs/${job}/runs`, {})));
    const triggeredMs = performance.now() - t0;
    for (;;) {
      const total = (await call('GET', `/api/runs?job=${job}&pageSize=1`)).total as number;
      const live = await count('queued,provisioning,running,verifying');
      if (total === before + runs && live === 0) {
        const succeeded = await count('succeeded');
        const ms = performance.now() - t0;
        return {
          runners,
          runs,
          succeeded: succeeded - before,
          triggeredMs: Math.round(triggeredMs),
          wallMs: Math.round(ms),
          runsPerSecond: Math.round((runs / ms) * 1000 * 100) / 100,
        };
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    await Promise.all(workers.map(stop));
    await stop(api);
  }
}

export async function scalingBenchmark(root: string, quick: boolean) {
  const runs = quick ? 40 : 150;
  const out = [];
  for (const runners of [1, 2, 4]) out.push(await measure(root, runners, runs));
  return { maxRunsPerRunner: Number(process.env.SVC_MAX_RUNS ?? 3), scriptedRuns: out };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const root = mkdtempSync(join(tmpdir(), 'svc-bench-scaling-'));
  try {
    process.stdout.write(
      JSON.stringify(await scalingBenchmark(root, process.argv.includes('--quick')), null, 2) + '\n',
    );
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}
