import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Type from 'typebox';
import type { SecretDoc } from '../../projections/secrets.js';
import { IdParams, listQueryProperties } from '../../schemas/common.js';
import {
  CreateSecretInputBody,
  JobSecret,
  SecretDto,
  SecretIdOutputBody,
  SecretListEnvelope,
  SecretValueBody,
} from '../../schemas/secret.js';
import { principalOf } from '../auth.js';
import { requestContext } from '../context.js';
import type { AppDeps } from '../deps.js';
import { parseListQuery } from '../list-query.js';

const toDto = (d: SecretDoc) => ({ id: d._id, name: d.name, createdAt: d.createdAt, updatedAt: d.updatedAt });

/** Secrets: values are accepted, sealed and never returned (docs/security.md). */
export default function secretRoutes(fastify: FastifyInstance, deps: AppDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.get(
    '/api/secrets',
    {
      schema: {
        summary: 'List secrets (names only)',
        tags: ['secrets'],
        querystring: Type.Object({ ...listQueryProperties }, { additionalProperties: false }),
        response: { 200: SecretListEnvelope },
      },
    },
    async (request) => {
      const list = parseListQuery(request.query, {
        sortKeys: { name: 'name', createdAt: 'createdAt', updatedAt: 'updatedAt' },
        defaultSort: 'name',
        searchFields: ['name'],
      });
      const { items, total } = await deps.queries.forPrincipal(principalOf(request)).secrets.list(list);
      return { items: items.map(toDto), page: list.page, pageSize: list.pageSize, total };
    },
  );

  app.post(
    '/api/secrets',
    {
      schema: {
        summary: 'Create a secret',
        description:
          'The value is encrypted at rest and never returned. Reference it in configuration as {{secret:NAME}}.',
        tags: ['secrets'],
        body: CreateSecretInputBody,
        response: { 201: SecretIdOutputBody },
      },
    },
    async (request, reply) => {
      const p = principalOf(request);
      const id = await deps.secrets.create(
        requestContext(request),
        p.workspaceId,
        request.body.name,
        request.body.value,
      );
      return reply.status(201).send({ id });
    },
  );

  app.put(
    '/api/secrets/:id',
    {
      schema: {
        summary: "Replace a secret's value",
        tags: ['secrets'],
        params: IdParams,
        body: SecretValueBody,
        response: { 200: SecretDto },
      },
    },
    async (request) => {
      const p = principalOf(request);
      await deps.secrets.change(requestContext(request), p.workspaceId, request.params.id, request.body.value);
      return toDto(await deps.queries.forPrincipal(p).secrets.get(request.params.id));
    },
  );

  app.delete(
    '/api/secrets/:id',
    {
      schema: {
        summary: 'Delete a secret',
        description: 'Jobs that mapped it lose the variable from their next run.',
        tags: ['secrets'],
        params: IdParams,
        response: { 204: Type.Null() },
      },
    },
    async (request, reply) => {
      await deps.secrets.delete(requestContext(request), principalOf(request).workspaceId, request.params.id);
      return reply.status(204).send(null);
    },
  );

  app.get(
    '/api/jobs/:id/secrets',
    {
      schema: {
        summary: "A job's secrets as environment variables",
        tags: ['secrets'],
        params: IdParams,
        response: { 200: Type.Array(JobSecret) },
      },
    },
    async (request) => {
      const p = principalOf(request);
      await deps.queries.forPrincipal(p).jobs.get(request.params.id);
      return deps.secrets.mappings(p.workspaceId, request.params.id);
    },
  );

  app.put(
    '/api/jobs/:id/secrets',
    {
      schema: {
        summary: "Replace a job's secret mappings",
        description: 'Variables named SVC_* or proxy variables are dropped when a run starts.',
        tags: ['secrets'],
        params: IdParams,
        body: Type.Array(JobSecret, { maxItems: 100 }),
        response: { 200: Type.Array(JobSecret) },
      },
    },
    async (request) => {
      const p = principalOf(request);
      await deps.queries.forPrincipal(p).jobs.get(request.params.id);
      await deps.secrets.setMappings(
        requestContext(request),
        p.workspaceId,
        request.params.id,
        request.body.map(({ secretId, envName }) => ({ secretId, envName })),
      );
      return deps.secrets.mappings(p.workspaceId, request.params.id);
    },
  );
}
