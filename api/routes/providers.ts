import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Type from 'typebox';
import { catalog } from '../../domain/catalog.js';
import type { ModelDoc, ProviderDoc } from '../../projections/providers.js';
import { IdParams, listQueryProperties } from '../../schemas/common.js';
import {
  CatalogEntryDto,
  CreateModelInputBody,
  CreateProviderInputBody,
  CreateProviderOutputBody,
  FakeScriptBody,
  ModelDto,
  ModelListEnvelope,
  ModelsEnabledInputBody,
  ModelsEnabledOutputBody,
  PatchModelInputBody,
  PatchProviderInputBody,
  ProviderDto,
  ProviderListQuery,
  SyncResult,
  TestProviderInputBody,
  TestProviderOutputBody,
} from '../../schemas/provider.js';
import { principalOf } from '../auth.js';
import { requestContext } from '../context.js';
import type { AppDeps } from '../deps.js';
import { parseListQuery } from '../list-query.js';

function toProviderDto(d: ProviderDoc): ProviderDto {
  return {
    id: d._id,
    name: d.name,
    kind: d.kind,
    baseUrl: d.baseUrl,
    hasApiKey: d.apiKeySealed !== null,
    createdAt: d.createdAt,
    syncedAt: d.syncedAt ?? null,
    syncError: d.syncError ?? null,
  };
}

export function toModelDto(d: ModelDoc): ModelDto {
  return {
    id: d._id,
    providerId: d.providerId,
    providerName: d.providerName,
    providerKind: d.providerKind,
    model: d.model,
    label: d.label,
    price: d.price,
    contextWindow: d.contextWindow,
    caps: d.caps,
    enabled: d.enabled,
    synced: d.synced,
    followCatalog: d.followCatalog,
    unlistedAt: d.unlistedAt,
  };
}

const ModelListQuery = Type.Object(
  {
    ...listQueryProperties,
    provider: Type.Optional(Type.String({ maxLength: 100, description: 'Only the models of this provider id' })),
    enabled: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);

/** Providers, their models and the built-in catalog. Members read, admins write (api/access.ts). */
export default function providerRoutes(fastify: FastifyInstance, deps: AppDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.get(
    '/api/providers',
    {
      schema: {
        summary: 'List model providers',
        tags: ['models'],
        querystring: ProviderListQuery,
        response: {
          200: Type.Object(
            { items: Type.Array(ProviderDto), page: Type.Integer(), pageSize: Type.Integer(), total: Type.Integer() },
            { additionalProperties: false },
          ),
        },
      },
    },
    async (request) => {
      const list = parseListQuery(request.query, {
        sortKeys: { name: 'sortName', createdAt: 'createdAt' },
        defaultSort: 'name',
        searchFields: ['name'],
      });
      const { items, total } = await deps.queries.forPrincipal(principalOf(request)).providers.list(list);
      return { items: items.map(toProviderDto), page: list.page, pageSize: list.pageSize, total };
    },
  );

  app.post(
    '/api/providers',
    {
      schema: {
        summary: 'Add a model provider',
        description:
          'The API key is stored encrypted and never returned (only `hasApiKey`). The models are synced at once; a fake provider gets `fake-model`.',
        tags: ['models'],
        body: CreateProviderInputBody,
        response: { 201: CreateProviderOutputBody },
      },
    },
    async (request, reply) => {
      const answer = await deps.providers.create(
        requestContext(request),
        principalOf(request).workspaceId,
        request.body,
      );
      const { id, sync } = answer;
      return reply.status(201).send({ id, sync });
    },
  );

  app.get(
    '/api/providers/:id',
    { schema: { summary: 'Get a provider', tags: ['models'], params: IdParams, response: { 200: ProviderDto } } },
    async (request) =>
      toProviderDto(await deps.queries.forPrincipal(principalOf(request)).providers.get(request.params.id)),
  );

  app.patch(
    '/api/providers/:id',
    {
      schema: {
        summary: 'Change a provider',
        description: 'An empty apiKey removes the key; an empty baseUrl removes the base URL.',
        tags: ['models'],
        params: IdParams,
        body: PatchProviderInputBody,
        response: { 200: ProviderDto },
      },
    },
    async (request) => {
      const p = principalOf(request);
      await deps.providers.update(requestContext(request), p.workspaceId, request.params.id, request.body);
      return toProviderDto(await deps.queries.forPrincipal(p).providers.get(request.params.id));
    },
  );

  app.delete(
    '/api/providers/:id',
    {
      schema: {
        summary: 'Delete a provider and its models',
        description: 'Workspace defaults that pointed at its models are unset.',
        tags: ['models'],
        params: IdParams,
        response: { 204: Type.Null() },
      },
    },
    async (request, reply) => {
      await deps.providers.delete(requestContext(request), principalOf(request).workspaceId, request.params.id);
      return reply.status(204).send(null);
    },
  );

  app.post(
    '/api/providers/:id/sync',
    {
      schema: {
        summary: "Sync a provider's models with its source",
        description:
          "Adds new models, updates catalog-following ones, marks dropped ones unlisted; never deletes. An unreadable source answers `error`, is recorded as the provider's `syncError`, and changes nothing.",
        tags: ['models'],
        params: IdParams,
        response: { 200: SyncResult },
      },
    },
    async (request) =>
      deps.providers.sync(requestContext(request), principalOf(request).workspaceId, request.params.id),
  );

  app.post(
    '/api/providers/:id/test',
    {
      schema: {
        summary: 'Try a model of the provider with one short call',
        description: 'Disabled models can be tested. A fake provider answers without taking a scripted answer.',
        tags: ['models'],
        params: IdParams,
        body: TestProviderInputBody,
        response: { 200: TestProviderOutputBody },
      },
    },
    async (request) => deps.providers.test(principalOf(request).workspaceId, request.params.id, request.body.modelId),
  );

  app.post(
    '/api/providers/:id/script',
    {
      schema: {
        summary: 'Queue scripted answers of a fake provider',
        description:
          'Each model call of the fake provider takes the next answer; with an empty queue it runs the commands the instruction quotes. `reset` empties the queue first. Answers how many are pending.',
        tags: ['models'],
        params: IdParams,
        body: FakeScriptBody,
        response: { 200: Type.Object({ pending: Type.Integer() }, { additionalProperties: false }) },
      },
    },
    async (request) => {
      const workspaceId = principalOf(request).workspaceId;
      const { responses, reset } = request.body;
      return { pending: await deps.providers.script(workspaceId, request.params.id, responses, reset ?? false) };
    },
  );

  app.put(
    '/api/providers/:id/models/enabled',
    {
      schema: {
        summary: 'Turn every model of a provider on or off',
        description: 'Refused (409) when turning off a model that is a workspace default.',
        tags: ['models'],
        params: IdParams,
        body: ModelsEnabledInputBody,
        response: { 200: ModelsEnabledOutputBody },
      },
    },
    async (request) => {
      const { workspaceId } = principalOf(request);
      const changed = await deps.providers.setModelsEnabled(
        requestContext(request),
        workspaceId,
        request.params.id,
        request.body.enabled,
      );
      return { changed };
    },
  );

  app.get(
    '/api/models',
    {
      schema: {
        summary: 'List models',
        tags: ['models'],
        querystring: ModelListQuery,
        response: { 200: ModelListEnvelope },
      },
    },
    async (request) => {
      const list = parseListQuery(request.query, {
        sortKeys: { model: 'model', label: 'label', providerName: 'providerName', enabled: 'enabled' },
        defaultSort: 'model',
        searchFields: ['model', 'label', 'providerName'],
      });
      const { provider, enabled } = request.query;
      const { items, total } = await deps.queries.forPrincipal(principalOf(request)).providers.listModels(list, {
        ...(provider ? { providerId: provider } : {}),
        ...(enabled !== undefined ? { enabled } : {}),
      });
      return { items: items.map(toModelDto), page: list.page, pageSize: list.pageSize, total };
    },
  );

  app.post(
    '/api/models',
    {
      schema: {
        summary: 'Add a model by hand',
        description: 'The model is enabled; a later sync that lists it adopts it and keeps its metadata.',
        tags: ['models'],
        body: CreateModelInputBody,
        response: { 201: ModelDto },
      },
    },
    async (request, reply) => {
      const p = principalOf(request);
      const modelId = await deps.providers.addModel(requestContext(request), p.workspaceId, request.body);
      return reply.status(201).send(toModelDto(await deps.queries.forPrincipal(p).providers.model(modelId)));
    },
  );

  app.patch(
    '/api/models/:id',
    {
      schema: {
        summary: 'Change a model',
        description:
          'Editing label, price or caps stops the catalog from overwriting them. A workspace default cannot be disabled (409).',
        tags: ['models'],
        params: IdParams,
        body: PatchModelInputBody,
        response: { 200: ModelDto },
      },
    },
    async (request) => {
      const p = principalOf(request);
      await deps.providers.changeModel(requestContext(request), p.workspaceId, request.params.id, request.body);
      return toModelDto(await deps.queries.forPrincipal(p).providers.model(request.params.id));
    },
  );

  app.delete(
    '/api/models/:id',
    {
      schema: {
        summary: 'Remove a model',
        description:
          'A workspace default cannot be removed (409). A synced model the source still lists comes back at the next sync.',
        tags: ['models'],
        params: IdParams,
        response: { 204: Type.Null() },
      },
    },
    async (request, reply) => {
      await deps.providers.removeModel(requestContext(request), principalOf(request).workspaceId, request.params.id);
      return reply.status(204).send(null);
    },
  );

  app.get(
    '/api/catalog/models',
    {
      schema: {
        summary: 'Built-in catalog of current Anthropic and OpenAI models with prices',
        description: 'Prices in micro-USD per 1M tokens.',
        tags: ['models'],
        querystring: Type.Object(
          { provider: Type.Optional(Type.Union([Type.Literal('anthropic'), Type.Literal('openai')])) },
          { additionalProperties: false },
        ),
        response: { 200: Type.Array(CatalogEntryDto) },
      },
    },
    async (request) =>
      catalog
        .filter((c) => !request.query.provider || c.provider === request.query.provider)
        .map(({ model, label, price, caps }) => ({ model, label, price, caps })),
  );
}
