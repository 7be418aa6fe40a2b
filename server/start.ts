import { Playbooks, versionContent } from '../app/playbooks.js';
import { RunFiles } from '../adapters/run-files.js';
import { RunDeletion } from '../app/run-deletion.js';
import { renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pino, { type Logger } from 'pino';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../api/app.js';
import type { AppDeps } from '../api/deps.js';
import { defaultWorkspaceId, workspaceDecider, workspaceStreamId } from '../domain/workspace.js';
import { ProjectionEngine } from '../projections/engine.js';
import { allProjectors } from '../projections/index.js';
import { workspacesCollection } from '../projections/identity.js';
import { ReadCache } from '../projections/read-cache.js';
import { ProjectionLease } from '../projections/lease.js';
import { ProjectorRole } from './projector-role.js';
import { closeStores, openMemoryStores, openStores, type Stores } from '../store/open.js';
import { ResilientEventStore } from '../store/resilient-event-store.js';
import { CommandBus, systemContext } from '../app/commands.js';
import type { Config } from '../app/config.js';
import { Identity } from '../app/identity.js';
import { SignIn } from '../app/sign-in.js';
import { protocolFor } from '../adapters/sign-in/index.js';
import { Keys } from '../adapters/keys.js';
import { Runs } from '../app/runs.js';
import { Models } from '../app/models.js';
import { Secrets } from '../app/secrets.js';
import { McpServers } from '../app/mcp-servers.js';
import { NotificationSender } from '../app/notifications.js';
import { JobStateStore } from '../app/job-state.js';
import { ImageLogs, Images } from '../app/images.js';
import type { Position } from '../store/event-store.js';
import { Queries } from '../app/queries/index.js';
import { Jobs } from '../app/jobs.js';
import { Workspaces } from '../app/workspaces.js';
import { JobCompiler } from '../app/compile.js';
import { PlaybookEditor } from '../app/playbook-edits.js';
import { WorkspaceSettings } from '../app/workspace-settings.js';
import { Providers } from '../app/providers.js';
import { liveDeltas } from '../app/timeline.js';
import { localDeltas, SharedDeltas } from '../app/live-deltas.js';
import { fakeScripts } from '../adapters/models/fake.js';
import { startRetention, startRunner, startScheduler } from './runner-role.js';
import type { Services } from './services.js';
import type { Scheduler } from '../runner/scheduler.js';
import { version } from './version.js';
import { WorkspaceEraser } from '../app/workspace-erasure.js';

export type { Services } from './services.js';

export function createLogger(level: string): Logger {
  return pino({ level, base: { pid: process.pid }, timestamp: pino.stdTimeFunctions.isoTime });
}

/**
 * The stores are the config's unless `opened` hands others (another adapter of the ports); either way the event
 * store's subscriptions are made to survive a lost connection here, once for every consumer (docs/design.md,
 * "Failure handling").
 */
export async function openServices(config: Config, log: Logger, opened?: Stores): Promise<Services> {
  const raw = opened ?? (await openStores(config));
  const resilient = new ResilientEventStore(raw.events, log);
  const stores: Stores = { ...raw, events: resilient };
  const keys = Keys.load(config.dataDir, config.masterKey);
  const bus = new CommandBus(stores.events);
  const engine = new ProjectionEngine(stores.events, stores.docs, allProjectors, log);
  // Cached answers are only safe where the engine runs (the projector role holding the lease): only there is every
  // change seen.
  const cache = new ReadCache(engine, () => engine.running);
  const identity = new Identity(bus, stores.docs, keys, engine, cache, { workspacesEnabled: config.workspacesEnabled });
  const deltas = new SharedDeltas(stores.live, liveDeltas, log);
  const runs = new Runs(
    bus,
    stores.events,
    stores.docs,
    Date.now,
    (position) => engine.waitFor(position),
    () => deltas.shareNow(),
  );
  const models = new Models(bus, stores.docs, engine, keys);
  const jobState = new JobStateStore(stores.docs, stores.events);
  const secrets = new Secrets(bus, stores.docs, engine, keys);
  const mcp = new McpServers(bus, stores.docs, engine, secrets, {
    allowPrivateTargets: process.env.SVC_ALLOW_PRIVATE_NETWORK_TARGETS === 'true',
    publicUrl: config.publicUrl,
  });
  mcp.useKeys(keys);
  // A run builds the Dockerfile of the playbook version it was pinned to; a rebuild, the current one.
  const images = new Images(
    bus,
    stores.docs,
    new ImageLogs(stores.blobs),
    async (ws, jobId, version) =>
      (await versionContent(stores.events, ws, jobId, version ?? (await playbooks.latestVersion(jobId))))?.dockerfile ??
      null,
  );
  const playbooks = new Playbooks(
    bus,
    stores.events,
    stores.docs,
    engine,
    Date.now,
    async (ctx, ws, jobId, content) => {
      if (content.dockerfile) await images.ensureBuild(ctx, ws, jobId, content.dockerfile);
    },
  );
  const notifications = new NotificationSender(
    { settings: (ws) => models.settingsFor(ws), secretValue: (ws, name) => secrets.valueOf(ws, name) },
    { allowPrivateTargets: process.env.SVC_ALLOW_PRIVATE_NETWORK_TARGETS === 'true', version },
  );
  return {
    config,
    stores,
    keys,
    bus,
    engine,
    identity,
    cache,
    runs,
    models,
    secrets,
    mcp,
    jobState,
    images,
    playbooks,
    notifications,
    appUrl: () => config.publicUrl,
    runner: null,
    deltas,
    subscriptions: () => resilient.health(),
    log,
  };
}

export function appDeps(
  s: Pick<
    Services,
    | 'config'
    | 'stores'
    | 'subscriptions'
    | 'bus'
    | 'engine'
    | 'identity'
    | 'cache'
    | 'runs'
    | 'keys'
    | 'models'
    | 'secrets'
    | 'mcp'
    | 'jobState'
    | 'images'
    | 'playbooks'
    | 'runner'
    | 'notifications'
    | 'deltas'
    | 'log'
  >,
): AppDeps {
  const allowPrivateNetworkTargets = process.env.SVC_ALLOW_PRIVATE_NETWORK_TARGETS === 'true';
  const projected = (position: Position | null) => s.engine.readYourWrites(position);
  const sandbox = () => s.runner?.sandboxInfo() ?? null;
  const compiler = new JobCompiler(s.models, s.mcp, sandbox);
  return {
    config: {
      publicUrl: s.config.publicUrl,
      logLevel: s.config.logLevel,
      workspacesEnabled: s.config.workspacesEnabled,
      allowPrivateNetworkTargets,
    },
    // The API reads through the query layer only; it is handed no store (docs/api.md).
    queries: new Queries(s.stores.docs, s.stores.events, s.cache, s.deltas, new RunFiles(s.stores.blobs)),
    engine: s.engine,
    identity: s.identity,
    signIn: new SignIn(
      s.config.signInProviders.map((config) => ({ config, protocol: protocolFor(config) })),
      s.identity,
      s.keys,
      (provider, code, detail) => s.log.warn({ provider, code, detail }, 'sign-in failed at the identity provider'),
    ),
    workspaces: new Workspaces(s.bus, s.stores.docs, s.engine, s.identity, {
      workspacesEnabled: s.config.workspacesEnabled,
    }),
    jobs: new Jobs(s.bus, s.playbooks, s.runs, projected, {
      respec: (ws, instruction) => compiler.respec(ws, instruction),
      modelUsable: (ws, modelId) => s.models.usable(ws, modelId),
    }),
    playbookEditor: new PlaybookEditor(s.playbooks, s.secrets),
    compiler,
    // The test notification goes through the process's one sender, the one runs notify with.
    settings: new WorkspaceSettings(s.models, s.secrets, s.notifications, allowPrivateNetworkTargets),
    providers: new Providers(s.bus, s.stores.docs, s.keys, s.models, fakeScripts, projected),
    version,
    runs: s.runs,
    runDeletion: new RunDeletion(s.bus, s.stores.events, s.stores.docs, new RunFiles(s.stores.blobs)),
    sandbox,
    subscriptions: s.subscriptions,
    secrets: s.secrets,
    mcp: s.mcp,
    jobState: s.jobState,
    images: s.images,
    playbooks: s.playbooks,
  };
}

/** Where the running server can be reached, for CLI commands run beside it. */
export function serverInfoFile(dataDir: string): string {
  return join(dataDir, 'server.json');
}

export interface RunningServer {
  url: string;
  services: Services;
  app: FastifyInstance | null;
  close(): Promise<void>;
}

async function anyUserExists(s: Services): Promise<boolean> {
  const users = await s.stores.events.readAll({ filter: { eventTypes: ['UserRegistered'] }, limit: 1 });
  return users.length > 0;
}

/** `svc serve`: every role of the config in this process. */
export async function startServer(
  config: Config,
  log: Logger = createLogger(config.logLevel),
  announce: (text: string) => void = (text) => process.stdout.write(text),
  opened?: Stores,
): Promise<RunningServer> {
  const services = await openServices(config, log, opened);
  await services.bus.execute(
    workspaceStreamId(defaultWorkspaceId),
    workspaceDecider,
    { type: 'CreateWorkspace', workspaceId: defaultWorkspaceId, name: 'Default', now: Date.now(), ifMissing: true },
    systemContext,
  );
  const projector = config.roles.has('projector')
    ? new ProjectorRole(services.engine, new ProjectionLease(services.stores.docs), log)
    : null;
  // Deleted workspaces are erased where the read models are written: the deletion's projection, or a start that
  // finds one unfinished, starts a pass (docs/design.md, "Workspace erasure").
  const eraser = projector
    ? new WorkspaceEraser(
        services.stores.events,
        services.stores.docs,
        services.bus,
        services.jobState,
        {
          removeRun: (runId) => new RunFiles(services.stores.blobs).removeRun(runId),
          removeImageLog: (imageId) => services.images.logs.remove(imageId),
        },
        log,
        (position) => services.engine.waitFor(position, 10_000),
      )
    : null;
  if (eraser)
    services.engine.onChange((collections) => {
      if (collections.has(workspacesCollection)) eraser.kick();
    });
  await projector?.start();
  if (config.roles.has('runner')) services.runner = await startRunner(services);
  const scheduler: Scheduler | null = config.roles.has('scheduler') ? startScheduler(services) : null;
  const retention = config.roles.has('scheduler') ? startRetention(services) : null;

  let app: FastifyInstance | null = null;
  let url = config.publicUrl;
  if (config.roles.has('api')) {
    app = (await buildApp(appDeps(services), log)).app;
    await app.listen({ host: config.host, port: config.port });
    const address = app.server.address();
    const port = typeof address === 'object' && address ? address.port : config.port;
    const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
    url = config.publicUrl || `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
    services.mcp.listeningAt(url);
    // Links in notifications need an address people can open: without SVC_PUBLIC_URL, the one the API listens on.
    services.appUrl = () => url;
    // Written whole under another name, then renamed: a command or script that sees the file never reads it half
    // written (a reader raced an empty file when it was written in place).
    const info = serverInfoFile(config.dataDir);
    writeFileSync(`${info}.${process.pid}`, JSON.stringify({ url, pid: process.pid }) + '\n');
    renameSync(`${info}.${process.pid}`, info);
    log.info({ url, roles: [...config.roles], database: services.stores.events.kind }, 'svc is listening');
    if (!(await anyUserExists(services))) {
      const link = await services.identity.issueSignInLink('admin@localhost');
      // Printed plainly on stdout as well as logged: it is the one thing a newcomer must find.
      announce(`\nNo user exists yet. Sign in as the instance admin (single use, valid 1 hour):\n  ${url}${link}\n\n`);
    }
  }

  let closed = false;
  return {
    url,
    services,
    app,
    async close() {
      if (closed) return;
      closed = true;
      if (app) {
        await app.close();
        rmSync(serverInfoFile(config.dataDir), { force: true });
      }
      await scheduler?.stop();
      await retention?.stop();
      await services.runner?.stop();
      await projector?.stop();
      await services.engine.stop();
      await eraser?.idle();
      await services.deltas.close();
      await closeStores(services.stores);
    },
  };
}

/** The OpenAPI document without a server or a data directory: in-memory stores, no listener. */
export async function describeApi(format: 'json' | 'yaml'): Promise<string> {
  const stores = openMemoryStores();
  const keys = new Keys(Buffer.alloc(32, 1));
  const bus = new CommandBus(stores.events);
  const log = createLogger('silent');
  const engine = new ProjectionEngine(stores.events, stores.docs, allProjectors, log);
  const cache = new ReadCache(engine, () => false);
  const identity = new Identity(bus, stores.docs, keys, engine, cache, { workspacesEnabled: false });
  const config = {
    publicUrl: '',
    logLevel: 'silent',
    dataDir: '',
    signInProviders: [],
    workspacesEnabled: false,
  } as unknown as Config;
  const runs = new Runs(bus, stores.events, stores.docs);
  const models = new Models(bus, stores.docs, engine, keys);
  const jobState = new JobStateStore(stores.docs, stores.events);
  const secrets = new Secrets(bus, stores.docs, engine, keys);
  const mcp = new McpServers(bus, stores.docs, engine, secrets, { allowPrivateTargets: false, publicUrl: '' });
  const images = new Images(bus, stores.docs, new ImageLogs(stores.blobs));
  const playbooks = new Playbooks(bus, stores.events, stores.docs, engine);
  const notifications = new NotificationSender(
    { settings: (ws) => models.settingsFor(ws), secretValue: (ws, name) => secrets.valueOf(ws, name) },
    { allowPrivateTargets: false, version },
  );
  const { app, openapi } = await buildApp(
    appDeps({
      config,
      stores,
      bus,
      engine,
      identity,
      cache,
      runs,
      keys,
      models,
      secrets,
      mcp,
      jobState,
      images,
      playbooks,
      runner: null,
      notifications,
      deltas: { ...localDeltas(liveDeltas), close: async () => {} },
      // Describing the API opens no subscription.
      subscriptions: () => ({ open: 0, retrying: 0, resumed: 0, lastError: null }),
      log,
    }),
  );
  const text = format === 'yaml' ? openapi.asYaml() : openapi.asJson();
  await app.close();
  await closeStores(stores);
  return text;
}
