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
import type { Static } from 'typebox';
import { Broker } from '../broker/server.js';
import { EgressProxy } from '../broker/egress-proxy.js';
import { serveRun } from '../broker/run-channel.js';
import { runSessionHooks } from './broker-hooks.js';
import type { SandboxInfo as SandboxInfoSchema } from '../schemas/system.js';
import { Dispatcher } from '../runner/dispatcher.js';
import { ImageBuilder } from '../runner/image-builder.js';
import { RunImageError } from '../app/images.js';
import { newId } from '../app/ids.js';
import { RunExecutor, type ExecutorPorts } from '../app/run/executor.js';
import { ShadowRunner } from '../app/run/shadow.js';
import { Scheduler } from '../runner/scheduler.js';
import { selectBackend, defaultSandboxImage } from '../adapters/sandbox/select.js';
import { sandboxHostUid } from '../adapters/sandbox/bwrap.js';
import type { Services } from './start.js';
import { errorMessage } from '../domain/error-message.js';

type SandboxInfoDto = Static<typeof SandboxInfoSchema>;

export interface RunnerRole {
  sandboxInfo(): SandboxInfoDto;
  dispatcher: Dispatcher;
  /** Builds job images; null when the backend cannot build them (bwrap) or is not usable. */
  imageBuilder: ImageBuilder | null;
  /** Daily removal of job images no recent playbook version uses; null without an image builder. */
  imageGc: ImageGc | null;
  stop(): Promise<void>;
}

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

/** The runner role: sandbox backend, broker, egress proxy, executor and dispatcher. */
export async function startRunner(s: Services): Promise<RunnerRole> {
  const dir = runtimeDir(s.config.dataDir);
  const backend = await selectBackend(
    s.config.sandbox,
    join(dir, 'sandboxes'),
    createHash('sha256').update(s.config.dataDir).digest('hex').slice(0, 12),
  );
  let backendError: string | null = null;
  try {
    await backend.prepare();
  } catch (err) {
    backendError = errorMessage(err);
    s.log.error({ err }, 'the sandbox backend cannot run sandboxes; runs will fail until this is fixed');
  }
  const broker = new Broker();
  const proxy = new EgressProxy();
  // bwrap sandboxes connect as a host uid of their own, which alone may open a run's sockets (broker/run-channel.ts).
  const socketOwner = backend.info().backend === 'bwrap' && process.getuid?.() === 0 ? sandboxHostUid : null;
  // Runs get sockets of their own under runs/; this one is for sandboxes of no run and honours no token.
  const brokerSocket = join(dir, 'broker.sock');
  await broker.start(brokerSocket);
  // Stdio MCP servers are tested in a sandbox of their own, on this backend.
  s.mcp.useSandboxes({ backend, brokerSocket, defaultImage: async (ws) => (await s.models.settings(ws)).defaultImage });

  const imageBuilder =
    backend.images && backendError === null
      ? new ImageBuilder(s.bus, s.stores.docs, s.images, backend.images, newId(), s.log)
      : null;
  const ports: ExecutorPorts = {
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
      return {
        session,
        ...(await serveRun(broker, proxy, session, join(dir, 'runs'), req.egress.network !== 'none', socketOwner)),
      };
    },
    agentModel: (ws, modelId) => s.models.resolve(ws, 'agent', modelId),
    utilityModel: (ws, modelId) => s.models.resolve(ws, 'utility', modelId),
    settings: (ws) => s.models.settings(ws),
    spentSince: (ws, since) => s.runs.spentSince(ws, since),
    secretEnv: (ws, jobId) => s.secrets.envFor(ws, jobId),
    mcp: (ws, jobId, options) => s.mcp.forRun(ws, jobId, options),
    runImage: async (req) => {
      const resolved = await s.images.resolveRunImage({ ...req, canBuild: imageBuilder !== null });
      if (resolved.build && imageBuilder) {
        await imageBuilder.ensureLocal(resolved.build, req.jobId).catch((err: unknown) => {
          throw new RunImageError(`Could not rebuild the job image on this runner: ${errorMessage(err)}`);
        });
      }
      return resolved.image;
    },
    secretValues: (ws) => s.secrets.valuesFor(ws),
    recordScriptCalls: (ctx, ws, jobId, runId, counts) => s.playbooks.recordScriptCalls(ctx, ws, jobId, runId, counts),
    jobState: {
      get: async (ws, jobId, key) => (await s.jobState.get(ws, jobId, key))?.value ?? null,
      set: async (ctx, ws, jobId, key, value) => void (await s.jobState.set(ctx, ws, jobId, key, value)),
    },
  };
  const runFiles = new RunFiles(s.config.dataDir);
  const executor = new RunExecutor(s.bus, s.stores.events, s.runs, ports, runFiles, s.log);
  const shadowRunner = backendError === null ? new ShadowRunner(ports, s.log) : null;
  const dispatcher = new Dispatcher(
    s.bus,
    s.stores.events,
    s.stores.docs,
    s.runs,
    executor,
    backend,
    s.log,
    Number(process.env.SVC_MAX_RUNS ?? 3),
  );
  await dispatcher.start();
  await imageBuilder?.start();
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
    buildImage:
      imageBuilder &&
      (async (ws, jobId, dockerfile) => {
        try {
          const ctx = { workspaceId: ws, actor: { type: 'system' as const, id: dispatcher.runnerId }, requestId: null };
          await s.images.ensureBuild(ctx, ws, jobId, dockerfile, 'playbook');
          const built = await s.images.imageFor(
            { workspaceId: ws, jobId, canBuild: true, signal: AbortSignal.timeout(20 * 60_000) },
            dockerfile,
          );
          if (built.build) await imageBuilder.ensureLocal(built.build, jobId);
          return { ref: built.image };
        } catch (err) {
          return { error: errorMessage(err).replace(/^Environment build failed: /, '') };
        }
      }),
  });
  reflector.start();
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
  const imageGc =
    imageBuilder && backend.images
      ? new ImageGc({
          bus: s.bus,
          docs: s.stores.docs,
          images: backend.images,
          log: s.log,
          recentHashes: async (jobId) => {
            const versions = await s.stores.docs
              .collection<PlaybookVersionDoc>(playbookVersionsCollection)
              .find({ jobId }, { sort: [['version', -1]], limit: 5 });
            return new Set(versions.flatMap((v) => (v.dockerfileHash ? [v.dockerfileHash] : [])));
          },
        })
      : null;
  imageGc?.start();
  const info = () => ({ ...backend.info(), error: backendError });
  return {
    sandboxInfo: info,
    dispatcher,
    imageBuilder,
    imageGc,
    async stop() {
      imageGc?.stop();
      await notifier.stop();
      await reflector.stop();
      await imageBuilder?.stop();
      await dispatcher.stop();
      await proxy.stop();
      await broker.stop();
    },
  };
}

/** The scheduler role. */
export function startScheduler(s: Services): Scheduler {
  const scheduler = new Scheduler(s.bus, s.stores.docs, s.engine, s.runs, s.log);
  scheduler.start();
  return scheduler;
}
