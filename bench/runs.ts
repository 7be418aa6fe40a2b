// Run benchmarks (issue: runs): sandbox provisioning, svc round trip, trigger to running, a whole fake run, SSE fan-out.
import { mkdirSync, chmodSync, rmSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Broker } from '../broker/server.js';
import { runStreamId } from '../domain/run.js';
import { BwrapBackend } from '../adapters/sandbox/bwrap.js';
import { diskHelpersCpuMs } from './disk-helpers.js';
import { cpuTimesMs } from './proc-stat.js';
import { DockerBackend } from '../adapters/sandbox/docker.js';
import { dockerClient } from '../adapters/sandbox/docker.js';
import { svcBinaryPath } from '../adapters/sandbox/select.js';
import type { SandboxSpec } from '../adapters/sandbox/types.js';
import { FakeClient } from '../adapters/models/fake.js';
import { loadConfig } from '../app/config.js';
import { runSessionHooks } from '../server/broker-hooks.js';
import { JobStateStore } from '../app/job-state.js';
import { createLogger, startServer } from '../server/start.js';
import { TimelineWriter, timelineStreamId } from '../app/timeline.js';
import { openMemoryStores } from '../store/open.js';
import { signIn, useFakeModel } from '../demo/session.js';
import { summarize } from './stats.js';

const spec = (id: string, brokerSocket: string, env: Record<string, string> = {}): SandboxSpec => ({
  id,
  labels: {},
  image: null,
  limits: { cpus: 1, memoryMb: 512, pidsLimit: 256, diskMb: 1024 },
  network: 'none',
  runAsRoot: false,
  env,
  brokerSocket,
  proxySocket: null,
  ttlMs: 600_000,
});

function runtime(root: string): string {
  const dir = join(root, 'runtime');
  mkdirSync(join(dir, 'sandboxes'), { recursive: true });
  chmodSync(root, 0o711);
  chmodSync(dir, 0o711);
  chmodSync(join(dir, 'sandboxes'), 0o711);
  return dir;
}

/**
 * CPU this process and the children it reaped have used (user + system), from /proc, with what its disk helpers and
 * their children used (not reaped by this process while they run): the sandboxes' own cost.
 */
function cpuWithChildrenMs(): number {
  const cpu = cpuTimesMs('self');
  return cpu.own + cpu.children + diskHelpersCpuMs(process.pid);
}

/**
 * bwrap create + first exec of `true` (docs/design.md, "Sandbox provisioning"): `ready` waits until the backend's
 * ready sandboxes are started before each create, as a run arriving on a machine that is not at its limit would
 * find them; `burst` creates back to back, faster than they are made again. CPU per sandbox counts everything: the
 * exec, the destroy and the background refills.
 */
async function provisioning(backend: BwrapBackend, socket: string, n: number, wait: boolean, label: string) {
  const samples: number[] = [];
  const cpu0 = cpuWithChildrenMs();
  for (let i = 0; i < n; i++) {
    if (wait) await backend.readySettled();
    const t0 = performance.now();
    const sb = await backend.create(spec(`bench-${label}-${i}`, socket));
    const r = await sb.exec({ cmd: ['true'] });
    samples.push(performance.now() - t0);
    if (r.exitCode !== 0) throw new Error(`sandbox exec failed: ${r.output.toString()}`);
    await sb.destroy();
  }
  await backend.readySettled();
  return { ...summarize(samples), cpuMsPerSandbox: Math.round(((cpuWithChildrenMs() - cpu0) / n) * 10) / 10 };
}

export async function sandboxBenchmarks(root: string, quick: boolean) {
  const dir = runtime(root);
  const socket = join(dir, 'idle.sock');
  const idle = createServer((_q, r) => r.end('{}')).listen(socket);
  chmodSync(socket, 0o666);
  const backend = new BwrapBackend(join(dir, 'sandboxes'), svcBinaryPath());
  await backend.prepare();
  // Sandboxes started when their first command is: the same backend without ready ones.
  const onDemand = new BwrapBackend(join(dir, 'sandboxes'), svcBinaryPath(), undefined, 0);
  await onDemand.prepare();
  const n = quick ? 10 : 40;
  // The first create of a disk size finds nothing ready; the pools and the spare filesystems fill after it.
  await provisioning(backend, socket, 1, true, 'warm');
  await provisioning(onDemand, socket, 1, true, 'warm-cold');
  // Alternating blocks, so that both see the same machine.
  const ready: Array<Awaited<ReturnType<typeof provisioning>>> = [];
  const cold: Array<Awaited<ReturnType<typeof provisioning>>> = [];
  for (let b = 0; b < 4; b++) {
    ready.push(await provisioning(backend, socket, n / 4, true, `ready-${b}`));
    cold.push(await provisioning(onDemand, socket, n / 4, true, `cold-${b}`));
  }
  const burst = await provisioning(backend, socket, n / 2, false, 'burst');
  await onDemand.close();
  idle.close();
  const merged = (blocks: typeof ready) => ({
    // p50 of the blocks' p50s, and the worst p99: blocks are small, the whole distribution is in the bench's log.
    p50: [...blocks.map((x) => x.p50)].sort((a, b) => a - b)[Math.floor(blocks.length / 2)]!,
    p99: Math.max(...blocks.map((x) => x.p99)),
    cpuMsPerSandbox: Math.round((blocks.reduce((a, x) => a + x.cpuMsPerSandbox, 0) / blocks.length) * 10) / 10,
  });

  // svc state set from inside a sandbox, through init's forwarder and the broker, into the job state store.
  const stores = openMemoryStores();
  const broker = new Broker();
  const brokerSocket = join(dir, 'broker.sock');
  await broker.start(brokerSocket);
  const timeline = new TimelineWriter(stores.events, 'bench-run', 'w');
  const model = {
    client: new FakeClient('bench'),
    name: 'fake-model',
    price: { in: 0, out: 0, cacheRead: 0, cacheWrite: 0 },
  };
  const session = broker.open({
    runId: 'bench-run',
    jobId: 'bench-job',
    workspaceId: 'w',
    token: 'bench-token',
    costLimit: 0,
    jobState: new JobStateStore(stores.docs, stores.events),
    egress: { network: 'none', allowedDomains: null, allowPrivateNetwork: false },
    hooks: runSessionHooks({ timeline, agentModel: model, utilityModel: model, agentSpend: () => 0 }),
  });
  // Each run has a socket of its own; the shared one honours no token.
  const runSocket = join(dir, 'bench-run.sock');
  await broker.serve(session, runSocket);
  const sb = await backend.create(
    spec('bench-svc', runSocket, { SVC_BROKER_URL: 'http://127.0.0.1:4180', SVC_TOKEN: 'bench-token' }),
  );
  const calls = quick ? 100 : 500;
  const loop = await sb.exec({
    cmd: [
      'bash',
      '-c',
      `s=$(date +%s%N); for i in $(seq ${calls}); do svc state set k$i v || exit 1; done; e=$(date +%s%N); echo $(( (e - s) / ${calls} ))`,
    ],
  });
  const base = await sb.exec({
    cmd: [
      'bash',
      '-c',
      `s=$(date +%s%N); for i in $(seq ${calls}); do svc help >/dev/null; done; e=$(date +%s%N); echo $(( (e - s) / ${calls} ))`,
    ],
  });
  // Any process, for scale: the static svc starts like /bin/true, and both cost what a process start costs this hour.
  const bare = await sb.exec({
    cmd: [
      'bash',
      '-c',
      `s=$(date +%s%N); for i in $(seq ${calls}); do /bin/true; done; e=$(date +%s%N); echo $(( (e - s) / ${calls} ))`,
    ],
  });
  await sb.destroy();
  await backend.close();
  session.close();
  await broker.stop();
  if (loop.exitCode !== 0) throw new Error(`svc state set failed: ${loop.output.toString()}`);
  const perCallNs = Number(loop.output.toString().trim());
  const spawnNs = Number(base.output.toString().trim());
  return {
    bwrapProvisionMs: merged(ready),
    bwrapProvisionStartedOnDemandMs: merged(cold),
    bwrapProvisionBackToBackMs: burst,
    svcStateSetRoundTripMs: {
      calls,
      perCallIncludingProcessStart: perCallNs / 1e6,
      processStartOnly: spawnNs / 1e6,
      binTrueStart: Number(bare.output.toString().trim()) / 1e6,
      requestOnly: Math.round((perCallNs - spawnNs) / 1e3) / 1e3,
    },
  };
}

/**
 * Docker provisioning: create (with the layout copied in) and first exec. Uses SVC_DOCKER_HOST, or starts a private
 * engine as the tests do; answers why not when there is none.
 */
export async function dockerProvisioning(
  root: string,
  quick: boolean,
): Promise<{ dockerProvisionMs: ReturnType<typeof summarize> } | { skipped: string }> {
  let host = process.env.SVC_DOCKER_HOST;
  let engine: { stop(): Promise<void> } = { stop: async () => {} };
  if (!host) {
    const { startDockerd } = await import('../scripts/dockerd.mjs');
    const started = await startDockerd();
    if (!started.host) return { skipped: started.reason ?? 'no Docker engine' };
    host = started.host;
    engine = started;
  }
  const dir = runtime(root);
  const socket = join(dir, 'idle-docker.sock');
  const idle = createServer((_q, r) => r.end('{}')).listen(socket);
  chmodSync(socket, 0o666);
  try {
    const backend = new DockerBackend(dockerClient(host), svcBinaryPath(), 'svc-base:bookworm', `bench-${process.pid}`);
    await backend.prepare();
    const samples: number[] = [];
    for (let i = 0; i < (quick ? 5 : 20); i++) {
      const t0 = performance.now();
      const sb = await backend.create(spec(`bench-docker-${process.pid}-${i}`, socket));
      const r = await sb.exec({ cmd: ['true'] });
      samples.push(performance.now() - t0);
      await sb.destroy();
      if (r.exitCode !== 0) throw new Error(`docker sandbox exec failed: ${r.output.toString()}`);
    }
    return { dockerProvisionMs: summarize(samples) };
  } finally {
    idle.close();
    await engine.stop();
  }
}

export async function runBenchmarks(root: string, quick: boolean) {
  const dataDir = join(root, 'runs');
  const server = await startServer(
    loadConfig({ port: 0, dataDir }, { NODE_ENV: 'test' }),
    createLogger('silent'),
    () => {},
  );
  try {
    const { call } = await signIn(server, 'bench@example.com');
    await useFakeModel(call);
    const job = (
      await call('POST', '/api/jobs', { name: 'Bench', instruction: 'Run `true`.', concurrency: 'parallel' })
    ).id;
    const events = server.services.stores.events;
    const toRunning: number[] = [];
    const whole: number[] = [];
    // Where trigger to running goes: when the answer came, and when each run event and timeline entry up to
    // RunStarted was recorded (their own clock, in ms since the trigger).
    const steps = new Map<string, number[]>();
    const step = (name: string, ms: number) => steps.set(name, [...(steps.get(name) ?? []), ms]);
    for (let i = 0; i < (quick ? 5 : 20); i++) {
      const t0 = performance.now();
      const wall0 = Date.now();
      const posted = call('POST', `/api/jobs/${job}/runs`, {}).then((r) => {
        step('answered', performance.now() - t0);
        return r;
      });
      const { runId } = await posted;
      let running = false;
      const timeline = events.subscribeStream(timelineStreamId(runId), { fromRevision: 0 }).subscribe((e) => {
        if (!running) step(`timeline ${e.type}`, Number(e.metadata.ts) - wall0);
      });
      await new Promise<void>((resolve) => {
        const sub = events.subscribeStream(runStreamId(runId), { fromRevision: 0 }).subscribe((e) => {
          if (!running) step(e.type, Number(e.metadata.ts) - wall0);
          if (e.type === 'RunStarted') running = true;
          if (e.type === 'RunStarted') toRunning.push(performance.now() - t0);
          if (e.type === 'RunFinished') {
            whole.push(performance.now() - t0);
            if ((e.data as { status: string }).status !== 'succeeded')
              throw new Error(`bench run ${runId} ended ${JSON.stringify(e.data)}`);
            sub.unsubscribe();
            timeline.unsubscribe();
            resolve();
          }
        });
      });
    }
    const breakdown = Object.fromEntries([...steps].map(([name, ms]) => [name, summarize(ms).p50]));
    return {
      triggerToRunningMs: summarize(toRunning),
      triggerToRunningStepsP50Ms: breakdown,
      wholeFakeRunMs: summarize(whole),
    };
  } finally {
    await server.close();
  }
}

export async function sseFanOut(root: string, quick: boolean) {
  const dataDir = join(root, 'sse');
  const server = await startServer(
    loadConfig({ port: 0, dataDir, roles: 'api,projector' }, { NODE_ENV: 'test' }),
    createLogger('silent'),
    () => {},
  );
  const subscribers = 500;
  try {
    const { call, cookie } = await signIn(server, 'bench@example.com');
    const job = (await call('POST', '/api/jobs', { name: 'Fan-out', instruction: 'x' })).id;
    const { runId } = await call('POST', `/api/jobs/${job}/runs`, {});
    const count = quick ? 10 : 50;
    const clients = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        'bench/sse-clients.ts',
        `${server.url}/api/runs/${runId}/stream`,
        cookie,
        String(subscribers),
        String(count),
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    clients.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    const done = new Promise((r) => clients.once('close', r));
    while (!out.includes('ready\n')) {
      if (clients.exitCode !== null) throw new Error('the SSE clients stopped');
      await new Promise((r) => setTimeout(r, 20));
    }
    await new Promise((r) => setTimeout(r, 200));
    const sent = new Map<number, number>();
    const timeline = new TimelineWriter(server.services.stores.events, runId, '00000000-0000-7000-8000-000000000001');
    for (let i = 1; i <= count; i++) {
      sent.set(i, performance.timeOrigin + performance.now());
      await timeline.append('log', { message: `event ${i}` });
      await new Promise((r) => setTimeout(r, 20));
    }
    await done;
    const received = JSON.parse(out.slice(out.indexOf('ready\n') + 6).trim()) as Array<[number, number]>;
    const latencies = received.filter(([seq]) => sent.has(seq)).map(([seq, at]) => at - sent.get(seq)!);
    return { subscribers, events: count, deliveries: latencies.length, deliveryMs: summarize(latencies) };
  } finally {
    await server.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
