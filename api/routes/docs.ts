import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Type from 'typebox';
import type { OpenApiRegistry } from '../openapi.js';
import { docsFiles, type DocsFile } from './docs-page.js';
import { contentSecurityPolicy } from './web.js';

// The web app's policy with one widening: Swagger UI's style sheet draws its icons as `data:` SVG images. Scripts,
// styles and requests stay on this origin, so the page cannot reach another host (docs/design.md, "API docs").
const docsContentSecurityPolicy = contentSecurityPolicy.replace("img-src 'self'", "img-src 'self' data:");

function send(request: FastifyRequest, reply: FastifyReply, file: DocsFile): FastifyReply {
  void reply.headers({
    'content-type': file.type,
    'cache-control': file.cacheControl,
    etag: file.etag,
    vary: 'Accept-Encoding',
    'content-security-policy': docsContentSecurityPolicy,
    'cross-origin-opener-policy': 'same-origin',
    'x-content-type-options': 'nosniff',
  });
  if (request.headers['if-none-match'] === file.etag) return reply.status(304).send();
  if (file.gzip && /\bgzip\b/.test(String(request.headers['accept-encoding'] ?? '')))
    return reply.header('content-encoding', 'gzip').send(file.gzip);
  return reply.send(file.body);
}

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
    async (request, reply) => send(request, reply, (await docsFiles()).page),
  );

  app.withTypeProvider<TypeBoxTypeProvider>().get(
    '/api/docs/:file',
    {
      schema: {
        summary: "A script or style sheet of the reference page (Swagger UI's, or the page's own)",
        tags: ['docs'],
        params: Type.Object({ file: Type.String({ minLength: 1, maxLength: 100 }) }, { additionalProperties: false }),
        response: text('The file, named by a hash of its content', 'text/javascript'),
      },
    },
    async (request, reply) => {
      const file = (await docsFiles()).files.get(request.params.file);
      return file ? send(request, reply, file) : reply.callNotFound();
    },
  );
}
