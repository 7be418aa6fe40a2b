import { after, before } from 'node:test';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { CommandBus, type CommandContext } from '../../app/commands.js';
import { JobStateStore } from '../../app/job-state.js';
import { Runs } from '../../app/runs.js';
import { openRunContext, type RunContext, type RunServices } from '../../app/run/phases/context.js';
import type { AgentModel, ExecutorPorts } from '../../app/run/ports.js';
import { RunFiles } from '../../adapters/run-files.js';
import { FileBlobStore } from '../../store/blob-store-files.js';
import { FakeClient, FakeScripts, type FakeResponse } from '../../adapters/models/fake.js';
import { BwrapBackend, sandboxHostUid } from '../../adapters/sandbox/bwrap.js';
import { svcBinaryPath } from '../../adapters/sandbox/select.js';
import { Broker } from '../../broker/server.js';
import { EgressProxy } from '../../broker/egress-proxy.js';
import { serveRun } from '../../broker/run-channel.js';
import { runSessionHooks } from '../../server/broker-hooks.js';
import { jobDecider, jobStreamId } from '../../domain/job.js';
import { jobRunsDecider, jobRunsStreamId } from '../../domain/job-runs.js';
import { emptyContent, playbookDecider, playbookStreamId, type PlaybookContent } from '../../domain/playbook.js';
import { runDecider, runStreamId, type RunPlan } from '../../domain/run.js';
import { defaultLimits } from '../../domain/settings.js';
import type { JobFields, Mode } from '../../schemas/job.js';
import { timelineStreamId } from '../../app/timeline.js';
import { closeStores, openMemoryStores, type Stores } from '../../store/open.js';
import { plainSave } from '../playbook-save.js';

/** A timeline entry as the tests read it. */
export interface Entry {
  type: string;
  payload: Record<string, unknown>;
  ms: number | null;
}

export interface NewRun {
  fields?: Partial<JobFields>;
  playbook?: Partial<PlaybookContent>;
  mode?: Mode;
  input?: unknown;
  /** Answers of the run's fake model, in order. */
  model?: FakeResponse[];
  /** No agent model at all. */
  noModel?: boolean;
  /** Aborting it cancels the run. */
  cancel?: AbortSignal;
}

export interface PhaseWorld {
  stores: Stores;
  bus: CommandBus;
  backend: BwrapBackend;
  services: RunServices;
  files: RunFiles;
  /** Where the run files are kept (the blob store's files). */
  dataDir: string;
  /** What the phases logged as errors. */
  errors: Array<{ obj: object; msg: string }>;
  /** A claimed run of a fresh job, and its context, as the executor would open it. */
  run(options?: NewRun): Promise<RunContext>;
  /** The run's timeline once what it recorded so far is stored. */
  timeline(ctx: RunContext): Promise<Entry[]>;
  runStatus(runId: string): Promise<string>;
  /** Everything the world's sandboxes and sessions hold, to be given back after each test. */
  release(ctx: RunContext): Promise<void>;
}

const workspaceId = 'ws-phases';
const system: CommandContext = { workspaceId, actor: { type: 'system', id: null }, requestId: null };

/**
 * The real parts a run's phases work with: SQLite stores in memory, the command bus, the bwrap backend on a fresh
 * directory, a broker and egress proxy serving each run's session on sockets of its own (as the runner role wires
 * them), the run files on disk, and the product's fake model with a script queue of the test's own.
 */
export function phaseWorld(name: string): PhaseWorld {
  const scripts = new FakeScripts();
  const broker = new Broker();
  const proxy = new EgressProxy();
  let root = '';
  const w = { errors: [] as PhaseWorld['errors'] } as PhaseWorld;
  const models = new Map<string, AgentModel | null>();

  before(async () => {
    root = mkdtempSync(join(tmpdir(), `svc-${name}-`));
    chmodSync(root, 0o711);
    w.stores = openMemoryStores();
    w.bus = new CommandBus(w.stores.events);
    w.backend = new BwrapBackend(join(root, 'sandboxes'), svcBinaryPath());
    await w.backend.prepare();
    await broker.start(join(root, 'broker.sock'));
    w.dataDir = join(root, 'data');
    w.files = new RunFiles(new FileBlobStore(w.dataDir));
    const jobState = new JobStateStore(w.stores.docs, w.stores.events);
    const socketOwner = process.getuid?.() === 0 ? sandboxHostUid : null;
    const ports: ExecutorPorts = {
      backend: w.backend,
      openSession: async (req) => {
        const session = broker.open({ ...req, jobState, hooks: runSessionHooks(req) });
        const sockets = await serveRun(
          broker,
          proxy,
          session,
          join(root, 'runs'),
          req.egress.network !== 'none',
          socketOwner,
        );
        return { session, ...sockets };
      },
      agentModel: async (_ws, modelId) => models.get(modelId ?? '') ?? null,
      utilityModel: async () => null,
      settings: async () => ({ defaultLimits, defaultImage: null, dailySpendLimitUsd: 0 }),
      spentSince: async () => 0,
      secretEnv: async () => ({}),
      runImage: async (req) => req.fallback,
      secretValues: async () => [],
      recordScriptCalls: async () => undefined,
      jobState: {
        get: async (ws, jobId, key) => (await jobState.get(ws, jobId, key))?.value ?? null,
        set: async (ctx, ws, jobId, key, value) => void (await jobState.set(ctx, ws, jobId, key, value)),
      },
    };
    const log = {
      error: (obj: object, msg: string) => void w.errors.push({ obj, msg }),
      info: () => undefined,
      debug: () => undefined,
    };
    const runs = new Runs(w.bus, w.stores.events, w.stores.docs);
    w.services = { bus: w.bus, events: w.stores.events, runs, ports, files: w.files, log, clock: Date.now };
  });

  after(async () => {
    await proxy.stop();
    await broker.stop();
    await closeStores(w.stores);
    rmSync(root, { recursive: true, force: true });
  });

  w.run = async (options = {}) => {
    const jobId = `job-${randomUUID()}`;
    const modelId = `model-${jobId}`;
    const client = new FakeClient(modelId, scripts);
    scripts.push(modelId, options.model ?? [], true);
    models.set(
      modelId,
      options.noModel
        ? null
        : {
            client,
            name: 'fake-model',
            price: { in: 1, out: 1, cacheRead: 0, cacheWrite: 0 },
            contextWindow: 100_000,
          },
    );
    const fields: JobFields = {
      name: 'phases',
      instruction: 'Do it',
      network: 'none',
      selfImprove: true,
      modelId,
      ...options.fields,
    };
    await w.bus.execute(
      jobStreamId(jobId),
      jobDecider,
      { type: 'CreateJob', jobId, workspaceId, fields, now: Date.now() },
      system,
    );
    let playbookVersion = 0;
    if (options.playbook) {
      const content = { ...emptyContent(), ...options.playbook };
      await w.bus.execute(
        playbookStreamId(jobId),
        playbookDecider,
        plainSave({ jobId, workspaceId, content, summary: 'test', authorId: null, now: Date.now() }),
        system,
      );
      playbookVersion = 1;
    }
    const runId = randomUUID();
    await w.bus.execute(
      jobRunsStreamId(jobId),
      jobRunsDecider,
      { type: 'AdmitRun', runId, concurrency: 'queue' },
      system,
    );
    const plan: RunPlan = {
      runId,
      jobId,
      jobName: 'phases',
      workspaceId,
      number: 1,
      trigger: 'manual',
      triggeredBy: null,
      input: options.input ?? {},
      instructions: null,
      mode: options.mode ?? 'explore',
      playbookVersion,
      modelId,
      queuedAt: Date.now(),
    };
    await w.bus.execute(runStreamId(runId), runDecider, { type: 'QueueRun', plan, submitted: true }, system);
    await w.bus.execute(
      runStreamId(runId),
      runDecider,
      { type: 'ClaimRun', runnerId: 'test', now: Date.now() },
      system,
    );
    const ctx = await openRunContext(w.services, runId, options.cancel ?? new AbortController().signal);
    if (!ctx) throw new Error('the claimed run was not provisioning');
    return ctx;
  };

  w.timeline = async (ctx) => {
    await ctx.timeline.flush();
    const events = await w.stores.events.readStream(timelineStreamId(ctx.runId), { fromRevision: 0 });
    return events.map((e) => {
      const data = e.data as { payload: Record<string, unknown>; ms: number | null };
      return { type: e.type, payload: data.payload, ms: data.ms };
    });
  };

  w.runStatus = async (runId) => {
    const { state } = await w.bus.load(runStreamId(runId), runDecider);
    return state.status;
  };

  w.release = async (ctx) => {
    ctx.stop.dispose();
    ctx.held.session?.close();
    await ctx.held.mcp?.close().catch(() => undefined);
    await ctx.held.sandbox?.destroy().catch(() => undefined);
  };

  return w;
}
