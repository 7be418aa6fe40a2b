/**
 * Sign-in providers as the operator configures them, and the allow and admin lists applied at every sign-in
 * (docs/design.md, "Sign-in"). Pure: the protocol work lives in adapters/sign-in/.
 */

interface ProviderCommon {
  /** Lowercase letters, digits and single hyphens; part of the callback URL. */
  id: string;
  name: string;
  primary: boolean;
  icon: string | null;
}

export interface OidcProviderConfig extends ProviderCommon {
  type: 'oidc';
  issuer: string;
  clientId: string;
  /** Null for a public client (PKCE only). */
  clientSecret: string | null;
  scopes: string[];
  /** Empty: anyone the identity provider signs in is allowed. */
  allowedGroups: string[];
  adminGroups: string[];
}

export interface GithubProviderConfig extends ProviderCommon {
  type: 'github';
  clientId: string;
  clientSecret: string;
  allowedUsers: string[];
  allowedOrganizations: string[];
  adminUsers: string[];
  adminOrganizations: string[];
  /** Where people sign in (github.com, or a GitHub Enterprise Server); also the issuer of the identities. */
  baseUrl: string;
  apiUrl: string;
}

export type SignInProviderConfig = OidcProviderConfig | GithubProviderConfig;

export const providerIdPattern = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;

/** Why a sign-in ended on the login page: the `error` query parameter of `/login`. */
export type SignInErrorCode =
  | 'not_found'
  | 'not_allowed'
  | 'deactivated'
  | 'invalid_login'
  | 'provider_mismatch'
  | 'provider_error'
  | 'rate_limited'
  | 'invalid_link';

/** A refusal that sends the browser back to the login page with a code it can explain. */
export class SignInRefusal extends Error {
  constructor(
    readonly code: SignInErrorCode,
    message: string,
  ) {
    super(message);
  }
}

export const notAllowedMessage = 'Your account is not allowed to use the service';

export interface Decision {
  allowed: boolean;
  isAdmin: boolean;
}

const overlaps = (have: readonly string[], wanted: readonly string[]) => {
  const set = new Set(have);
  return wanted.some((w) => set.has(w));
};

/** OIDC: the `groups` claim against the lists. An admin group also lets its members in. */
export function decideOidc(cfg: Pick<OidcProviderConfig, 'allowedGroups' | 'adminGroups'>, groups: string[]): Decision {
  const isAdmin = overlaps(groups, cfg.adminGroups);
  const allowed = isAdmin || cfg.allowedGroups.length === 0 || overlaps(groups, cfg.allowedGroups);
  return { allowed, isAdmin };
}

/**
 * GitHub: logins compare without case (GitHub's own rule); `activeOrganizations` holds only memberships whose
 * state is active, so a pending invitation grants nothing.
 */
export function decideGithub(
  cfg: Pick<GithubProviderConfig, 'allowedUsers' | 'allowedOrganizations' | 'adminUsers' | 'adminOrganizations'>,
  login: string,
  activeOrganizations: string[],
): Decision {
  const lower = (xs: readonly string[]) => xs.map((x) => x.toLowerCase());
  const me = [login.toLowerCase()];
  const orgs = lower(activeOrganizations);
  const isAdmin = overlaps(me, lower(cfg.adminUsers)) || overlaps(orgs, lower(cfg.adminOrganizations));
  const allowed = isAdmin || overlaps(me, lower(cfg.allowedUsers)) || overlaps(orgs, lower(cfg.allowedOrganizations));
  return { allowed, isAdmin };
}

/** Whether a GitHub provider names anyone at all; one that does not would let every GitHub account in. */
export function githubListsSomeone(
  cfg: Pick<GithubProviderConfig, 'allowedUsers' | 'allowedOrganizations' | 'adminUsers' | 'adminOrganizations'>,
): boolean {
  return (
    cfg.allowedUsers.length + cfg.allowedOrganizations.length + cfg.adminUsers.length + cfg.adminOrganizations.length >
    0
  );
}

/**
 * Where the browser goes after signing in: a same-origin path, else `/`. Refused: anything not starting with one
 * `/` (absolute URLs, `//host`, `/\host` which browsers read as `//host`), control characters and over-long values.
 */
export function safeRedirect(value: string | null | undefined): string {
  if (!value || value.length > 2000) return '/';
  if (!value.startsWith('/') || value.startsWith('//') || value.startsWith('/\\')) return '/';
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f\\]/.test(value)) return '/';
  return value;
}

/** The invite token of a redirect to `/invite/<token>`, which the sign-in hands on to invite acceptance. */
export function inviteTokenOf(redirect: string): string | undefined {
  const m = /^\/invite\/([A-Za-z0-9._~-]{1,200})$/.exec(redirect);
  return m?.[1];
}
