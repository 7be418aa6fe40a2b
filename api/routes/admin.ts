import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { CreateSignInLinkInputBody, SignInLinkOutputBody } from '../../schemas/user.js';
import { requestContext } from '../context.js';
import type { AppDeps } from '../deps.js';

export default function adminRoutes(fastify: FastifyInstance, deps: AppDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.post(
    '/api/admin/sign-in-links',
    {
      schema: {
        summary: 'Create a single-use sign-in link for a person',
        description:
          'The person signs in as the user with this email (created on first use) and joins the default workspace. Instance admins only, with a session.',
        tags: ['admin'],
        body: CreateSignInLinkInputBody,
        response: { 201: SignInLinkOutputBody },
      },
    },
    async (request, reply) => {
      const path = await deps.identity.issueSignInLink(
        request.body.email,
        request.body.admin ?? false,
        requestContext(request),
      );
      const base = deps.config.publicUrl || `${request.protocol}://${request.host}`;
      return reply.status(201).send({ url: `${base}${path}` });
    },
  );
}
