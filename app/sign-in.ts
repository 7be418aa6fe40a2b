import { timingSafeEqual } from 'node:crypto';
import * as client from 'openid-client';
import type { Keys } from '../adapters/keys.js';
import { ProviderFailure, type SignInProtocol } from '../adapters/sign-in/index.js';
import { DomainError } from '../domain/decider.js';
import { errorMessage } from '../domain/error-message.js';
import {
  inviteTokenOf,
  notAllowedMessage,
  safeRedirect,
  SignInRefusal,
  type SignInProviderConfig,
} from '../domain/sign-in.js';
import type { CommandContext } from './commands.js';
import type { Identity, SessionClaims } from './identity.js';
import { decodeLogin, encodeLogin, loginTtlMs } from './login-cookie.js';

export interface ProviderView {
  id: string;
  name: string;
  type: 'oidc' | 'github';
  primary: boolean;
  icon?: string;
}

export interface ConfiguredProvider {
  config: SignInProviderConfig;
  protocol: SignInProtocol;
}

/** Logs problems the browser only sees as an error code: the operator needs the provider's own words. */
export type SignInLog = (provider: string, code: string, detail: string) => void;

const sameText = (a: string, b: string) => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};

/**
 * Sign-in with the configured identity providers: the start (login cookie, redirect to the provider) and the
 * callback (checks, code redemption, allow and admin lists, then `Identity.signIn`). Every refusal is a
 * `SignInRefusal` whose code the login page explains (docs/design.md, "Sign-in").
 */
export class SignIn {
  private readonly byId: Map<string, ConfiguredProvider>;

  constructor(
    providers: ConfiguredProvider[],
    private readonly identity: Identity,
    private readonly keys: Keys,
    private readonly log: SignInLog = () => {},
    private readonly clock: () => number = Date.now,
  ) {
    this.byId = new Map(providers.map((p) => [p.config.id, p]));
  }

  /** The primary provider first, then the others by name. */
  list(): ProviderView[] {
    return [...this.byId.values()]
      .map(({ config: c }) => ({
        id: c.id,
        name: c.name,
        type: c.type,
        primary: c.primary,
        ...(c.icon ? { icon: c.icon } : {}),
      }))
      .sort(
        (a, b) => Number(b.primary) - Number(a.primary) || a.name.localeCompare(b.name) || a.id.localeCompare(b.id),
      );
  }

  private provider(id: string): ConfiguredProvider {
    const p = this.byId.get(id);
    if (!p) throw new SignInRefusal('not_found', 'There is no such sign-in provider');
    return p;
  }

  /** Answers the provider's authorization URL and the login cookie's value. */
  async start(
    providerId: string,
    redirect: string | undefined,
    redirectUri: string,
  ): Promise<{ location: string; cookie: string }> {
    const { protocol } = this.provider(providerId);
    const checks = {
      state: client.randomState(),
      nonce: client.randomNonce(),
      codeVerifier: client.randomPKCECodeVerifier(),
    };
    let url: URL;
    try {
      url = await protocol.authorizationUrl(redirectUri, checks);
    } catch (err) {
      this.log(providerId, 'provider_error', errorMessage(err));
      throw new SignInRefusal('provider_error', 'The identity provider could not be reached');
    }
    const cookie = encodeLogin(this.keys, {
      provider: providerId,
      ...checks,
      redirect: safeRedirect(redirect),
      exp: this.clock() + loginTtlMs,
    });
    return { location: url.href, cookie };
  }

  /** The callback: answers the session to set and where the browser goes next. */
  async finish(
    providerId: string,
    query: URLSearchParams,
    loginCookie: string | undefined,
    redirectUri: string,
    ctx: CommandContext,
  ): Promise<{ claims: SessionClaims; redirect: string }> {
    const { config, protocol } = this.provider(providerId);
    const login = decodeLogin(this.keys, loginCookie, this.clock());
    if (!login) throw new SignInRefusal('invalid_login', 'The sign-in expired or was tampered with; start again');
    if (login.provider !== providerId)
      throw new SignInRefusal('provider_mismatch', 'The sign-in was started with another provider; start again');
    const error = query.get('error');
    if (error) {
      this.log(providerId, 'provider_error', `${error}: ${query.get('error_description') ?? ''}`);
      throw new SignInRefusal('provider_error', 'The identity provider refused the sign-in');
    }
    if (!sameText(query.get('state') ?? '', login.state))
      throw new SignInRefusal('invalid_login', 'The sign-in expired or was tampered with; start again');

    let account;
    try {
      account = await protocol.redeem(redirectUri, query, login);
    } catch (err) {
      if (!(err instanceof ProviderFailure)) throw err;
      this.log(providerId, 'provider_error', err.message);
      throw new SignInRefusal('provider_error', 'The identity provider refused the sign-in');
    }
    if (!account.allowed) throw new SignInRefusal('not_allowed', notAllowedMessage);

    const inviteToken = inviteTokenOf(login.redirect);
    try {
      const claims = await this.identity.signIn(
        {
          issuer: account.issuer,
          subject: account.subject,
          provider: config.id,
          isAdmin: account.isAdmin,
          profile: account.profile,
          emailVerified: account.emailVerified,
        },
        ctx,
        inviteToken ? { inviteToken } : undefined,
      );
      return { claims, redirect: login.redirect };
    } catch (err) {
      // The user decider refuses a deactivated account's sign-in with `forbidden` (domain/user.ts).
      if (err instanceof DomainError && err.code === 'forbidden')
        throw new SignInRefusal('deactivated', 'This account has been deactivated');
      throw err;
    }
  }
}
