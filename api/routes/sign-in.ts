import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Type from 'typebox';
import { sessionTtlMs } from '../../app/identity.js';
import { loginCookieHeader, loginCookieName, loginTtlMs } from '../../app/login-cookie.js';
import { SignInRefusal, type SignInErrorCode } from '../../domain/sign-in.js';
import { CallbackQuery, LoginParams, LoginQuery, SetupOutputBody, SignInProviderList } from '../../schemas/sign-in.js';
import { readCookie } from '../auth.js';
import { requestContext } from '../context.js';
import type { AppDeps } from '../deps.js';
import { ApiError } from '../errors.js';
import { RateLimiter } from '../rate-limit.js';
import { sessionCookie } from './auth.js';

/** Where every sign-in refusal lands: the web app's login page explains the code (docs/design.md, "Sign-in"). */
export const loginPage = (code: SignInErrorCode) => `/login?error=${code}`;

const redirectNote = { 302: Type.Null({ description: 'A redirect; refusals go to /login?error=<code>' }) };

export default function signInRoutes(fastify: FastifyInstance, deps: AppDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const secure = deps.config.publicUrl.startsWith('https://');
  // Per client address, like the sign-in link route; only starts are counted: a callback needs a started login.
  const limiter = new RateLimiter(20, 20);

  /** The callback URL registered with the provider; from SVC_PUBLIC_URL, else the address the browser used. */
  const callbackUrl = (request: FastifyRequest, provider: string) =>
    `${deps.config.publicUrl || `${request.protocol}://${request.host}`}/api/auth/callback/${encodeURIComponent(provider)}`;

  const refuse = (reply: FastifyReply, request: FastifyRequest, err: unknown) => {
    reply.header('cache-control', 'no-store');
    if (err instanceof SignInRefusal) {
      request.log.info({ code: err.code }, 'sign-in refused');
      return reply.redirect(loginPage(err.code), 302);
    }
    if (err instanceof ApiError && err.code === 'rate_limited') {
      for (const [k, v] of Object.entries(err.headers)) reply.header(k, v);
      return reply.redirect(loginPage('rate_limited'), 302);
    }
    throw err;
  };

  app.get(
    '/api/auth/providers',
    {
      schema: {
        summary: 'The identity providers people can sign in with',
        description: 'The primary provider first, then the others by name.',
        tags: ['auth'],
        response: { 200: SignInProviderList },
      },
    },
    async () => deps.signIn.list(),
  );

  app.get(
    '/api/setup',
    {
      schema: {
        summary: 'What the login page needs on a first start',
        description: 'Whether anyone has signed in yet, the configured providers and whether workspaces are enabled.',
        tags: ['auth'],
        response: { 200: SetupOutputBody },
      },
    },
    async () => ({
      hasUsers: await deps.queries.anyUserExists(),
      providers: deps.signIn.list(),
      workspacesEnabled: deps.config.workspacesEnabled,
    }),
  );

  app.get(
    '/api/auth/login/:provider',
    {
      attachValidation: true,
      schema: {
        summary: 'Start signing in with an identity provider',
        description:
          'Sets the short-lived signed `svc_login` cookie and redirects to the provider. `redirect` is kept only when it ' +
          'is a same-origin path. Rate limited to 20 per minute per client address: beyond it, and for an unknown ' +
          'provider, the browser is sent to `/login?error=<code>`.',
        tags: ['auth'],
        params: LoginParams,
        querystring: LoginQuery,
        response: redirectNote,
      },
    },
    async (request, reply) => {
      try {
        limiter.take(request.ip);
        // An over-long redirect fails validation: it is dropped (the sign-in lands on /), not answered as JSON.
        const redirect = request.validationError ? undefined : request.query.redirect;
        const { provider } = request.params;
        const { location, cookie } = await deps.signIn.start(provider, redirect, callbackUrl(request, provider));
        reply.header('Set-Cookie', loginCookieHeader(cookie, loginTtlMs, secure)).header('cache-control', 'no-store');
        return reply.redirect(location, 302);
      } catch (err) {
        return refuse(reply, request, err);
      }
    },
  );

  app.get(
    '/api/auth/callback/:provider',
    {
      attachValidation: true,
      schema: {
        summary: "The identity provider's return",
        description:
          'Checks the login cookie (signature, expiry, state, provider), redeems the code, applies the allow and admin ' +
          'lists, sets the session cookie and redirects to where the sign-in started. Refusals redirect to ' +
          '`/login?error=<code>`.',
        tags: ['auth'],
        params: LoginParams,
        querystring: CallbackQuery,
        response: redirectNote,
      },
    },
    async (request, reply) => {
      // The login cookie is single-use from the browser's side: cleared whatever the outcome.
      reply.header('Set-Cookie', loginCookieHeader('', 0, secure)).header('cache-control', 'no-store');
      try {
        if (request.validationError) throw new SignInRefusal('invalid_login', 'The sign-in answer is malformed');
        const { provider } = request.params;
        const query = new URLSearchParams(request.url.split('?')[1] ?? '');
        const { claims, redirect } = await deps.signIn.finish(
          provider,
          query,
          readCookie(request, loginCookieName) ?? undefined,
          callbackUrl(request, provider),
          requestContext(request),
        );
        reply.header('Set-Cookie', [
          loginCookieHeader('', 0, secure),
          sessionCookie(deps.identity.encodeSession(claims), sessionTtlMs, secure),
        ]);
        return reply.redirect(redirect, 302);
      } catch (err) {
        return refuse(reply, request, err);
      }
    },
  );
}
