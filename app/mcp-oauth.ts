import { createHash, randomBytes } from 'node:crypto';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { DomainError } from '../domain/decider.js';
import { checkResourceAllowed } from '@modelcontextprotocol/sdk/shared/auth-utils.js';
import {
  callbackRefusal,
  expiryOf,
  mcpOauthDecider,
  mcpOauthStreamId,
  needsRefresh,
  type LogoutReason,
  type StoredLogin,
} from '../domain/mcp-oauth.js';
import type { ResolvedConfig } from '../adapters/mcp/connection.js';
import type { BearerSource } from '../adapters/mcp/oauth-fetch.js';
import {
  authorizationRequest,
  clientFor,
  discover,
  exchangeCode,
  OauthStepFailed,
  refreshTokens,
  scopeFor,
  type OauthClient,
  type OauthDiscovery,
  type TokenContext,
} from '../adapters/mcp/oauth-flow.js';
import type { Position } from '../store/event-store.js';
import type { CommandBus, CommandContext } from './commands.js';
import type { Keys } from '../adapters/keys.js';
import { errorMessage } from '../domain/error-message.js';

/** The purpose MCP OAuth data is sealed under (`Keys.encrypt`: AES-256-GCM under the master key, like secrets). */
const purpose = 'mcp-oauth';

/** What a pending login keeps for its callback, sealed. */
interface PendingData {
  codeVerifier: string;
  redirectUri: string;
  scope: string | null;
  /** Set on the one retry without scopes after `invalid_scope`. */
  retried: boolean;
  found: OauthDiscovery;
  client: OauthClient;
}

/** A stored login, sealed. A configured client's secret is not kept: it is read from the server's config when used. */
interface LoginData {
  accessToken: string;
  refreshToken: string | null;
  context: TokenContext;
}

export type CallbackQuery = { code?: string; state?: string; error?: string; error_description?: string };

const hashState = (state: string) => createHash('sha256').update(state).digest('base64url');

/**
 * OAuth logins of HTTP MCP servers (docs/design.md, "MCP OAuth"). Everything in flight is stored through events on the
 * server's `mcpoauth-` stream, so the callback can land on any replica and a refresh on one replica is seen by the
 * others: a refresh re-reads the stream first and is appended only over the login generation it started from.
 */
export class McpOauth {
  /** One refresh at a time per server in this process; callers waiting on it share its answer. */
  private readonly refreshing = new Map<string, Promise<string | null>>();

  constructor(
    private readonly bus: CommandBus,
    private readonly keys: Keys,
    private readonly fetch: FetchLike,
    private readonly baseUrl: () => string,
  ) {}

  callbackUrl(serverId: string): string {
    return `${this.baseUrl()}/api/mcp-servers/${serverId}/oauth/callback`;
  }

  private seal(value: PendingData | LoginData): string {
    return this.keys.encrypt(purpose, JSON.stringify(value));
  }
  private open<T extends PendingData | LoginData>(sealed: string): T {
    return JSON.parse(this.keys.decrypt(purpose, sealed)) as T;
  }

  /** Whether the server advertises a login (a 401 challenge with metadata, or the metadata documents alone). */
  async advertised(config: ResolvedConfig): Promise<boolean> {
    return config.transport === 'http' && (await discover(config, this.fetch)) !== null;
  }

  /** Starts a login for `userId` and answers the URL to send the browser to. */
  async login(ctx: CommandContext, userId: string, serverId: string, config: ResolvedConfig): Promise<string> {
    const found = config.transport === 'http' ? await discover(config, this.fetch) : null;
    if (!found) throw new DomainError('unsupported', "This server doesn't advertise an OAuth login");
    const redirectUri = this.callbackUrl(serverId);
    if (!/^https?:\/\//.test(redirectUri))
      throw new DomainError('unsupported', 'The service does not know its own address: set SVC_PUBLIC_URL');
    const client = await clientFor(config, found, redirectUri, this.fetch);
    return this.begin(ctx, userId, serverId, {
      redirectUri,
      found,
      client,
      scope: scopeFor(config, found) ?? null,
      retried: false,
    });
  }

  private async begin(
    ctx: CommandContext,
    userId: string,
    serverId: string,
    plan: Omit<PendingData, 'codeVerifier'>,
  ): Promise<string> {
    const state = randomBytes(32).toString('base64url');
    const request = await authorizationRequest(plan.found, plan.client, {
      redirectUri: plan.redirectUri,
      state,
      scope: plan.scope ?? undefined,
    });
    const sealed = this.seal({ ...plan, codeVerifier: request.codeVerifier });
    await this.bus.execute(
      mcpOauthStreamId(serverId),
      mcpOauthDecider,
      { type: 'StartLogin', serverId, userId, stateHash: hashState(state), sealed, now: Date.now() },
      ctx,
    );
    return request.url;
  }

  /**
   * The browser's return from the authorization server. Answers where to send it next: `/mcp` with the outcome, or
   * once, after `invalid_scope`, the authorization server again without scopes. The state must be the one the
   * latest login of this user was started with, within 10 minutes; it can be used once.
   */
  async callback(
    ctx: CommandContext,
    serverId: string,
    userId: string | null,
    query: CallbackQuery,
  ): Promise<{ location: string; position: Position | null }> {
    let position: Position | null = null;
    const back = (params: Record<string, string>) => ({
      location: `/mcp?${new URLSearchParams({ server: serverId, ...params }).toString()}`,
      position,
    });
    const stream = mcpOauthStreamId(serverId);
    const stateHash = hashState(query.state ?? '');
    const { state } = await this.bus.load(stream, mcpOauthDecider);
    const refusal = callbackRefusal(state, stateHash, userId, Date.now());
    // An unknown state spends nothing: it may be a forged request, and the real login must still be able to finish.
    if (refusal === 'invalid_state' || refusal === 'wrong_user') return back({ error: refusal });
    const fail = async (error: string, description?: string) => {
      position = (
        await this.bus.execute(
          stream,
          mcpOauthDecider,
          { type: 'FailLogin', serverId, stateHash, error, now: Date.now() },
          ctx,
        )
      ).position;
      return back({ error, ...(description ? { error_description: description.slice(0, 300) } : {}) });
    };
    if (refusal) return fail(refusal);
    const pending = this.open<PendingData>(state.pending!.sealed);
    if (query.error) {
      if (query.error === 'invalid_scope' && pending.scope && !pending.retried) {
        return {
          location: await this.begin(ctx, userId!, serverId, {
            redirectUri: pending.redirectUri,
            found: pending.found,
            client: pending.client,
            scope: null,
            retried: true,
          }),
          position,
        };
      }
      return fail(query.error, query.error_description);
    }
    if (!query.code) return fail('invalid_request', 'The authorization server sent neither a code nor an error');
    const context: TokenContext = {
      authorizationServerUrl: pending.found.authorizationServerUrl,
      metadata: pending.found.metadata,
      client: pending.client,
      resource: pending.found.resource,
    };
    let tokens: OAuthTokens;
    try {
      tokens = await exchangeCode(context, query.code, pending.codeVerifier, pending.redirectUri, this.fetch);
    } catch (err) {
      return fail(err instanceof OauthStepFailed && err.code ? err.code : 'token_exchange_failed', errorMessage(err));
    }
    const now = Date.now();
    const stored = pending.client.registered
      ? context
      : { ...context, client: { client_id: pending.client.client_id, registered: false } };
    const sealed = this.seal({
      accessToken: tokens.access_token,
      refreshToken: tokens.refresh_token ?? null,
      context: stored,
    });
    position = (
      await this.bus.execute(
        stream,
        mcpOauthDecider,
        {
          type: 'FinishLogin',
          serverId,
          stateHash,
          userId: userId!,
          sealed,
          expiresAt: expiryOf(tokens.expires_in, now),
          refreshable: Boolean(tokens.refresh_token),
          now,
        },
        ctx,
      )
    ).position;
    return back({ login: 'ok' });
  }

  async logout(ctx: CommandContext, serverId: string, reason: LogoutReason = 'logout'): Promise<Position | null> {
    return (
      await this.bus.execute(
        mcpOauthStreamId(serverId),
        mcpOauthDecider,
        { type: 'Logout', serverId, reason, now: Date.now() },
        ctx,
      )
    ).position;
  }

  /**
   * The access tokens of the server's login for one connection, on the host. Each request asks again, so a refresh
   * by another connection or replica is picked up; `workspaceId` goes into the metadata of refresh events.
   */
  bearer(workspaceId: string, serverId: string, config: ResolvedConfig): BearerSource {
    const ctx: CommandContext = { workspaceId, actor: { type: 'system', id: null }, requestId: null };
    // Tokens go only to the resource they were issued for, whatever the config says now.
    const forThisServer = (login: StoredLogin | null) => {
      if (!login || !config.url) return null;
      const { resource } = this.open<LoginData>(login.sealed).context;
      return checkResourceAllowed({ requestedResource: config.url, configuredResource: resource }) ? login : null;
    };
    const current = async () =>
      forThisServer((await this.bus.load(mcpOauthStreamId(serverId), mcpOauthDecider)).state.login);
    return {
      token: async () => {
        const login = await current();
        if (!login) return null;
        return needsRefresh(login, Date.now())
          ? this.refresh(ctx, serverId, login, config)
          : this.open<LoginData>(login.sealed).accessToken;
      },
      rejected: async (token) => {
        // Re-read first: another connection or replica may have refreshed already.
        const login = await current();
        if (!login) return null;
        const stored = this.open<LoginData>(login.sealed).accessToken;
        if (stored !== token) return stored;
        return login.refreshable ? this.refresh(ctx, serverId, login, config) : null;
      },
    };
  }

  private refresh(
    ctx: CommandContext,
    serverId: string,
    login: StoredLogin,
    config: ResolvedConfig,
  ): Promise<string | null> {
    const running = this.refreshing.get(serverId);
    if (running) return running;
    const work = this.refreshOnce(ctx, serverId, login, config).finally(() => this.refreshing.delete(serverId));
    this.refreshing.set(serverId, work);
    return work;
  }

  private async refreshOnce(
    ctx: CommandContext,
    serverId: string,
    login: StoredLogin,
    config: ResolvedConfig,
  ): Promise<string | null> {
    const data = this.open<LoginData>(login.sealed);
    if (!data.refreshToken) return null;
    const client = data.context.client.registered
      ? data.context.client
      : { ...data.context.client, ...(config.oauth?.clientSecret ? { client_secret: config.oauth.clientSecret } : {}) };
    let tokens: OAuthTokens;
    try {
      tokens = await refreshTokens({ ...data.context, client }, data.refreshToken, this.fetch);
    } catch (err) {
      if (
        err instanceof OauthStepFailed &&
        (err.code === 'invalid_grant' || err.code === 'invalid_client' || err.code === 'unauthorized_client')
      ) {
        // The authorization server no longer honours this login: end it, so the status says a login is needed.
        await this.bus.execute(
          mcpOauthStreamId(serverId),
          mcpOauthDecider,
          { type: 'Logout', serverId, reason: 'refresh_rejected', generation: login.generation, now: Date.now() },
          ctx,
        );
        return null;
      }
      // A server that is down says nothing about the login; the current token may still do.
      return login.expiresAt !== null && login.expiresAt > Date.now() ? data.accessToken : null;
    }
    const now = Date.now();
    const refreshToken = tokens.refresh_token ?? data.refreshToken;
    const sealed = this.seal({ accessToken: tokens.access_token, refreshToken, context: data.context });
    try {
      await this.bus.execute(
        mcpOauthStreamId(serverId),
        mcpOauthDecider,
        {
          type: 'RecordRefresh',
          serverId,
          generation: login.generation,
          sealed,
          expiresAt: expiryOf(tokens.expires_in, now),
          refreshable: true,
          now,
        },
        ctx,
      );
      return tokens.access_token;
    } catch (err) {
      if (!(err instanceof DomainError && err.code === 'conflict')) throw err;
      // Someone else stored a newer login meanwhile: theirs is the one to use.
      const latest = (await this.bus.load(mcpOauthStreamId(serverId), mcpOauthDecider)).state.login;
      return latest ? this.open<LoginData>(latest.sealed).accessToken : null;
    }
  }
}
