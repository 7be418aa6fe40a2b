import * as client from 'openid-client';
import { decideOidc, type OidcProviderConfig } from '../../domain/sign-in.js';
import { errorMessage } from '../../domain/error-message.js';
import {
  ProviderFailure,
  stringClaim,
  type LoginChecks,
  type ProviderAccount,
  type SignInProtocol,
} from './protocol.js';

/**
 * OpenID Connect through `openid-client`: discovery, PKCE (S256), state and nonce, and the ID token's signature,
 * issuer, audience and lifetime are all its work (docs/design.md, "Sign-in").
 */
export class OidcSignIn implements SignInProtocol {
  private discovered: Promise<client.Configuration> | null = null;

  constructor(private readonly cfg: OidcProviderConfig) {}

  /** Discovered on first use and kept; a failed discovery is tried again at the next sign-in. */
  private configuration(): Promise<client.Configuration> {
    if (!this.discovered) {
      const { issuer, clientId, clientSecret } = this.cfg;
      // http is accepted at start only for a loopback issuer (app/config-file.ts).
      const insecure: { execute?: Array<(c: client.Configuration) => void> } = issuer.startsWith('http://')
        ? { execute: [client.allowInsecureRequests] }
        : {};
      this.discovered = client
        .discovery(new URL(issuer), clientId, clientSecret ?? undefined, client.None(), { ...insecure, timeout: 10 })
        .then((found) => {
          if (!clientSecret) return found;
          // The secret goes in the body when the provider says it takes it there, else as Basic (the default of
          // RFC 8414 when a provider names no method).
          const methods = found.serverMetadata().token_endpoint_auth_methods_supported;
          const auth = methods?.includes('client_secret_post')
            ? client.ClientSecretPost(clientSecret)
            : client.ClientSecretBasic(clientSecret);
          const config = new client.Configuration(found.serverMetadata(), clientId, clientSecret, auth);
          if (insecure.execute) client.allowInsecureRequests(config);
          config.timeout = 10;
          return config;
        })
        .catch((err: unknown) => {
          this.discovered = null;
          throw new ProviderFailure(`discovery of ${issuer} failed: ${errorMessage(err)}`);
        });
    }
    return this.discovered;
  }

  async authorizationUrl(redirectUri: string, checks: LoginChecks): Promise<URL> {
    const config = await this.configuration();
    return client.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri,
      scope: this.cfg.scopes.join(' '),
      state: checks.state,
      nonce: checks.nonce,
      code_challenge: await client.calculatePKCECodeChallenge(checks.codeVerifier),
      code_challenge_method: 'S256',
    });
  }

  async redeem(redirectUri: string, query: URLSearchParams, checks: LoginChecks): Promise<ProviderAccount> {
    const config = await this.configuration();
    let tokens: Awaited<ReturnType<typeof client.authorizationCodeGrant>>;
    try {
      tokens = await client.authorizationCodeGrant(config, new URL(`${redirectUri}?${query.toString()}`), {
        pkceCodeVerifier: checks.codeVerifier,
        expectedState: checks.state,
        expectedNonce: checks.nonce,
        idTokenExpected: true,
      });
    } catch (err) {
      throw new ProviderFailure(errorMessage(err));
    }
    const idToken = tokens.claims();
    if (!idToken) throw new ProviderFailure('the provider returned no ID token');
    // Many providers put profile claims and groups in the userinfo answer only; the ID token's subject must match.
    let info: Record<string, unknown> = {};
    if (config.serverMetadata().userinfo_endpoint) {
      try {
        info = { ...(await client.fetchUserInfo(config, tokens.access_token, idToken.sub)) };
      } catch (err) {
        throw new ProviderFailure(`userinfo: ${errorMessage(err)}`);
      }
    }
    const claim = (name: string): unknown => info[name] ?? idToken[name];
    const groups = groupsOf(claim('groups'));
    const { allowed, isAdmin } = decideOidc(this.cfg, groups);
    return {
      issuer: idToken.iss,
      subject: idToken.sub,
      profile: {
        email: stringClaim(claim('email'))?.toLowerCase() ?? null,
        name: stringClaim(claim('name')) ?? stringClaim(claim('preferred_username')),
        picture: stringClaim(claim('picture')),
      },
      emailVerified: claim('email_verified') === true,
      allowed,
      isAdmin,
    };
  }
}

/** The `groups` claim: a list of names, or one name; anything else counts as no group. */
function groupsOf(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  return Array.isArray(value) ? value.filter((g): g is string => typeof g === 'string') : [];
}
