import type { Keys } from '../adapters/keys.js';

export const loginCookieName = 'svc_login';
export const loginCookiePath = '/api/auth';
export const loginTtlMs = 10 * 60 * 1000;

/** What a sign-in carries from its start to its callback, in the browser only (docs/design.md, "Sign-in"). */
export interface LoginState {
  provider: string;
  state: string;
  nonce: string;
  codeVerifier: string;
  redirect: string;
  exp: number;
}

/**
 * `base64url(JSON).HMAC`, signed with the cookie key over `login.` and the payload: the session cookie is signed
 * over `session.` and its payload, so neither passes as the other.
 */
export function encodeLogin(keys: Keys, login: LoginState): string {
  const payload = Buffer.from(JSON.stringify(login)).toString('base64url');
  return `${payload}.${keys.sign('cookie', `login.${payload}`)}`;
}

/** Null for a missing, malformed, tampered or expired value alike. */
export function decodeLogin(keys: Keys, value: string | undefined, now: number): LoginState | null {
  if (!value || value.length > 4096) return null;
  const [payload, signature, extra] = value.split('.');
  if (!payload || !signature || extra !== undefined) return null;
  if (!keys.verify('cookie', `login.${payload}`, signature)) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    return null;
  }
  const l = parsed as Partial<LoginState> | null;
  const strings = [l?.provider, l?.state, l?.nonce, l?.codeVerifier, l?.redirect];
  if (!l || strings.some((s) => typeof s !== 'string') || typeof l.exp !== 'number') return null;
  return l.exp > now ? (l as LoginState) : null;
}

/** The Set-Cookie header: HttpOnly, SameSite=Lax so the identity provider's redirect back carries it. */
export function loginCookieHeader(value: string, maxAgeMs: number, secure: boolean): string {
  return [
    `${loginCookieName}=${value}`,
    `Path=${loginCookiePath}`,
    'HttpOnly',
    'SameSite=Lax',
    `Max-Age=${Math.floor(maxAgeMs / 1000)}`,
    ...(secure ? ['Secure'] : []),
  ].join('; ');
}
