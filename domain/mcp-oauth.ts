import { DomainError, type Decider, type DomainEvent } from './decider.js';
import { streamCategory } from './stream.js';

/**
 * The OAuth login of an HTTP MCP server (docs/design.md, "MCP OAuth"), one stream per server. Secrets never appear in
 * the clear: `sealed` values are encrypted on the host (Keys, purpose `mcp-oauth`) before a command is built, and the
 * `state` of a pending login is kept only as a hash, so the stream and its read model show no usable credential.
 */

/** How long the browser has to come back from the authorization server. */
export const pendingLoginMs = 10 * 60_000;
/** A token this close to its expiry is refreshed before use (docs/design.md, "MCP OAuth"). */
export const refreshMarginMs = 30_000;

export type PendingLogin = { stateHash: string; userId: string; sealed: string; startedAt: number; expiresAt: number };

export type StoredLogin = {
  sealed: string;
  loggedInAt: number;
  /** When the current access token was issued (the login, or the latest refresh). */
  issuedAt: number;
  expiresAt: number | null;
  refreshable: boolean;
  /** Bumped by every login and refresh: a refresh is stored only over the generation it started from. */
  generation: number;
};

export type McpOauthState = { pending: PendingLogin | null; login: StoredLogin | null; generation: number };

/** `server_changed`: the server's URL changed, and its tokens must not be sent to the new one. */
export type LogoutReason = 'logout' | 'refresh_rejected' | 'server_changed';

export type McpOauthEvent =
  | DomainEvent<
      'McpOauthLoginStarted',
      { serverId: string; userId: string; stateHash: string; sealed: string; startedAt: number; expiresAt: number }
    >
  | DomainEvent<'McpOauthLoginFailed', { serverId: string; error: string; at: number }>
  | DomainEvent<
      'McpOauthLoggedIn',
      {
        serverId: string;
        userId: string;
        sealed: string;
        loggedInAt: number;
        expiresAt: number | null;
        refreshable: boolean;
      }
    >
  | DomainEvent<
      'McpOauthTokensRefreshed',
      { serverId: string; sealed: string; refreshedAt: number; expiresAt: number | null; refreshable: boolean }
    >
  | DomainEvent<'McpOauthLoggedOut', { serverId: string; reason: LogoutReason; at: number }>;

export type McpOauthCommand =
  | { type: 'StartLogin'; serverId: string; userId: string; stateHash: string; sealed: string; now: number }
  | { type: 'FailLogin'; serverId: string; stateHash: string; error: string; now: number }
  | {
      type: 'FinishLogin';
      serverId: string;
      stateHash: string;
      userId: string;
      sealed: string;
      expiresAt: number | null;
      refreshable: boolean;
      now: number;
    }
  | {
      type: 'RecordRefresh';
      serverId: string;
      generation: number;
      sealed: string;
      expiresAt: number | null;
      refreshable: boolean;
      now: number;
    }
  | { type: 'Logout'; serverId: string; reason: LogoutReason; generation?: number; now: number };

export const mcpOauthStream = streamCategory<McpOauthEvent>('mcpoauth');
export const mcpOauthStreamId = mcpOauthStream.id;

/**
 * Why a callback cannot finish the pending login, or null when it can. The state must match the latest login
 * started, by the same user, within its time.
 */
export function callbackRefusal(
  state: McpOauthState,
  stateHash: string,
  userId: string | null,
  now: number,
): string | null {
  const p = state.pending;
  if (!p || p.stateHash !== stateHash) return 'invalid_state';
  if (p.expiresAt <= now) return 'login_expired';
  if (userId !== p.userId) return 'wrong_user';
  return null;
}

/**
 * True when the stored access token should be refreshed before it is sent: 30 s before it expires, or half way
 * through its life when it lives a minute or less, so that a short-lived token is not refreshed for every request.
 */
export function needsRefresh(login: StoredLogin, now: number): boolean {
  if (!login.refreshable || login.expiresAt === null) return false;
  const margin = Math.min(refreshMarginMs, (login.expiresAt - login.issuedAt) / 2);
  return login.expiresAt - margin <= now;
}

/**
 * The scope a login asks for: the configured scopes, else what the server's challenge or metadata names, plus
 * `offline_access` when the authorization server offers it (so a refresh token comes back). Undefined for none.
 */
export function loginScope(options: {
  configured: string[] | undefined;
  challenge: string | undefined;
  resourceScopes: string[] | undefined;
  serverScopes: string[] | undefined;
}): string | undefined {
  const base = options.configured?.length
    ? options.configured
    : options.challenge
      ? options.challenge.split(' ').filter(Boolean)
      : (options.resourceScopes ?? []);
  const scopes = new Set(base);
  if (options.serverScopes?.includes('offline_access')) scopes.add('offline_access');
  return scopes.size > 0 ? [...scopes].join(' ') : undefined;
}

/** When a token answer's `expires_in` (seconds) ends; null when the server gave none. */
export function expiryOf(expiresIn: number | undefined, now: number): number | null {
  return typeof expiresIn === 'number' && Number.isFinite(expiresIn) && expiresIn > 0
    ? now + Math.floor(expiresIn * 1000)
    : null;
}

export const mcpOauthDecider: Decider<McpOauthCommand, McpOauthEvent, McpOauthState> = {
  initialState: { pending: null, login: null, generation: 0 },
  evolve(state, event) {
    switch (event.type) {
      case 'McpOauthLoginStarted': {
        const { userId, stateHash, sealed, startedAt, expiresAt } = event.data;
        return { ...state, pending: { stateHash, userId, sealed, startedAt, expiresAt } };
      }
      case 'McpOauthLoginFailed':
        return { ...state, pending: null };
      case 'McpOauthLoggedIn': {
        const generation = state.generation + 1;
        const { sealed, loggedInAt, expiresAt, refreshable } = event.data;
        return {
          pending: null,
          generation,
          login: { sealed, loggedInAt, issuedAt: loggedInAt, expiresAt, refreshable, generation },
        };
      }
      case 'McpOauthTokensRefreshed': {
        if (!state.login) return state;
        const generation = state.generation + 1;
        const { sealed, expiresAt, refreshable, refreshedAt } = event.data;
        return {
          ...state,
          generation,
          login: { ...state.login, sealed, issuedAt: refreshedAt, expiresAt, refreshable, generation },
        };
      }
      case 'McpOauthLoggedOut':
        return { ...state, login: null };
    }
  },
  decide(command, state) {
    switch (command.type) {
      case 'StartLogin': {
        // A newer login replaces a pending one: only the latest authorization URL can finish.
        const { serverId, userId, stateHash, sealed, now } = command;
        return [
          {
            type: 'McpOauthLoginStarted',
            data: { serverId, userId, stateHash, sealed, startedAt: now, expiresAt: now + pendingLoginMs },
          },
        ];
      }
      case 'FailLogin':
        // The state is spent either way: a callback replayed after an error finds nothing to finish.
        if (state.pending?.stateHash !== command.stateHash) return [];
        return [
          { type: 'McpOauthLoginFailed', data: { serverId: command.serverId, error: command.error, at: command.now } },
        ];
      case 'FinishLogin': {
        const refusal = callbackRefusal(state, command.stateHash, command.userId, command.now);
        if (refusal) throw new DomainError('conflict', 'This login is no longer pending; start it again');
        const { serverId, userId, sealed, expiresAt, refreshable, now } = command;
        return [
          { type: 'McpOauthLoggedIn', data: { serverId, userId, sealed, loggedInAt: now, expiresAt, refreshable } },
        ];
      }
      case 'RecordRefresh':
        // Another process refreshed (or the login ended) since this refresh started: its result wins.
        if (!state.login || state.login.generation !== command.generation)
          throw new DomainError('conflict', 'The login changed while refreshing');
        return [
          {
            type: 'McpOauthTokensRefreshed',
            data: {
              serverId: command.serverId,
              sealed: command.sealed,
              refreshedAt: command.now,
              expiresAt: command.expiresAt,
              refreshable: command.refreshable,
            },
          },
        ];
      case 'Logout':
        if (!state.login) return [];
        // A refresh rejected for a login that was replaced meanwhile must not end the new one.
        if (command.generation !== undefined && state.login.generation !== command.generation) return [];
        return [
          { type: 'McpOauthLoggedOut', data: { serverId: command.serverId, reason: command.reason, at: command.now } },
        ];
    }
  },
};
