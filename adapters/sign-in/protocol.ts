import type { Profile } from '../../domain/user.js';

/** The secrets one sign-in keeps between its start and its callback (in the signed login cookie). */
export interface LoginChecks {
  state: string;
  nonce: string;
  codeVerifier: string;
}

/** Who the identity provider says signed in, before the allow lists are applied. */
export interface ProviderAccount {
  issuer: string;
  subject: string;
  profile: Profile;
  emailVerified: boolean;
  allowed: boolean;
  isAdmin: boolean;
}

/**
 * The protocol side of one configured provider: where to send the browser, and what its answer says. Throws
 * `ProviderFailure` when the provider refuses or cannot be reached.
 */
export interface SignInProtocol {
  authorizationUrl(redirectUri: string, checks: LoginChecks): Promise<URL>;
  /** `query`: the callback's query string as the provider sent it. */
  redeem(redirectUri: string, query: URLSearchParams, checks: LoginChecks): Promise<ProviderAccount>;
}

/** The provider answered an error, or something in its answer failed a check. */
export class ProviderFailure extends Error {}

/** A string claim, or null when it is missing or not a string. */
export const stringClaim = (v: unknown): string | null => (typeof v === 'string' && v.length > 0 ? v : null);
