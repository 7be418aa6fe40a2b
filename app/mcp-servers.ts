import { randomBytes } from 'node:crypto';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { DomainError } from '../domain/decider.js';
import { checkGrants, jobMcpDecider, jobMcpStreamId, type McpGrant } from '../domain/mcp-grants.js';
import {
  checkServerInput,
  configSecrets,
  mcpNameDecider,
  mcpNameStreamId,
  mcpServerDecider,
  mcpServerStreamId,
  secretReference,
  type McpServerConfig,
  type McpServerInput,
  type McpTestResult,
} from '../domain/mcp-server.js';
import { staleClaimMs } from '../domain/secret.js';
import type { ProjectionEngine } from '../projections/engine.js';
import {
  jobMcpCollection,
  mcpServersCollection,
  type JobMcpDoc,
  type McpServerDoc,
} from '../projections/mcp-servers.js';
import type { AuthDto, JobServer, McpServerDto } from '../schemas/mcp.js';
import { McpConnection, LoginRequired, type ResolvedConfig } from '../adapters/mcp/connection.js';
import { guardedFetch } from '../adapters/egress/guarded-fetch.js';
import { outboundUrlRefusal } from '../adapters/egress/address-guard.js';
import { RunMcp, type GrantedServer } from '../adapters/mcp/run-tools.js';
import type { Sandbox, SandboxBackend } from '../adapters/sandbox/types.js';
import type { DocumentStore } from '../store/document-store.js';
import type { CommandBus, CommandContext } from './commands.js';
import { newId } from './ids.js';
import { McpOauth, type CallbackQuery } from './mcp-oauth.js';
import type { Keys } from '../adapters/keys.js';
import type { Secrets } from './secrets.js';
import { errorMessage } from '../domain/error-message.js';
import { ignoreFailure } from '../domain/ignore-failure.js';

export interface McpServersOptions {
  /** SVC_ALLOW_PRIVATE_NETWORK_TARGETS: HTTP servers on private networks and on this host may be reached. */
  allowPrivateTargets: boolean;
  publicUrl: string;
}

/** Where a stdio server can be tried outside a run: the runner role's backend and its broker socket. */
export interface TestSandboxes {
  backend: SandboxBackend;
  brokerSocket: string;
  defaultImage(workspaceId: string): Promise<string | null>;
}

/** The workspace's MCP servers: registry, test, job grants, and the connections a run opens (docs/design.md, "MCP"). */
export class McpServers {
  private sandboxes: TestSandboxes | null = null;
  readonly fetch: FetchLike;
  private oauthLogins: McpOauth | null = null;
  /** Where browsers reach the API: SVC_PUBLIC_URL, else the address the API listens on (`listeningAt`). */
  private baseUrl: string;

  constructor(
    private readonly bus: CommandBus,
    private readonly docs: DocumentStore,
    private readonly engine: ProjectionEngine,
    private readonly secrets: Secrets,
    private readonly options: McpServersOptions,
  ) {
    this.fetch = guardedFetch(options.allowPrivateTargets);
    this.baseUrl = options.publicUrl;
  }

  /** OAuth logins need the master key for their sealed tokens (app/mcp-oauth.ts). */
  useKeys(keys: Keys): void {
    this.oauthLogins = new McpOauth(this.bus, keys, this.fetch, () => this.baseUrl);
  }

  /** Without SVC_PUBLIC_URL, OAuth callbacks go to the address the API listens on. */
  listeningAt(url: string): void {
    if (!this.options.publicUrl) this.baseUrl = url;
  }

  get oauth(): McpOauth {
    if (!this.oauthLogins) throw new DomainError('unsupported', 'OAuth logins are not available in this process');
    return this.oauthLogins;
  }

  /** The resolved config of an HTTP server with a stored login gets its tokens, used only here on the host. */
  private withLogin(workspaceId: string, doc: McpServerDoc, config: ResolvedConfig): ResolvedConfig {
    if (config.transport !== 'http' || !doc.login || !this.oauthLogins) return config;
    return { ...config, bearer: this.oauthLogins.bearer(workspaceId, doc._id, config) };
  }

  /** `POST …/oauth/login`: the authorization URL for this user's browser. */
  async startLogin(ctx: CommandContext, workspaceId: string, userId: string, id: string): Promise<string> {
    const doc = await this.get(workspaceId, id);
    return this.oauth.login(ctx, userId, id, await this.resolve(workspaceId, doc.config));
  }

  /** `GET …/oauth/callback`: the browser may come back while another workspace is selected, so the server's own counts. */
  async finishLogin(ctx: CommandContext, id: string, userId: string | null, query: CallbackQuery): Promise<string> {
    const doc = await this.servers.findOne({ _id: id });
    if (!doc) return `/mcp?${new URLSearchParams({ server: id, error: 'not_found' }).toString()}`;
    const { location, position } = await this.oauth.callback(
      { ...ctx, workspaceId: doc.workspaceId },
      id,
      userId,
      query,
    );
    await this.engine.waitFor(position);
    return location;
  }

  async logout(ctx: CommandContext, workspaceId: string, id: string): Promise<void> {
    await this.get(workspaceId, id);
    await this.engine.waitFor(await this.oauth.logout(ctx, id));
  }

  /** The runner role lends its sandbox backend, so stdio servers can be tested in a sandbox of their own. */
  useSandboxes(sandboxes: TestSandboxes): void {
    this.sandboxes = sandboxes;
  }

  private get servers() {
    return this.docs.collection<McpServerDoc>(mcpServersCollection);
  }

  /** Referenced secrets must exist when the config is written: a typo shows at once, not at the next run. */
  private async checkSecrets(workspaceId: string, config: McpServerConfig): Promise<void> {
    const missing: string[] = [];
    for (const name of configSecrets(config)) if (!(await this.secrets.byName(workspaceId, name))) missing.push(name);
    if (missing.length === 0) return;
    const fields: Array<{ field: string; code: string; message: string }> = [];
    const check = (field: string, text: string) => {
      for (const name of missing)
        if (text.includes(`{{secret:${name}}}`))
          fields.push({
            field,
            code: 'unknown_secret',
            message: `references the secret ${name}, which does not exist`,
          });
    };
    for (const [k, v] of Object.entries(config.env)) check(`env.${k}`, v);
    for (const [k, v] of Object.entries(config.headers)) check(`headers.${k}`, v);
    check('oauth.clientSecret', config.oauth?.clientSecret ?? '');
    throw DomainError.validation(fields);
  }

  /** A name claim another server holds only if that server still exists (see domain/secret.ts for the pattern). */
  private async claimName(ctx: CommandContext, workspaceId: string, serverId: string, name: string): Promise<void> {
    const stream = mcpNameStreamId(workspaceId, name);
    const { state } = await this.bus.load(stream, mcpNameDecider);
    let takeOver: string | undefined;
    if (state.owner && state.owner !== serverId) {
      const owner = (await this.bus.load(mcpServerStreamId(state.owner), mcpServerDecider)).state;
      const ownerName = owner.status === 'active' ? owner.config.name.toLowerCase() : null;
      if (
        owner.status === 'deleted' ||
        (owner.status === 'active' && ownerName !== name.toLowerCase()) ||
        (owner.status === 'none' && Date.now() - state.claimedAt > staleClaimMs)
      )
        takeOver = state.owner;
    }
    await this.bus.execute(
      stream,
      mcpNameDecider,
      { type: 'Claim', serverId, name, now: Date.now(), ...(takeOver ? { takeOver } : {}) },
      ctx,
    );
  }

  /**
   * The host's outbound address rule at save, as far as the URL itself tells (an address literal in any spelling,
   * localhost); the resolved addresses are judged at every dial by the guarded fetch (docs/design.md "Outbound addresses").
   */
  private checkAddress(config: McpServerConfig): void {
    const refusal =
      config.transport === 'http' && config.url
        ? outboundUrlRefusal(config.url, this.options.allowPrivateTargets)
        : null;
    if (refusal) throw DomainError.validation([{ field: 'url', code: 'not_allowed', message: refusal }]);
  }

  async create(ctx: CommandContext, workspaceId: string, input: McpServerInput): Promise<string> {
    const config = checkServerInput(input);
    this.checkAddress(config);
    await this.checkSecrets(workspaceId, config);
    const id = newId();
    await this.claimName(ctx, workspaceId, id, config.name);
    const r = await this.bus.execute(
      mcpServerStreamId(id),
      mcpServerDecider,
      { type: 'CreateMcpServer', serverId: id, workspaceId, config, now: Date.now() },
      ctx,
    );
    await this.engine.waitFor(r.position);
    return id;
  }

  async replace(ctx: CommandContext, workspaceId: string, id: string, input: McpServerInput): Promise<void> {
    const { state } = await this.bus.load(mcpServerStreamId(id), mcpServerDecider);
    if (state.status !== 'active' || state.workspaceId !== workspaceId) throw DomainError.notFound('MCP server');
    const config = checkServerInput(input);
    this.checkAddress(config);
    await this.checkSecrets(workspaceId, config);
    const renamed = config.name.toLowerCase() !== state.config.name.toLowerCase();
    if (renamed) await this.claimName(ctx, workspaceId, id, config.name);
    const r = await this.bus.execute(
      mcpServerStreamId(id),
      mcpServerDecider,
      (s) => {
        if (s.status !== 'active' || s.workspaceId !== workspaceId) throw DomainError.notFound('MCP server');
        return { type: 'ChangeMcpServer' as const, config, now: Date.now() };
      },
      ctx,
    );
    if (renamed)
      await this.bus.execute(
        mcpNameStreamId(workspaceId, state.config.name),
        mcpNameDecider,
        { type: 'Release', serverId: id },
        ctx,
      );
    // A login belongs to the server it was made for: a new URL must log in again.
    const loggedOut =
      state.config.url !== config.url && this.oauthLogins
        ? await this.oauthLogins.logout(ctx, id, 'server_changed')
        : null;
    await this.engine.waitFor(loggedOut ?? r.position);
  }

  async delete(ctx: CommandContext, workspaceId: string, id: string): Promise<void> {
    const r = await this.bus.execute(
      mcpServerStreamId(id),
      mcpServerDecider,
      (s) => {
        if (s.status !== 'active' || s.workspaceId !== workspaceId) throw DomainError.notFound('MCP server');
        return { type: 'DeleteMcpServer' as const, now: Date.now() };
      },
      ctx,
    );
    const name = (r.state as { config: McpServerConfig }).config.name;
    await this.bus.execute(mcpNameStreamId(workspaceId, name), mcpNameDecider, { type: 'Release', serverId: id }, ctx);
    await this.engine.waitFor(r.position);
  }

  async get(workspaceId: string, id: string): Promise<McpServerDoc> {
    const doc = await this.servers.findOne({ _id: id, workspaceId });
    if (!doc) throw DomainError.notFound('MCP server');
    return doc;
  }

  /** The server's login status (AuthDto). Without a stored OAuth login it comes from the config and the last test. */
  auth(doc: McpServerDoc): AuthDto {
    const callbackUrl = `${this.baseUrl}/api/mcp-servers/${doc._id}/oauth/callback`;
    const base = { loggedInAt: null, expiresAt: null, refreshable: false };
    if (doc.config.transport === 'stdio') return { status: 'unsupported', ...base };
    if (Object.keys(doc.config.headers).some((h) => h.toLowerCase() === 'authorization'))
      return { status: 'bearer_token', ...base, callbackUrl };
    if (doc.login)
      return {
        status: 'oauth',
        loggedInAt: doc.login.loggedInAt,
        expiresAt: doc.login.expiresAt,
        refreshable: doc.login.refreshable,
        callbackUrl,
      };
    return { status: doc.lastTest?.authStatus ?? 'unknown', ...base, callbackUrl };
  }

  toDto(doc: McpServerDoc): McpServerDto {
    const c = doc.config;
    return {
      id: doc._id,
      name: c.name,
      description: c.description,
      transport: c.transport,
      command: c.command,
      args: c.args,
      env: c.env,
      url: c.url,
      headers: c.headers,
      oauth: c.oauth,
      enabled: c.enabled,
      tools: doc.tools,
      toolsCachedAt: doc.toolsCachedAt,
      auth: this.auth(doc),
      createdAt: doc.createdAt,
      updatedAt: doc.updatedAt,
    };
  }

  /** The config with every secret reference replaced by its value; a reference to a deleted secret fails. */
  async resolve(workspaceId: string, config: McpServerConfig): Promise<ResolvedConfig> {
    const values = new Map<string, string>();
    for (const name of configSecrets(config)) {
      const value = await this.secrets.valueOf(workspaceId, name);
      if (value === null) throw new Error(`the secret ${name} it references does not exist`);
      values.set(name, value);
    }
    const fill = (text: string) => text.replace(secretReference, (_m, name: string) => values.get(name) ?? '');
    const map = (m: Record<string, string>) => Object.fromEntries(Object.entries(m).map(([k, v]) => [k, fill(v)]));
    return {
      ...config,
      env: map(config.env),
      headers: map(config.headers),
      oauth: config.oauth && {
        ...config.oauth,
        ...(config.oauth.clientSecret !== undefined ? { clientSecret: fill(config.oauth.clientSecret) } : {}),
      },
    };
  }

  /**
   * `POST /api/mcp-servers/{id}/test`: connect, list, cache the tools. HTTP servers are reached from the host; a stdio
   * server runs in a sandbox of its own on the workspace's default image, with internet access.
   */
  async test(ctx: CommandContext, workspaceId: string, id: string): Promise<McpTestResult & { auth: AuthDto }> {
    const doc = await this.get(workspaceId, id);
    const started = Date.now();
    let result: McpTestResult;
    let sandbox: Sandbox | null = null;
    try {
      const config = this.withLogin(workspaceId, doc, await this.resolve(workspaceId, doc.config));
      if (config.transport === 'stdio') {
        if (!this.sandboxes)
          throw new DomainError(
            'unsupported',
            'Testing a stdio server needs a sandbox, and this process has no runner role',
          );
        const s = this.sandboxes;
        sandbox = await s.backend.create({
          id: `mcptest-${randomBytes(6).toString('hex')}`,
          labels: { workspaceId },
          image: await s.defaultImage(workspaceId),
          limits: { cpus: 1, memoryMb: 1024, pidsLimit: 256, diskMb: 1024 },
          network: 'internet',
          runAsRoot: false,
          env: {},
          brokerSocket: s.brokerSocket,
          proxySocket: null,
          ttlMs: 5 * 60_000,
          firstExecStreams: true,
        });
      }
      const connection = await McpConnection.open(config, { sandbox, fetch: this.fetch, connectTimeoutMs: 30_000 });
      await connection.close();
      result = {
        ok: true,
        latencyMs: Date.now() - started,
        error: null,
        tools: connection.tools,
        authStatus: 'unsupported',
        testedAt: Date.now(),
      };
    } catch (err) {
      if (err instanceof DomainError) throw err;
      const login = err instanceof LoginRequired;
      result = {
        ok: false,
        latencyMs: Date.now() - started,
        error: errorMessage(err),
        tools: null,
        authStatus: login ? 'not_logged_in' : 'unknown',
        testedAt: Date.now(),
      };
    } finally {
      await sandbox?.destroy().catch(ignoreFailure('the test sandbox expires (ttlMs above) and is reaped'));
    }
    const r = await this.bus.execute(mcpServerStreamId(id), mcpServerDecider, { type: 'RecordMcpTest', result }, ctx);
    await this.engine.waitFor(r.position);
    return { ...result, auth: this.auth(await this.get(workspaceId, id)) };
  }

  /** A job's grants with server names; deleted servers drop out (disabled ones stay listed, and are skipped by runs). */
  async grants(workspaceId: string, jobId: string): Promise<JobServer[]> {
    const doc = await this.docs.collection<JobMcpDoc>(jobMcpCollection).findOne({ _id: jobId });
    const list = doc?.grants ?? [];
    if (list.length === 0) return [];
    const found = await this.servers.find({ _id: { $in: list.map((g) => g.serverId) }, workspaceId });
    const names = new Map(found.map((s) => [s._id, s.name]));
    return list
      .filter((g) => names.has(g.serverId))
      .map((g) => ({ serverId: g.serverId, allowedTools: g.allowedTools, serverName: names.get(g.serverId)! }));
  }

  /** Replaces the job's whole set. Every server must exist in the workspace (else 404); tool names are checked. */
  async setGrants(ctx: CommandContext, workspaceId: string, jobId: string, grants: McpGrant[]): Promise<void> {
    const ids = [...new Set(grants.map((g) => g.serverId))];
    const found = ids.length ? await this.servers.find({ _id: { $in: ids }, workspaceId }) : [];
    if (found.length !== ids.length) throw DomainError.notFound('MCP server');
    const known = new Map(found.map((s) => [s._id, s.tools ? new Set(s.tools.map((t) => t.name)) : null]));
    const checked = checkGrants(grants, known);
    const r = await this.bus.execute(
      jobMcpStreamId(jobId),
      jobMcpDecider,
      { type: 'SetJobMcpServers', jobId, grants: checked },
      ctx,
    );
    await this.engine.waitFor(r.position);
  }

  /** Names of the workspace's servers, for compile. */
  async names(
    workspaceId: string,
  ): Promise<Array<{ id: string; name: string; description: string; enabled: boolean }>> {
    return (await this.servers.find({ workspaceId }, { sort: [['nameLower', 1]] })).map((s) => ({
      id: s._id,
      name: s.name,
      description: s.config.description,
      enabled: s.config.enabled,
    }));
  }

  /**
   * The granted, enabled servers of a job with their configs resolved, as a run's MCP set; null when there are none.
   * A server whose secrets cannot be resolved is left out with a note on the timeline.
   */
  async forRun(
    workspaceId: string,
    jobId: string,
    options: {
      shadow: boolean;
      runAsRoot: boolean;
      timeline(type: string, payload: Record<string, unknown>, ms: number | null): void;
    },
  ): Promise<RunMcp | null> {
    const doc = await this.docs.collection<JobMcpDoc>(jobMcpCollection).findOne({ _id: jobId });
    const grants = doc?.grants ?? [];
    if (grants.length === 0) return null;
    const servers = await this.servers.find({ _id: { $in: grants.map((g) => g.serverId) }, workspaceId });
    const granted: GrantedServer[] = [];
    for (const g of grants) {
      const s = servers.find((x) => x._id === g.serverId);
      if (!s || !s.config.enabled) continue;
      try {
        granted.push({
          id: s._id,
          name: s.name,
          config: this.withLogin(workspaceId, s, await this.resolve(workspaceId, s.config)),
          allowedTools: g.allowedTools,
        });
      } catch (err) {
        options.timeline(
          'mcp.call',
          { server: s.name, ok: false, error: `Could not connect to ${s.name}: ${errorMessage(err)}` },
          null,
        );
      }
    }
    if (granted.length === 0) return null;
    return new RunMcp(granted, {
      shadow: options.shadow,
      runAsRoot: options.runAsRoot,
      timeline: options.timeline,
      connect: { fetch: this.fetch },
    });
  }
}
