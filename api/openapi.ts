import type { FastifyInstance, RouteOptions } from 'fastify';
import { createRequire } from 'node:module';
import type * as Yaml from 'yaml';
import { ErrorBody } from '../schemas/common.js';
import { Limits } from '../schemas/job.js';
import { ruleFor } from './auth.js';

interface CollectedRoute {
  method: string;
  url: string;
  schema: Record<string, unknown>;
}

type JsonObject = Record<string, unknown>;

/** Replaces every schema that has an `$id` by a reference to a component of that name, collecting the components. */
function hoist(schema: unknown, components: Map<string, unknown>): unknown {
  if (Array.isArray(schema)) return schema.map((s) => hoist(s, components));
  if (schema === null || typeof schema !== 'object') return schema;
  const obj = schema as JsonObject;
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(obj)) if (k !== '$id') out[k] = hoist(v, components);
  const id = obj.$id;
  if (typeof id === 'string') {
    if (!components.has(id)) components.set(id, out);
    return { $ref: `#/components/schemas/${id}` };
  }
  return out;
}

const toPath = (url: string) => url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');

function parameters(
  schema: JsonObject | undefined,
  where: 'path' | 'query',
  components: Map<string, unknown>,
): JsonObject[] {
  if (!schema) return [];
  const props = (schema.properties ?? {}) as Record<string, JsonObject>;
  const required = new Set((schema.required ?? []) as string[]);
  return Object.entries(props).map(([name, s]) => {
    const { description, ...rest } = s;
    return {
      name,
      in: where,
      required: where === 'path' || required.has(name),
      ...(typeof description === 'string' ? { description } : {}),
      schema: hoist(rest, components),
    };
  });
}

/** Builds the OpenAPI 3.1 document from the routes the app registered, so the document cannot drift from them. */
export function buildOpenApiDocument(routes: CollectedRoute[], version: string): JsonObject {
  const components = new Map<string, unknown>();
  // The error body and the limits record are published even where no route of this version names them.
  for (const s of [ErrorBody, Limits]) hoist(s, components);
  const paths: Record<string, JsonObject> = {};
  const sorted = [...routes].sort((a, b) =>
    a.url === b.url ? a.method.localeCompare(b.method) : a.url.localeCompare(b.url),
  );
  for (const r of sorted) {
    if (!r.url.startsWith('/api/') && !r.url.startsWith('/hooks/')) continue;
    const rule = ruleFor(r.method, r.url);
    const s = r.schema;
    const responses: JsonObject = {};
    for (const [status, body] of Object.entries((s.response ?? {}) as JsonObject)) {
      const b = body as JsonObject;
      responses[status] =
        status === '204'
          ? { description: String(b.description ?? 'No content') }
          : {
              description: String(b.description ?? 'Success'),
              content: {
                [String(b['x-content-type'] ?? 'application/json')]: { schema: hoist(stripMeta(b), components) },
              },
            };
    }
    responses.default = {
      description: 'Error: code, message, fields, details and requestId (ErrorBody)',
      content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorBody' } } },
    };
    const op: JsonObject = {
      operationId: operationId(r.method, r.url),
      summary: s.summary,
      ...(s.description ? { description: s.description } : {}),
      tags: s.tags ?? [],
      'x-access': { role: rule.access, session: rule.session, ...(rule.token ? { token: true } : {}) },
      security:
        rule.access === 'public'
          ? []
          : rule.session
            ? [{ cookieAuth: [] }]
            : rule.token
              ? [{ bearerAuth: [] }]
              : [{ bearerAuth: [] }, { cookieAuth: [] }],
      parameters: [
        ...parameters(s.params as JsonObject | undefined, 'path', components),
        ...parameters(s.querystring as JsonObject | undefined, 'query', components),
      ],
      ...(s.body
        ? { requestBody: { required: true, content: { 'application/json': { schema: hoist(s.body, components) } } } }
        : {}),
      responses,
    };
    (paths[toPath(r.url)] ??= {})[r.method.toLowerCase()] = op;
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'svc: self-hosted job automation',
      version,
      description:
        'Jobs are natural-language instructions run in sandboxes by an agent or a proven script. Authenticate with a session cookie or `Authorization: Bearer svc_...`.',
    },
    servers: [{ url: '/' }],
    paths,
    components: {
      schemas: Object.fromEntries([...components.entries()].sort(([a], [b]) => a.localeCompare(b))),
      securitySchemes: {
        bearerAuth: { type: 'http', scheme: 'bearer', description: 'An API token (svc_...)' },
        cookieAuth: { type: 'apiKey', in: 'cookie', name: 'svc_session' },
      },
    },
  };
}

function stripMeta(schema: JsonObject): JsonObject {
  const { 'x-content-type': _ct, ...rest } = schema;
  return rest;
}

function operationId(method: string, url: string): string {
  const words = url
    .replace(/^\/api\//, '')
    .split('/')
    .map((p) => (p.startsWith(':') ? `by-${p.slice(1)}` : p))
    .join('-')
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean);
  return [method.toLowerCase(), ...words].map((w, i) => (i === 0 ? w : w[0]!.toUpperCase() + w.slice(1))).join('');
}

/** Collects routes as they are registered; the document is built once, after the app is ready. */
export class OpenApiRegistry {
  private readonly routes: CollectedRoute[] = [];
  private json: string | null = null;
  private yaml: string | null = null;

  constructor(private readonly version: string) {}

  attach(app: FastifyInstance): void {
    app.addHook('onRoute', (route: RouteOptions) => {
      const methods = Array.isArray(route.method) ? route.method : [route.method];
      for (const method of methods) {
        if (method === 'HEAD') continue;
        this.routes.push({ method, url: route.url, schema: (route.schema ?? {}) as Record<string, unknown> });
      }
    });
  }

  document(): JsonObject {
    return buildOpenApiDocument(this.routes, this.version);
  }

  asJson(): string {
    return (this.json ??= JSON.stringify(this.document(), null, 2) + '\n');
  }

  asYaml(): string {
    // yaml is loaded when the YAML document is first asked for, not at start (docs/performance.md, "Configuration
    // parsers at first use (2026-11-27)"); its CommonJS build keeps this synchronous.
    return (this.yaml ??= (createRequire(import.meta.url)('yaml') as typeof Yaml).stringify(this.document(), {
      aliasDuplicateObjects: false,
    }));
  }
}
