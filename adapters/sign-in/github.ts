import { createHash } from 'node:crypto';
import { decideGithub, type GithubProviderConfig } from '../../domain/sign-in.js';
import { errorMessage } from '../../domain/error-message.js';
import {
  ProviderFailure,
  stringClaim,
  type LoginChecks,
  type ProviderAccount,
  type SignInProtocol,
} from './protocol.js';

interface GithubUser {
  id: number;
  login: string;
  name?: string | null;
  avatar_url?: string | null;
}
interface GithubEmail {
  email: string;
  primary: boolean;
  verified: boolean;
}
interface GithubMembership {
  state: string;
  organization?: { login?: string };
}

/** Pages of organisation memberships read at most: 1000 organisations. */
const maxPages = 10;

/**
 * GitHub's OAuth app flow and REST API, at the configured `baseUrl` and `apiUrl` (GitHub Enterprise Server, or a
 * local stand-in in the tests). GitHub is not OpenID: the state is checked by the caller, PKCE is sent all the same,
 * and the identity is the numeric user id under the base URL (docs/design.md, "Sign-in").
 */
export class GithubSignIn implements SignInProtocol {
  constructor(private readonly cfg: GithubProviderConfig) {}

  authorizationUrl(redirectUri: string, checks: LoginChecks): Promise<URL> {
    const url = new URL(`${this.cfg.baseUrl}/login/oauth/authorize`);
    url.search = new URLSearchParams({
      client_id: this.cfg.clientId,
      redirect_uri: redirectUri,
      scope: this.needsOrganizations() ? 'read:user user:email read:org' : 'read:user user:email',
      state: checks.state,
      code_challenge: createHash('sha256').update(checks.codeVerifier).digest('base64url'),
      code_challenge_method: 'S256',
      allow_signup: 'false',
    }).toString();
    return Promise.resolve(url);
  }

  async redeem(redirectUri: string, query: URLSearchParams, checks: LoginChecks): Promise<ProviderAccount> {
    const error = query.get('error');
    if (error) throw new ProviderFailure(`${error}: ${query.get('error_description') ?? ''}`);
    const code = query.get('code');
    if (!code) throw new ProviderFailure('the callback carries no code');
    const token = await this.exchange(code, redirectUri, checks.codeVerifier);
    const user = await this.api<GithubUser>(token, '/user');
    if (typeof user.id !== 'number' || typeof user.login !== 'string') throw new ProviderFailure('unexpected /user');
    const emails = await this.api<GithubEmail[]>(token, '/user/emails');
    const primary = Array.isArray(emails) ? emails.find((e) => e.primary) : undefined;
    const orgs = this.needsOrganizations() ? await this.activeOrganizations(token) : [];
    const { allowed, isAdmin } = decideGithub(this.cfg, user.login, orgs);
    return {
      issuer: this.cfg.baseUrl,
      subject: String(user.id),
      profile: {
        email: stringClaim(primary?.email)?.toLowerCase() ?? null,
        name: stringClaim(user.name) ?? user.login,
        picture: stringClaim(user.avatar_url),
      },
      emailVerified: primary?.verified === true,
      allowed,
      isAdmin,
    };
  }

  private needsOrganizations(): boolean {
    return this.cfg.allowedOrganizations.length + this.cfg.adminOrganizations.length > 0;
  }

  private async exchange(code: string, redirectUri: string, codeVerifier: string): Promise<string> {
    const body = await this.request<{ access_token?: string; error?: string; error_description?: string }>(
      `${this.cfg.baseUrl}/login/oauth/access_token`,
      {
        method: 'POST',
        headers: { accept: 'application/json', 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          client_id: this.cfg.clientId,
          client_secret: this.cfg.clientSecret,
          code,
          redirect_uri: redirectUri,
          code_verifier: codeVerifier,
        }).toString(),
      },
    );
    if (!body.access_token) throw new ProviderFailure(`token: ${body.error ?? 'no access token'}`);
    return body.access_token;
  }

  /** Organisations where the membership is active: a pending invitation is no membership. */
  private async activeOrganizations(token: string): Promise<string[]> {
    const out: string[] = [];
    let next: string | null = `${this.cfg.apiUrl}/user/memberships/orgs?state=active&per_page=100`;
    for (let page = 0; next && page < maxPages; page++) {
      const { body, link } = await this.fetchJson<GithubMembership[]>(next, { headers: this.apiHeaders(token) });
      if (!Array.isArray(body)) throw new ProviderFailure('unexpected /user/memberships/orgs');
      for (const m of body) if (m.state === 'active' && m.organization?.login) out.push(m.organization.login);
      next = nextLink(link, this.cfg.apiUrl);
    }
    return out;
  }

  private apiHeaders(token: string): Record<string, string> {
    return {
      accept: 'application/vnd.github+json',
      authorization: `Bearer ${token}`,
      'x-github-api-version': '2022-11-28',
      'user-agent': 'svc',
    };
  }

  private api<T>(token: string, path: string): Promise<T> {
    return this.request<T>(`${this.cfg.apiUrl}${path}`, { headers: this.apiHeaders(token) });
  }

  private async request<T>(url: string, init: RequestInit): Promise<T> {
    return (await this.fetchJson<T>(url, init)).body;
  }

  private async fetchJson<T>(url: string, init: RequestInit): Promise<{ body: T; link: string | null }> {
    let res: Response;
    try {
      res = await fetch(url, { ...init, redirect: 'error', signal: AbortSignal.timeout(10_000) });
    } catch (err) {
      throw new ProviderFailure(`${new URL(url).pathname}: ${errorMessage(err)}`);
    }
    if (!res.ok) {
      await res.body?.cancel();
      throw new ProviderFailure(`${new URL(url).pathname} answered ${res.status}`);
    }
    try {
      return { body: (await res.json()) as T, link: res.headers.get('link') };
    } catch {
      throw new ProviderFailure(`${new URL(url).pathname} answered no JSON`);
    }
  }
}

/** The `rel="next"` page of a Link header, followed only on the API's own origin. */
function nextLink(link: string | null, apiUrl: string): string | null {
  const m = link ? /<([^>]+)>;\s*rel="next"/.exec(link) : null;
  if (!m?.[1]) return null;
  try {
    return new URL(m[1]).origin === new URL(apiUrl).origin ? m[1] : null;
  } catch {
    return null;
  }
}
