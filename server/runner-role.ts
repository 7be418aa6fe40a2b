import { JobStateOverlay } from '../app/job-state-overlay.js';
import { Reflector } from '../app/run/reflector.js';
import { Notifier } from '../runner/notifier.js';
import { ImageGc } from '../runner/image-gc.js';
import { playbookVersionsCollection, type PlaybookVersionDoc } from '../projections/playbooks.js';
import { RunFiles } from '../adapters/run-files.js';
import { createHash } from 'node:crypto';
import { chmodSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Broker } from '../broker/server.js';
import { EgressProxy } from '../broker/egress-proxy.js';
import { serveRun } from '../broker/run-channel.js';
import { runSessionHooks } from './broker-hooks.js';
import { Dispatcher } from '../runner/dispatcher.js';
import { ImageBuilder } from '../runner/image-builder.js';
import { newId } from '../app/ids.js';
import { RunExecutor } from '../app/run/executor.js';
import type { ExecutorPorts } from '../app/run/ports.js';
import { reflectionImageBuild, runImageOnThisRunner } from '../app/run/job-images.js';
import { ShadowRunner } from '../app/run/shadow.js';
import { Scheduler } from '../runner/scheduler.js';
import { RetentionLoop } from '../runner/retention-loop.js';
import { Retention } from '../app/retention.js';
import { selectBackend, defaultSandboxImage } from '../adapters/sandbox/select.js';
import { readySizesKept, sandboxHostUid } from '../adapters/sandbox/bwrap.js';
import { readySizes } from '../runner/ready-sizes.js';
import type { SandboxBackend } from '../adapters/sandbox/types.js';
import type { RunnerRole, Services } from './services.js';
import { errorMessage } from '../domain/error-message.js';

/**
 * Sockets and sandboxes live in a runtime directory that the unprivileged sandbox user can traverse (0711), apart
 * from the data directory, which stays private.
 */
export function runtimeDir(dataDir: string): string {
  const dir = join(tmpdir(), `svc-runtime-${createHash('sha256').update(dataDir).digest('hex').slice(0, 12)}`);
  mkdirSync(join(dir, 'sandboxes'), { recursive: true });
  chmodSync(dir, 0o711);
  chmodSync(join(dir, 'sandboxes'), 0o711);
  return dir;
}

/** What the runner role's parts share: the backend (and why it cannot run sandboxes), the broker and the proxy. */
interface RunnerBase {
  dir: string;
  backend: SandboxBackend;
  backendError: string | null;
  broker: Broker;
  proxy: EgressProxy;
}

/** The runner role: sandbox backend, broker, egress proxy, executor and dispatcher, reflector, notifier, image GC. */
export async function startRunner(s: Services): Promise<RunnerRole> {
  const base = await startBase(s);
  const { backend, backendError } = base;
  const imageBuilder =
    backend.images && backendError === null
      ? new ImageBuilder(s.bus, s.stores.docs, s.images, backend.images, newId(), s.log)
      : null;
  const ports = executorPorts(s, base, imageBuilder);
  const runFiles = new RunFiles(s.stores.blobs);
  const executor = new RunExecutor(s.bus, s.stores.events, s.runs, ports, runFiles, s.log);
  const maxRuns = Number(process.env.SVC_MAX_RUNS ?? 3);
  const dispatcher = new Dispatcher(s.bus, s.stores.events, s.stores.docs, s.runs, executor, backend, s.log, maxRuns);
  await dispatcher.start();
  if (backendError === null) warmAtStart(s, backend);
  await imageBuilder?.start();
  const shadowRunner = backendError === null ? new ShadowRunner(ports, s.log) : null;
  const reflector = startReflector(s, dispatcher, runFiles, shadowRunner, imageBuilder);
  const notifier = startNotifier(s, dispatcher);
  const imageGc = startImageGc(s, backend, imageBuilder);
  return {
    sandboxInfo: () => ({ ...backend.info(), error: backendError }),
    dispatcher,
    imageBuilder,
    imageGc,
    async stop() {
      imageGc?.stop();
      await notifier.stop();
      await reflector.stop();
      await imageBuilder?.stop();
      await dispatcher.stop();
      await base.proxy.stop();
      await base.broker.stop();
      await backend.close?.();
    },
  };
}

/**
 * The first run of each size in use after a start finds its sandbox ready, as later runs do (docs/design.md, "Sandbox
 * provisioning"): as many sizes as the backend keeps ready.
 */
function warmAtStart(s: Services, backend: SandboxBackend): void {
  if (!backend.warm) return;
  readySizes(s.stores.docs, async (ws) => (await s.models.settings(ws)).defaultLimits.diskMb, readySizesKept)
    .then((sizes) => sizes.forEach((size) => backend.warm!(size)))
    .catch((err: unknown) => s.log.error({ err }, 'could not start ready sandboxes; the first runs start theirs'));
}

/** The backend, prepared (a failure is kept and shown; runs fail until it is fixed), and the broker for sandboxes. */
async function startBase(s: Services): Promise<RunnerBase> {
  const dir = runtimeDir(s.config.dataDir);
  const instance = createHash('sha256').update(s.config.dataDir).digest('hex').slice(0, 12);
  const backend = await selectBackend(s.config.sandbox, join(dir, 'sandboxes'), instance);
  let backendError: string | null = null;
  try {
    await backend.prepare();
  } catch (err) {
    backendError = errorMessage(err);
    s.log.error({ err }, 'the sandbox backend cannot run sandboxes; runs will fail until this is fixed');
  }
  const broker = new Broker();
  // Runs get sockets of their own under runs/; this one is for sandboxes of no run and honours no token.
  const brokerSocket = join(dir, 'broker.sock');
  await broker.start(brokerSocket);
  // Stdio MCP servers are tested in a sandbox of their own, on this backend.
  s.mcp.useSandboxes({ backend, brokerSocket, defaultImage: async (ws) => (await s.models.settings(ws)).defaultImage });
  return { dir, backend, backendError, broker, proxy: new EgressProxy() };
}

/** The executor's ports onto this process's services. */
function executorPorts(s: Services, base: RunnerBase, imageBuilder: ImageBuilder | null): ExecutorPorts {
  const { backend, broker, proxy, dir } = base;
  // bwrap sandboxes connect as a host uid of their own, which alone may open a run's sockets (broker/run-channel.ts).
  const socketOwner = backend.info().backend === 'bwrap' && process.getuid?.() === 0 ? sandboxHostUid : null;
  return {
    backend,
    openSession: async (req) => {
      const session = broker.open({
        runId: req.runId,
        jobId: req.jobId,
        workspaceId: req.workspaceId,
        token: req.token,
        costLimit: req.costLimit,
        egress: req.egress,
        jobState: req.stateOverlay ? new JobStateOverlay(s.jobState) : s.jobState,
        hooks: runSessionHooks(req),
      });
      const networked = req.egress.network !== 'none';
      return { session, ...(await serveRun(broker, proxy, session, join(dir, 'runs'), networked, socketOwner)) };
    },
    agentModel: (ws, modelId) => s.models.resolve(ws, 'agent', modelId),
    utilityModel: (ws, modelId) => s.models.resolve(ws, 'utility', modelId),
    settings: (ws) => s.models.settings(ws),
    spentSince: (ws, since) => s.runs.spentSince(ws, since),
    secretEnv: (ws, jobId) => s.secrets.envFor(ws, jobId),
    mcp: (ws, jobId, options) => s.mcp.forRun(ws, jobId, options),
    runImage: runImageOnThisRunner(s.images, imageBuilder),
    secretValues: (ws) => s.secrets.valuesFor(ws),
    recordScriptCalls: (ctx, ws, jobId, runId, counts) => s.playbooks.recordScriptCalls(ctx, ws, jobId, runId, counts),
    jobState: {
      get: async (ws, jobId, key) => (await s.jobState.get(ws, jobId, key))?.value ?? null,
      set: async (ctx, ws, jobId, key, value) => void (await s.jobState.set(ctx, ws, jobId, key, value)),
    },
  };
}

function startReflector(
  s: Services,
  dispatcher: Dispatcher,
  runFiles: RunFiles,
  shadowRunner: ShadowRunner | null,
  imageBuilder: ImageBuilder | null,
): Reflector {
  const reflector = new Reflector({
    bus: s.bus,
    events: s.stores.events,
    docs: s.stores.docs,
    runs: s.runs,
    playbooks: s.playbooks,
    runnerId: dispatcher.runnerId,
    runnerGone: (id) => dispatcher.runnerGone(id),
    reflectionModel: (ws, modelId) => s.models.resolve(ws, 'reflection', modelId),
    // A Dockerfile may start FROM the job's base image without review: the workspace's default, else the server's.
    settings: async (ws) => {
      const settings = await s.models.settings(ws);
      return { ...settings, defaultImage: settings.defaultImage ?? s.config.sandbox.image ?? defaultSandboxImage };
    },
    secretValues: (ws) => s.secrets.valuesFor(ws),
    log: s.log,
    shadow: shadowRunner && ((request) => shadowRunner.run(request)),
    candidates: (runId) => runFiles.candidates(runId, 10, 16_000),
    buildImage: imageBuilder && reflectionImageBuild(s.images, imageBuilder, dispatcher.runnerId),
  });
  reflector.start();
  return reflector;
}

function startNotifier(s: Services, dispatcher: Dispatcher): Notifier {
  const notifier = new Notifier({
    bus: s.bus,
    docs: s.stores.docs,
    runnerId: dispatcher.runnerId,
    log: s.log,
    runnerGone: (id) => dispatcher.runnerGone(id),
    settings: (ws) => s.models.settings(ws),
    secretValues: (ws) => s.secrets.valuesFor(ws),
    send: (ws, body) => s.notifications.send(ws, body),
    baseUrl: () => s.appUrl(),
  });
  // Changes come from the projection engine of this process (when it has the projector role); polling covers the rest.
  s.engine.onChange((collections) => notifier.changed(collections));
  notifier.start();
  return notifier;
}

/** Daily removal of job images no recent playbook version uses; only beside an image builder. */
function startImageGc(s: Services, backend: SandboxBackend, imageBuilder: ImageBuilder | null): ImageGc | null {
  if (!imageBuilder || !backend.images) return null;
  const versions = s.stores.docs.collection<PlaybookVersionDoc>(playbookVersionsCollection);
  const gc = new ImageGc({
    bus: s.bus,
    docs: s.stores.docs,
    images: backend.images,
    log: s.log,
    recentHashes: async (jobId) => {
      const recent = await versions.find({ jobId }, { sort: [['version', -1]], limit: 5 });
      return new Set(recent.flatMap((v) => (v.dockerfileHash ? [v.dockerfileHash] : [])));
    },
  });
  gc.start();
  return gc;
}

/** The daily retention pass, run where the scheduler role runs. */
export function startRetention(s: Services): RetentionLoop {
  const loop = new RetentionLoop(retentionOf(s), s.log);
  loop.start();
  return loop;
}

export function retentionOf(s: Pick<Services, 'bus' | 'stores' | 'config' | 'models'>): Retention {
  return new Retention(
    s.bus,
    s.stores.events,
    s.stores.docs,
    new RunFiles(s.stores.blobs),
    async (ws) => (await s.models.settingsFor(ws)).retentionDays,
  );
}

/** The scheduler role. */
export function startScheduler(s: Services): Scheduler {
  const scheduler = new Scheduler(s.bus, s.stores.docs, s.engine, s.runs, s.log);
  scheduler.start();
  return scheduler;
}
