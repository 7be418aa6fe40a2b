import type { FastifyInstance } from 'fastify';
import Type from 'typebox';
import type { OpenApiRegistry } from '../openapi.js';
import { docsPage } from './docs-page.js';

const text = (description: string, contentType: string) => ({
  200: Type.String({ description, 'x-content-type': contentType }),
});

export default function docsRoutes(app: FastifyInstance, registry: OpenApiRegistry): void {
  app.get(
    '/api/openapi.json',
    {
      schema: {
        summary: 'This OpenAPI 3.1 document (JSON)',
        tags: ['docs'],
        response: text('OpenAPI document', 'application/json'),
      },
    },
    async (_request, reply) =>
      reply
        .type('application/json; charset=utf-8')
        .serializer((s: string) => s)
        .send(registry.asJson()),
  );

  app.get(
    '/api/openapi.yaml',
    {
      schema: {
        summary: 'This OpenAPI 3.1 document (YAML)',
        tags: ['docs'],
        response: text('OpenAPI document', 'application/yaml'),
      },
    },
    async (_request, reply) =>
      reply
        .type('application/yaml; charset=utf-8')
        .serializer((s: string) => s)
        .send(registry.asYaml()),
  );

  app.get(
    '/api/docs',
    {
      schema: { summary: 'Interactive API reference (HTML)', tags: ['docs'], response: text('HTML page', 'text/html') },
    },
    async (_request, reply) =>
      reply
        .type('text/html; charset=utf-8')
        .serializer((s: string) => s)
        .send(docsPage),
  );
}
