import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ignoreFailure } from '../../domain/ignore-failure.js';

/** Access tokens of a stored login, handed out on the host only (app/mcp-oauth.ts). */
export interface BearerSource {
  /** A token fit to send now (refreshed first when it is about to expire), or null when the login has ended. */
  token(): Promise<string | null>;
  /** The server refused `token`: a fresh one, or null when there is none (the login may have ended). */
  rejected(token: string): Promise<string | null>;
}

/**
 * Wraps the guarded fetch so every request of an MCP connection carries the login's current access token. The
 * token is asked for per request, so a run that outlives a token keeps working; a 401 is retried once with a
 * refreshed token. A configured Authorization header is never replaced: it means `bearer_token`, not OAuth.
 */
export function bearerFetch(fetch: FetchLike, source: BearerSource): FetchLike {
  return async (input, init = {}) => {
    const headers = new Headers(init.headers);
    if (headers.has('authorization')) return fetch(input, init);
    const send = (token: string | null) => {
      const h = new Headers(headers);
      if (token) h.set('authorization', `Bearer ${token}`);
      return fetch(input, { ...init, headers: h });
    };
    const token = await source.token();
    const first = await send(token);
    if (first.status !== 401 || !token) return first;
    const fresh = await source.rejected(token);
    if (!fresh || fresh === token) return first;
    await first.body?.cancel().catch(ignoreFailure('the refused answer is dropped unread; only its status counted'));
    return send(fresh);
  };
}
