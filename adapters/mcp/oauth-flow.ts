import { checkResourceAllowed, resourceUrlFromServerUrl } from '@modelcontextprotocol/sdk/shared/auth-utils.js';
import type {
  AuthorizationServerMetadata,
  OAuthClientInformationMixed,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { loginScope } from '../../domain/mcp-oauth.js';
import { ignoreFailure } from '../../domain/ignore-failure.js';
import type { ResolvedConfig } from './connection.js';

/**
 * The steps of the MCP authorization flow, on the host, with the SDK's helpers: discovery from the 401 challenge
 * (RFC 9728 protected-resource metadata, then RFC 8414 or OIDC metadata), dynamic client registration (RFC 7591),
 * PKCE S256 and the `resource` parameter (RFC 8707), the code exchange and the refresh. The SDK's `auth()`
 * orchestrator is not used: it expects to send a browser somewhere and to keep state in one process, while here the
 * browser comes back to any replica and everything in between is stored through events.
 */

/** What a server advertises about logging in. */
export interface OauthDiscovery {
  authorizationServerUrl: string;
  metadata: AuthorizationServerMetadata;
  /** The RFC 8707 resource indicator to send. */
  resource: string;
  /** The scope the server's challenge asked for, if any. */
  challengeScope: string | undefined;
  resourceScopes: string[] | undefined;
}

/**
 * The SDK's OAuth helpers (and with them its protocol types and zod schemas) are loaded at the first login, not at
 * start: a service that never uses MCP never pays their memory (docs/design.md, "The MCP SDK loaded at first use").
 */
const clientAuth = () => import('@modelcontextprotocol/sdk/client/auth.js');

/** The client the service is at the authorization server; `registered` when it came from dynamic registration. */
export type OauthClient = { client_id: string; client_secret?: string; registered: boolean };

/** An authorization server refused or failed a step; `code` is its OAuth error code when it gave one. */
export class OauthStepFailed extends Error {
  constructor(
    message: string,
    readonly code: string | null,
  ) {
    super(message);
    this.name = 'OauthStepFailed';
  }
}

function failure(step: string, err: unknown): OauthStepFailed {
  const e = err as { errorCode?: unknown; message?: unknown };
  const code = typeof e?.errorCode === 'string' ? e.errorCode : null;
  const message = typeof e?.message === 'string' && e.message ? e.message : String(err);
  return new OauthStepFailed(`${step} failed: ${code && !message.includes(code) ? `${code}: ` : ''}${message}`, code);
}

/**
 * Asks the server itself first: an unauthenticated `initialize` whose 401 may carry `resource_metadata` and a scope
 * in its `WWW-Authenticate` challenge. Then the metadata documents. Null when no login is advertised.
 */
export async function discover(config: ResolvedConfig, fetch: FetchLike): Promise<OauthDiscovery | null> {
  const url = new URL(config.url ?? '');
  const { LATEST_PROTOCOL_VERSION } = await import('@modelcontextprotocol/sdk/types.js');
  const { discoverOAuthServerInfo, extractWWWAuthenticateParams } = await clientAuth();
  let challenge: { resourceMetadataUrl?: URL; scope?: string } = {};
  try {
    const headers: Record<string, string> = {
      ...config.headers,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    };
    const probe = await fetch(url, {
      method: 'POST',
      headers,
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: {
          protocolVersion: LATEST_PROTOCOL_VERSION,
          capabilities: {},
          clientInfo: { name: 'svc', version: '1' },
        },
      }),
    });
    if (probe.status === 401) challenge = extractWWWAuthenticateParams(probe);
    await probe.body?.cancel().catch(ignoreFailure('the probe is dropped unread: only its status and headers counted'));
  } catch {
    // The well-known documents may still answer; a server that is down fails there too.
  }
  const info = await discoverOAuthServerInfo(url, {
    ...(challenge.resourceMetadataUrl ? { resourceMetadataUrl: challenge.resourceMetadataUrl } : {}),
    fetchFn: fetch,
  }).catch(() => null);
  if (!info?.authorizationServerMetadata) return null;
  // The metadata's resource is used only when it covers the configured URL (the SDK's own check).
  const configured = resourceUrlFromServerUrl(url);
  const advertised = info.resourceMetadata?.resource;
  const resource =
    advertised && checkResourceAllowed({ requestedResource: configured, configuredResource: advertised })
      ? advertised
      : configured.href;
  return {
    authorizationServerUrl: info.authorizationServerUrl,
    metadata: info.authorizationServerMetadata,
    resource,
    challengeScope: challenge.scope,
    resourceScopes: info.resourceMetadata?.scopes_supported,
  };
}

/** The configured client, or one registered dynamically; a refused registration says a client id is needed. */
export async function clientFor(
  config: ResolvedConfig,
  found: OauthDiscovery,
  redirectUri: string,
  fetch: FetchLike,
): Promise<OauthClient> {
  const clientId = config.oauth?.clientId?.trim();
  if (clientId)
    return {
      client_id: clientId,
      ...(config.oauth?.clientSecret ? { client_secret: config.oauth.clientSecret } : {}),
      registered: false,
    };
  if (!found.metadata.registration_endpoint) {
    throw new OauthStepFailed(
      `${found.authorizationServerUrl} does not offer dynamic client registration: set a client id (oauth.clientId) for this server`,
      'registration_unsupported',
    );
  }
  // A public client with PKCE, as MCP clients register, unless the server only takes confidential ones.
  const methods = found.metadata.token_endpoint_auth_methods_supported;
  const method =
    !methods || methods.includes('none')
      ? 'none'
      : methods.includes('client_secret_basic')
        ? 'client_secret_basic'
        : 'client_secret_post';
  const { registerClient } = await clientAuth();
  try {
    const info = await registerClient(found.authorizationServerUrl, {
      metadata: found.metadata,
      fetchFn: fetch,
      clientMetadata: {
        redirect_uris: [redirectUri],
        client_name: 'svc',
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: method,
      },
    });
    return {
      client_id: info.client_id,
      ...(info.client_secret ? { client_secret: info.client_secret } : {}),
      registered: true,
    };
  } catch (err) {
    const f = failure('Dynamic client registration', err);
    throw new OauthStepFailed(`${f.message}; set a client id (oauth.clientId) for this server`, f.code);
  }
}

export function scopeFor(config: ResolvedConfig, found: OauthDiscovery): string | undefined {
  return loginScope({
    configured: config.oauth?.scopes,
    challenge: found.challengeScope,
    resourceScopes: found.resourceScopes,
    serverScopes: found.metadata.scopes_supported,
  });
}

/** The authorization URL (PKCE S256, `state`, `resource`) and the verifier to keep for the exchange. */
export async function authorizationRequest(
  found: OauthDiscovery,
  client: OauthClient,
  options: { redirectUri: string; state: string; scope: string | undefined },
): Promise<{ url: string; codeVerifier: string }> {
  // MCP's authorization spec: without S256 in the metadata the server cannot be trusted to check PKCE.
  if (!found.metadata.code_challenge_methods_supported?.includes('S256')) {
    throw new OauthStepFailed(
      `${found.authorizationServerUrl} does not advertise PKCE with S256, which MCP requires`,
      'pkce_unsupported',
    );
  }
  const { startAuthorization } = await clientAuth();
  const { authorizationUrl, codeVerifier } = await startAuthorization(found.authorizationServerUrl, {
    metadata: found.metadata,
    clientInformation: clientInfo(client),
    redirectUrl: options.redirectUri,
    state: options.state,
    resource: found.resource,
    ...(options.scope ? { scope: options.scope } : {}),
  });
  return { url: authorizationUrl.href, codeVerifier };
}

function clientInfo(client: OauthClient): OAuthClientInformationMixed {
  return { client_id: client.client_id, ...(client.client_secret ? { client_secret: client.client_secret } : {}) };
}

export interface TokenContext {
  authorizationServerUrl: string;
  metadata: AuthorizationServerMetadata;
  client: OauthClient;
  resource: string;
}

export async function exchangeCode(
  ctx: TokenContext,
  code: string,
  codeVerifier: string,
  redirectUri: string,
  fetch: FetchLike,
): Promise<OAuthTokens> {
  const { exchangeAuthorization } = await clientAuth();
  try {
    return await exchangeAuthorization(ctx.authorizationServerUrl, {
      metadata: ctx.metadata,
      clientInformation: clientInfo(ctx.client),
      authorizationCode: code,
      codeVerifier,
      redirectUri,
      resource: ctx.resource,
      fetchFn: fetch,
    });
  } catch (err) {
    throw failure('The code exchange', err);
  }
}

export async function refreshTokens(ctx: TokenContext, refreshToken: string, fetch: FetchLike): Promise<OAuthTokens> {
  const { refreshAuthorization } = await clientAuth();
  try {
    return await refreshAuthorization(ctx.authorizationServerUrl, {
      metadata: ctx.metadata,
      clientInformation: clientInfo(ctx.client),
      refreshToken,
      resource: ctx.resource,
      fetchFn: fetch,
    });
  } catch (err) {
    throw failure('The token refresh', err);
  }
}
