import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider, { errors } from 'oidc-provider';

/**
 * A real OAuth 2.1 / OpenID authorization server on loopback (`oidc-provider`): dynamic client registration, PKCE,
 * resource indicators with JWT access tokens for the resource the client names, refresh tokens for
 * `offline_access`. The login and consent screens are replaced by an interaction handler that signs in one fixed
 * account and grants what was asked, or denies when told to: what a person would click, without a browser.
 */
export interface TestAuthServer {
  issuer: string;
  /** Access token lifetime for tokens issued from now on, in seconds. */
  accessTokenTtl: number;
  /** The next interactions answer `access_denied`. */
  deny: boolean;
  /** Token endpoint successes by grant type. */
  grants: Record<string, number>;
  registrations: number;
  /** Ends every grant given so far: their refresh tokens stop working. */
  revokeAll(): Promise<void>;
  close(): Promise<void>;
}

export const testAccount = 'user-1';

/** `clients`: statically registered clients, as an operator registers one by hand. */
export async function startAuthServer(
  options: { registration?: boolean; clients?: Array<Record<string, unknown>> } = {},
): Promise<TestAuthServer> {
  const http = createServer();
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  const issuer = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  const key = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' });
  const grantIds: string[] = [];

  const state: TestAuthServer = {
    issuer,
    accessTokenTtl: 300,
    deny: false,
    grants: {},
    registrations: 0,
    async revokeAll() {
      for (const id of grantIds) await (await provider.Grant.find(id))?.destroy();
    },
    async close() {
      http.closeAllConnections();
      await new Promise<void>((r) => http.close(() => r()));
    },
  };

  const provider = new Provider(issuer, {
    jwks: { keys: [{ ...key, kid: 'test-key', use: 'sig', alg: 'RS256' }] },
    cookies: { keys: [randomBytes(16).toString('hex')] },
    clients: options.clients ?? [],
    findAccount: async (_ctx: unknown, sub: string) => ({ accountId: sub, claims: async () => ({ sub }) }),
    interactions: { url: async (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
    features: {
      devInteractions: { enabled: false },
      registration: { enabled: options.registration ?? true },
      revocation: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: async (_ctx: unknown, _client: unknown, oneOf?: string) => oneOf,
        useGrantedResource: async () => true,
        getResourceServerInfo: async (_ctx: unknown, resource: string) => {
          if (!resource.startsWith('http://127.0.0.1:')) throw new errors.InvalidTarget();
          return {
            scope: 'mcp:tools',
            audience: resource,
            accessTokenTTL: state.accessTokenTtl,
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: 'RS256' } },
          };
        },
      },
    },
  });
  provider.on('grant.success', (...args: unknown[]) => {
    const type = (args[0] as { oidc: { params: { grant_type: string } } }).oidc.params.grant_type;
    state.grants[type] = (state.grants[type] ?? 0) + 1;
  });
  provider.on('registration_create.success', () => void state.registrations++);
  // oidc-provider reports errors it answered on these events; they are expected in tests (a rejected refresh).
  provider.on('server_error', (...args: unknown[]) => console.error('authorization server error', args[1]));

  const interaction = async (req: IncomingMessage, res: ServerResponse) => {
    const details = await provider.interactionDetails(req, res);
    if (state.deny)
      return provider.interactionFinished(
        req,
        res,
        { error: 'access_denied', error_description: 'The user declined' },
        { mergeWithLastSubmission: false },
      );
    if (details.prompt.name === 'login')
      return provider.interactionFinished(
        req,
        res,
        { login: { accountId: testAccount } },
        { mergeWithLastSubmission: false },
      );
    const grant =
      (details.grantId ? await provider.Grant.find(details.grantId) : undefined) ??
      new provider.Grant({ accountId: details.session?.accountId ?? testAccount, clientId: details.params.client_id });
    const missing = details.prompt.details;
    if (missing.missingOIDCScope?.length) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
    for (const [resource, scopes] of Object.entries(missing.missingResourceScopes ?? {}))
      grant.addResourceScope(resource, scopes.join(' '));
    const grantId = await grant.save();
    grantIds.push(grantId);
    return provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
  };

  const handle = provider.callback();
  http.on('request', (req, res) => {
    // RFC 6749 §3.3: a request without scope gets the server's default one (oidc-provider would grant nothing).
    const url = new URL(req.url ?? '/', issuer);
    if (url.pathname === '/auth' && !url.searchParams.has('scope')) {
      url.searchParams.set('scope', 'mcp:tools');
      req.url = url.pathname + url.search;
    }
    if (req.url?.startsWith('/interaction/')) {
      interaction(req, res).catch((err: unknown) => {
        if (!res.headersSent) res.writeHead(500).end(String(err));
      });
      return;
    }
    handle(req, res);
  });
  return state;
}

/**
 * What a browser does with an authorization URL: follows the redirects through the authorization server, keeping its
 * cookies, until the server sends it to `stopAt` (the service's callback). Answers that last URL.
 */
export async function followAuthorization(authorizationUrl: string, stopAt: string): Promise<string> {
  const jar = new Map<string, string>();
  let url = authorizationUrl;
  for (let hop = 0; hop < 20; hop++) {
    if (url.startsWith(stopAt)) return url;
    const res = await fetch(url, {
      redirect: 'manual',
      headers: { cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; ') },
    });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const eq = pair!.indexOf('=');
      jar.set(pair!.slice(0, eq), pair!.slice(eq + 1));
    }
    const location = res.headers.get('location');
    if (!location)
      throw new Error(`the authorization server answered ${res.status} at ${url}: ${(await res.text()).slice(0, 500)}`);
    url = new URL(location, url).href;
  }
  throw new Error('too many redirects');
}
