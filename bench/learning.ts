// Learning benchmarks (issue: learning): the cost and duration of each run of a job's life, and what a scripted run
// adds to running its main script directly in a sandbox of the same backend.
import { chmodSync, mkdirSync } from 'node:fs';
import { createServer } from 'node:http';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { jobLife } from '../demo/life.js';
import { runStreamId } from '../domain/run.js';
import { BwrapBackend } from '../adapters/sandbox/bwrap.js';
import { svcBinaryPath } from '../adapters/sandbox/select.js';
import { loadConfig } from '../app/config.js';
import { createLogger, startServer } from '../server/start.js';
import { signIn, useFakeModel } from '../demo/session.js';
import { summarize } from './stats.js';

const main = '#!/bin/sh\necho "counted 5 words"\n';

export async function lifeBenchmark() {
  const rows = await jobLife({ runs: 7, price: { in: 3_000_000, out: 15_000_000 } });
  return rows.map((r) => ({
    number: r.number,
    mode: r.mode,
    status: r.status,
    costMicroUsd: r.cost,
    reflectionCostMicroUsd: r.reflectionCost,
    msTotal: r.msTotal,
  }));
}

/** p50 of a scripted run (trigger to final) against p50 of the same main executed directly in a bwrap sandbox. */
export async function scriptedOverhead(root: string, quick: boolean) {
  const n = quick ? 5 : 20;
  const dir = join(root, 'direct');
  mkdirSync(join(dir, 'sandboxes'), { recursive: true });
  // The agent uid must pass through every directory above the sandboxes (not list them).
  for (const d of [dirname(root), root, dir, join(dir, 'sandboxes')]) chmodSync(d, 0o711);
  const socket = join(dir, 'idle.sock');
  const idle = createServer((_q, r) => r.end('{}')).listen(socket);
  chmodSync(socket, 0o666);
  const backend = new BwrapBackend(join(dir, 'sandboxes'), svcBinaryPath());
  await backend.prepare();
  const sb = await backend.create({
    id: 'bench-direct',
    labels: {},
    image: null,
    limits: { cpus: 1, memoryMb: 512, pidsLimit: 256, diskMb: 1024 },
    network: 'none',
    runAsRoot: false,
    env: {},
    brokerSocket: socket,
    proxySocket: null,
    ttlMs: 600_000,
  });
  await sb.putFiles([{ path: '/svc/main', content: main, mode: 0o755 }]);
  const direct: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const r = await sb.exec({ cmd: ['/svc/main'] });
    direct.push(performance.now() - t0);
    if (r.exitCode !== 0) throw new Error(`main failed directly: ${r.output.toString()}`);
  }
  await sb.destroy();
  idle.close();

  const server = await startServer(
    loadConfig({ port: 0, dataDir: join(root, 'scripted') }, { NODE_ENV: 'test' }),
    createLogger('silent'),
    () => {},
  );
  try {
    const { call } = await signIn(server, 'bench@example.com');
    await useFakeModel(call);
    const job = (
      await call('POST', '/api/jobs', {
        name: 'Scripted',
        instruction: 'Count.',
        selfImprove: false,
        concurrency: 'parallel',
      })
    ).id;
    await call('PUT', `/api/jobs/${job}/playbook`, { content: { main } });
    const total: number[] = [];
    for (let i = 0; i < n; i++) {
      const t0 = performance.now();
      const { runId } = await call('POST', `/api/jobs/${job}/runs`, {});
      await new Promise<void>((resolve, reject) => {
        const sub = server.services.stores.events.subscribeStream(runStreamId(runId)).subscribe((e) => {
          if (e.type !== 'RunFinished') return;
          sub.unsubscribe();
          total.push(performance.now() - t0);
          const data = e.data as { status: string; mode?: string };
          if (data.status !== 'succeeded') reject(new Error(`scripted bench run ended ${JSON.stringify(e.data)}`));
          else resolve();
        });
      });
    }
    const scripted = summarize(total);
    const own = summarize(direct);
    return {
      runs: n,
      scriptedRunMs: scripted,
      mainDirectMs: own,
      overheadP50Ms: Math.round((scripted.p50 - own.p50) * 10) / 10,
    };
  } finally {
    await server.close();
  }
}
