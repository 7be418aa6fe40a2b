import { createHash, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local stand-in for GitHub (or a GitHub Enterprise Server, with the API under `/api/v3`): the OAuth app endpoints
 * and the three REST endpoints sign-in reads. It checks what GitHub checks (client credentials, the code's
 * redirect URI, PKCE S256, single-use codes, the bearer token) and pages organisation memberships one per page.
 */
export interface GithubAccount {
  id: number;
  login: string;
  name: string | null;
  emails: { email: string; primary: boolean; verified: boolean }[];
  memberships: { org: string; state: 'active' | 'pending' }[];
}

export interface TestGithub {
  baseUrl: string;
  apiUrl: string;
  accounts: Record<string, GithubAccount>;
  /** Who the next authorization signs in. */
  nextLogin: string;
  /** The `state` query parameters the memberships endpoint was called with. */
  membershipStates: string[];
  close(): Promise<void>;
}

export const githubClientId = 'Iv1.test';
export const githubClientSecret = 'gh-secret';

interface Grant {
  login: string;
  redirectUri: string;
  challenge: string;
}

export async function startGithub(): Promise<TestGithub> {
  const http = createServer();
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  const baseUrl = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  const codes = new Map<string, Grant>();
  const tokens = new Map<string, string>();
  const state: TestGithub = {
    baseUrl,
    apiUrl: `${baseUrl}/api/v3`,
    accounts: {},
    nextLogin: '',
    membershipStates: [],
    async close() {
      http.closeAllConnections();
      await new Promise<void>((r) => http.close(() => r()));
    },
  };

  const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) =>
    res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));

  const readBody = async (req: IncomingMessage) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    return new URLSearchParams(Buffer.concat(chunks).toString());
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', baseUrl);
    if (req.method === 'GET' && url.pathname === '/login/oauth/authorize') {
      const q = url.searchParams;
      if (q.get('client_id') !== githubClientId) return json(res, 400, { error: 'unknown client' });
      if (q.get('code_challenge_method') !== 'S256') return json(res, 400, { error: 'S256 expected' });
      const code = randomBytes(10).toString('hex');
      codes.set(code, {
        login: state.nextLogin,
        redirectUri: q.get('redirect_uri') ?? '',
        challenge: q.get('code_challenge') ?? '',
      });
      const back = new URL(q.get('redirect_uri') ?? '');
      back.searchParams.set('code', code);
      back.searchParams.set('state', q.get('state') ?? '');
      return res.writeHead(302, { location: back.href }).end();
    }
    if (req.method === 'POST' && url.pathname === '/login/oauth/access_token') {
      const b = await readBody(req);
      const grant = codes.get(b.get('code') ?? '');
      codes.delete(b.get('code') ?? '');
      // GitHub answers a bad exchange with 200 and an `error` field.
      if (b.get('client_id') !== githubClientId || b.get('client_secret') !== githubClientSecret)
        return json(res, 200, { error: 'incorrect_client_credentials' });
      if (!grant || grant.redirectUri !== b.get('redirect_uri'))
        return json(res, 200, { error: 'bad_verification_code' });
      const verifier = b.get('code_verifier') ?? '';
      if (createHash('sha256').update(verifier).digest('base64url') !== grant.challenge)
        return json(res, 200, { error: 'bad_verification_code', error_description: 'PKCE' });
      const token = `gho_${randomBytes(12).toString('hex')}`;
      tokens.set(token, grant.login);
      return json(res, 200, { access_token: token, token_type: 'bearer', scope: 'read:user,user:email,read:org' });
    }
    if (req.method === 'GET' && url.pathname.startsWith('/api/v3/')) {
      const login = tokens.get((req.headers.authorization ?? '').replace(/^Bearer /, ''));
      const account = login ? state.accounts[login] : undefined;
      if (!account) return json(res, 401, { message: 'Bad credentials' });
      const path = url.pathname.slice('/api/v3'.length);
      if (path === '/user')
        return json(res, 200, {
          id: account.id,
          login: account.login,
          name: account.name,
          avatar_url: `https://avatars.example/${account.id}`,
        });
      if (path === '/user/emails') return json(res, 200, account.emails);
      if (path === '/user/memberships/orgs') {
        state.membershipStates.push(url.searchParams.get('state') ?? '');
        // GitHub filters by the state asked for; this stand-in answers every membership, so the caller's own
        // check of `state` is what keeps a pending one out.
        const page = Number(url.searchParams.get('page') ?? '1');
        const item = account.memberships[page - 1];
        const next = new URL(url);
        next.searchParams.set('page', String(page + 1));
        const link = page < account.memberships.length ? { link: `<${next.href}>; rel="next"` } : undefined;
        return json(
          res,
          200,
          item ? [{ state: item.state, role: 'member', organization: { login: item.org } }] : [],
          link,
        );
      }
    }
    return json(res, 404, { message: 'Not Found' });
  };

  http.on('request', (req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500).end(String(err));
    });
  });
  return state;
}
