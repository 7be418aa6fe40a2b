import type { FastifyInstance, FastifyReply } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Type from 'typebox';
import { sessionCookieName, sessionTtlMs } from '../../app/identity.js';
import { readCookie } from '../auth.js';
import { requestContext } from '../context.js';
import type { AppDeps } from '../deps.js';
import { RateLimiter } from '../rate-limit.js';
import { ApiError } from '../errors.js';
import { DomainError } from '../../domain/decider.js';

export function sessionCookie(value: string, maxAgeMs: number, secure: boolean): string {
  return [
    `${sessionCookieName}=${value}`,
    'Path=/',
    'HttpOnly',
    'SameSite=Lax',
    `Max-Age=${Math.floor(maxAgeMs / 1000)}`,
    ...(secure ? ['Secure'] : []),
  ].join('; ');
}

export default function authRoutes(fastify: FastifyInstance, deps: AppDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const secure = deps.config.publicUrl.startsWith('https://');
  const limiter = new RateLimiter(20, 20);

  const setSession = (reply: FastifyReply, value: string, maxAge: number) =>
    reply.header('Set-Cookie', sessionCookie(value, maxAge, secure));

  app.get(
    '/api/auth/link/:token',
    {
      attachValidation: true,
      schema: {
        summary: 'Use a single-use sign-in link',
        description:
          'Printed by `svc admin sign-in-link`. Signs in as the instance admin, sets the session cookie and redirects to `/`. ' +
          'An invalid, used or expired link redirects to `/login?error=invalid_link`; too many attempts (20 per minute ' +
          'per client address) to `/login?error=rate_limited`.',
        tags: ['auth'],
        params: Type.Object({ token: Type.String({ minLength: 1, maxLength: 200 }) }, { additionalProperties: false }),
        response: { 302: Type.Null({ description: 'Signed in; redirects to / (refusals to /login?error=<code>)' }) },
      },
    },
    async (request, reply) => {
      // A browser opened this link: every refusal lands on the login page, never as a JSON body.
      try {
        limiter.take(request.ip);
        if (request.validationError) throw new DomainError('invalid_token', 'This sign-in link is invalid');
        const claims = await deps.identity.useSignInLink(request.params.token, requestContext(request));
        setSession(reply, deps.identity.encodeSession(claims), sessionTtlMs);
        return reply.redirect('/', 302);
      } catch (err) {
        if (err instanceof ApiError && err.code === 'rate_limited') {
          for (const [k, v] of Object.entries(err.headers)) reply.header(k, v);
          return reply.redirect('/login?error=rate_limited', 302);
        }
        if (err instanceof DomainError && (err.code === 'invalid_token' || err.code === 'forbidden'))
          return reply.redirect(`/login?error=${err.code === 'forbidden' ? 'deactivated' : 'invalid_link'}`, 302);
        throw err;
      }
    },
  );

  app.post(
    '/api/auth/logout',
    {
      schema: {
        summary: 'Sign out',
        description:
          'Ends the session: its row is deleted, so every copy of the cookie stops working at once, and clears the cookie.',
        tags: ['auth'],
        response: { 204: Type.Null({ description: 'Signed out' }) },
      },
    },
    async (request, reply) => {
      const cookie = readCookie(request, sessionCookieName);
      const claims = cookie ? deps.identity.sessionOfCookie(cookie) : null;
      if (claims) await deps.engine.waitFor(await deps.identity.endSession(claims, requestContext(request)));
      setSession(reply, '', 0);
      return reply.status(204).send(null);
    },
  );
}
