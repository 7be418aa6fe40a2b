import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';

/**
 * A real OpenID provider on loopback (`oidc-provider`) for sign-in tests: one confidential client whose redirect URIs
 * are set once the service's address is known, PKCE required, and a `groups` scope. The login and consent screens
 * are replaced by a handler that signs in `nextAccount` and grants what was asked, or denies when told to.
 */
export interface TestAccount {
  email: string;
  name: string;
  groups: string[];
}

export interface TestIssuer {
  issuer: string;
  accounts: Record<string, TestAccount>;
  /** Who the next interaction signs in. */
  nextAccount: string;
  /** The next interactions answer `access_denied`. */
  deny: boolean;
  /** Registers the client `svc` (secret `svc-secret`) with these redirect URIs and starts answering. */
  register(redirectUris: string[]): void;
  close(): Promise<void>;
}

export const clientId = 'svc';
export const clientSecret = 'svc-secret';

export async function startIssuer(): Promise<TestIssuer> {
  const http = createServer();
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  const issuer = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  const key = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' });
  let provider: Provider | null = null;

  const state: TestIssuer = {
    issuer,
    accounts: {},
    nextAccount: '',
    deny: false,
    register(redirectUris) {
      provider = new Provider(issuer, {
        jwks: { keys: [{ ...key, kid: 'test-key', use: 'sig', alg: 'RS256' }] },
        cookies: { keys: [randomBytes(16).toString('hex')] },
        clients: [
          {
            client_id: clientId,
            client_secret: clientSecret,
            redirect_uris: redirectUris,
            token_endpoint_auth_method: 'client_secret_post',
          },
        ],
        pkce: { required: () => true },
        claims: {
          openid: ['sub'],
          email: ['email', 'email_verified'],
          profile: ['name', 'picture'],
          groups: ['groups'],
        },
        findAccount: async (_ctx: unknown, sub: string) => {
          const a = state.accounts[sub];
          if (!a) return undefined;
          return {
            accountId: sub,
            claims: async () => ({ sub, email: a.email, email_verified: true, name: a.name, groups: a.groups }),
          };
        },
        interactions: { url: async (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
        features: { devInteractions: { enabled: false } },
      });
      provider.on('server_error', (...args: unknown[]) => console.error('OpenID provider error', args[1]));
    },
    async close() {
      http.closeAllConnections();
      await new Promise<void>((r) => http.close(() => r()));
    },
  };

  const interaction = async (p: Provider, req: IncomingMessage, res: ServerResponse) => {
    const details = await p.interactionDetails(req, res);
    if (state.deny)
      return p.interactionFinished(
        req,
        res,
        { error: 'access_denied', error_description: 'The user declined' },
        { mergeWithLastSubmission: false },
      );
    if (details.prompt.name === 'login')
      return p.interactionFinished(
        req,
        res,
        { login: { accountId: state.nextAccount } },
        { mergeWithLastSubmission: false },
      );
    const grant = new p.Grant({ accountId: details.session?.accountId ?? state.nextAccount, clientId });
    const missing = details.prompt.details;
    if (missing.missingOIDCScope?.length) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
    const grantId = await grant.save();
    return p.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
  };

  http.on('request', (req, res) => {
    const p = provider;
    if (!p) return void res.writeHead(503).end('no client registered yet');
    if (req.url?.startsWith('/interaction/')) {
      interaction(p, req, res).catch((err: unknown) => {
        if (!res.headersSent) res.writeHead(500).end(String(err));
      });
      return;
    }
    p.callback()(req, res);
  });
  return state;
}
