import type { FastifyInstance } from 'fastify';
import Type from 'typebox';
import type { OpenApiRegistry } from '../openapi.js';
import { docsPage } from './docs-page.js';

const text = (description: string, contentType: string) => ({ 200: Type.String({ description, 'x-content-type': contentType }) });

export default function docsRoutes(app: FastifyInstance, registry: OpenApiRegistry): void {
  app.get('/api/openapi.json', {
    schema: { summary: 'This OpenAPI 3.1 document (JSON)', tags: ['docs'], response: text('OpenAPI document', 'application/json') },
  }, async (_request, reply) => reply.type('application/json; charset=utf-8').serializer((s: string) => s).send(registry.asJson()));

  app.get('/api/openapi.yaml', {
    schema: { summary: 'This OpenAPI 3.1 document (YAML)', tags: ['docs'], response: text('OpenAPI document', 'application/yaml') },
  }, async (_request, reply) => reply.type('application/yaml; charset=utf-8').serializer((s: string) => s).send(registry.asYaml()));

  app.get('/api/docs', {
    schema: { summary: 'Interactive API reference (HTML)', tags: ['docs'], response: text('HTML page', 'text/html') },
  }, async (_request, reply) => reply.type('text/html; charset=utf-8').serializer((s: string) => s).send(docsPage));

  // Until the web UI lands, the root says where things are, so a sign-in link does not end on a 404.
  app.get('/', async (request, reply) => {
    const who = request.principal ? 'You are signed in.' : 'You are not signed in: run <code>svc admin sign-in-link</code>.';
    return reply.type('text/html; charset=utf-8').send(`<!doctype html><meta charset="utf-8"><title>svc</title><body style="font:16px system-ui;margin:40px"><h1>svc</h1><p>${who}</p><p><a href="/api/docs">API reference</a> &middot; <a href="/api/users/me">/api/users/me</a> &middot; <a href="/api/jobs">/api/jobs</a></p></body>`);
  });
}
