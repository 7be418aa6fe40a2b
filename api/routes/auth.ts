import type { FastifyInstance, FastifyReply } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Type from 'typebox';
import { sessionCookieName, sessionTtlMs } from '../../app/identity.js';
import { readCookie } from '../auth.js';
import { requestContext } from '../context.js';
import type { AppDeps } from '../deps.js';
import { RateLimiter } from '../rate-limit.js';

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
      schema: {
        summary: 'Use a single-use sign-in link',
        description:
          'Printed by `svc admin sign-in-link`. Signs in as the instance admin, sets the session cookie and redirects to `/`.',
        tags: ['auth'],
        params: Type.Object({ token: Type.String({ minLength: 1, maxLength: 200 }) }, { additionalProperties: false }),
        response: { 302: Type.Null({ description: 'Signed in; redirects to /' }) },
      },
    },
    async (request, reply) => {
      limiter.take(request.ip);
      const claims = await deps.identity.useSignInLink(request.params.token, requestContext(request));
      setSession(reply, deps.identity.encodeSession(claims), sessionTtlMs);
      return reply.redirect('/', 302);
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
