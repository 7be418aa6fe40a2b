import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Type from 'typebox';
import { catalog } from '../../domain/catalog.js';
import { DomainError } from '../../domain/decider.js';
import {
  normalizeBaseUrl,
  providerDecider,
  providerStreamId,
  type ModelSpec,
  type ProviderCommand,
} from '../../domain/provider.js';
import { redact } from '../../domain/redact.js';
import { defaultRole } from '../../domain/settings.js';
import { modelsCollection, providersCollection, type ModelDoc, type ProviderDoc } from '../../projections/providers.js';
import { FakeClient, FakeScripts, fakeScripts } from '../../adapters/models/fake.js';
import { createModelClient } from '../../adapters/models/client.js';
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
import { listModels } from '../../app/model-sync.js';
import { newId } from '../../app/ids.js';
import { principalOf } from '../auth.js';
import { requestContext } from '../context.js';
import type { AppDeps } from '../deps.js';
import { parseListQuery } from '../list-query.js';
import { errorMessage } from '../../domain/error-message.js';

/** The one model a fake provider comes with (BEHAVIOUR §9.1). */
const fakeModel = (): ModelSpec => ({
  modelId: newId(),
  model: 'fake-model',
  label: 'Fake model',
  price: { in: 0, out: 0, cacheRead: 0, cacheWrite: 0 },
  caps: {
    tools: true,
    parallelTools: true,
    reasoning: true,
    jsonSchema: true,
    promptCache: true,
    vision: true,
    context: 200_000,
  },
  synced: false,
  followCatalog: false,
});

const testTimeoutMs = 30_000;

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

/** Providers, their models and the built-in catalog (SPEC §2.9, BEHAVIOUR §9.1). Reads are open to members, writes need an admin. */
export default function providerRoutes(fastify: FastifyInstance, deps: AppDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const providers = () => deps.stores.docs.collection<ProviderDoc>(providersCollection);
  const models = () => deps.stores.docs.collection<ModelDoc>(modelsCollection);
  const openKey = (d: ProviderDoc) => (d.apiKeySealed ? deps.keys.decrypt('providers', d.apiKeySealed) : null);

  async function onProvider(workspaceId: string, id: string, command: ProviderCommand, request: FastifyRequest) {
    const result = await deps.bus.execute(
      providerStreamId(id),
      providerDecider,
      (s) => {
        if (command.type !== 'CreateProvider' && (s.status !== 'active' || s.workspaceId !== workspaceId))
          throw DomainError.notFound('Provider');
        return command;
      },
      requestContext(request),
    );
    await deps.engine.waitFor(result.position);
    return result;
  }

  async function ownProvider(workspaceId: string, id: string): Promise<ProviderDoc> {
    const d = await providers().findOne({ _id: id, workspaceId });
    if (!d) throw DomainError.notFound('Provider');
    return d;
  }

  async function ownModel(workspaceId: string, id: string): Promise<ModelDoc> {
    const m = await models().findOne({ _id: id, workspaceId });
    if (!m) throw DomainError.notFound('Model');
    return m;
  }

  /** 409 when one of the models is a workspace default ("X is the workspace's agent model…"). */
  async function refuseDefault(workspaceId: string, ms: ModelDoc[], action: string) {
    const used = await deps.models.defaultUsing(
      workspaceId,
      ms.map((m) => m._id),
    );
    if (!used) return;
    const name = ms.find((m) => m._id === used.modelId)?.model ?? used.modelId;
    throw new DomainError(
      'conflict',
      `${name} is the workspace's ${defaultRole(used.key)} model; pick another one in Settings before ${action} it`,
    );
  }

  /** BEHAVIOUR §9.1: reads the source, then lets the decider add, adopt, re-list, update and unlist. */
  async function syncProvider(workspaceId: string, id: string, request: FastifyRequest): Promise<SyncResult> {
    const d = await ownProvider(workspaceId, id);
    let listed: Awaited<ReturnType<typeof listModels>> = null;
    let error: string | null = null;
    try {
      listed = await listModels(d.kind, d.baseUrl, openKey(d));
    } catch (err) {
      error = redact(errorMessage(err), [openKey(d) ?? '']) || 'the source could not be read';
    }
    // A manual source (fake) has nothing to sync.
    if (listed === null && error === null) return { added: 0, updated: 0, unlisted: 0 };
    const result = await onProvider(
      workspaceId,
      id,
      { type: 'SyncModels', listed, error, newIds: newId, now: Date.now() },
      request,
    );
    const synced = result.events.find((e) => e.type === 'ProviderSynced')?.data as {
      result: SyncResult;
      error: string | null;
    };
    return { ...synced.result, ...(synced.error ? { error: synced.error } : {}) };
  }

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
      const p = principalOf(request);
      const list = parseListQuery(request.query, {
        sortKeys: { name: 'sortName', createdAt: 'createdAt' },
        defaultSort: 'name',
        searchFields: ['name'],
      });
      const filter = { workspaceId: p.workspaceId };
      const [items, total] = await Promise.all([
        providers().find(filter, list.find),
        providers().count(filter, { search: list.search }),
      ]);
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
      const p = principalOf(request);
      const name = request.body.name.trim();
      if (!name) throw DomainError.validation([{ field: 'name', code: 'required', message: 'must not be blank' }]);
      const baseUrl = normalizeBaseUrl(request.body.baseUrl);
      const apiKey = request.body.apiKey?.trim() || null;
      const id = newId();
      // A fake provider comes with its one model; the others fill themselves from their source right away.
      const initial = request.body.kind === 'fake' ? [fakeModel()] : [];
      await onProvider(
        p.workspaceId,
        id,
        {
          type: 'CreateProvider',
          providerId: id,
          workspaceId: p.workspaceId,
          name,
          kind: request.body.kind,
          baseUrl,
          apiKeySealed: apiKey ? deps.keys.encrypt('providers', apiKey) : null,
          models: initial,
          now: Date.now(),
        },
        request,
      );
      const sync =
        request.body.kind === 'fake'
          ? { added: initial.length, updated: 0, unlisted: 0 }
          : await syncProvider(p.workspaceId, id, request);
      return reply.status(201).send({ id, sync });
    },
  );

  app.get(
    '/api/providers/:id',
    { schema: { summary: 'Get a provider', tags: ['models'], params: IdParams, response: { 200: ProviderDto } } },
    async (request) => toProviderDto(await ownProvider(principalOf(request).workspaceId, request.params.id)),
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
      const b = request.body;
      const name = b.name?.trim();
      if (name === '')
        throw DomainError.validation([{ field: 'name', code: 'required', message: 'must not be blank' }]);
      const apiKey = b.apiKey?.trim();
      await onProvider(
        p.workspaceId,
        request.params.id,
        {
          type: 'UpdateProvider',
          ...(name !== undefined ? { name } : {}),
          ...(b.baseUrl !== undefined ? { baseUrl: normalizeBaseUrl(b.baseUrl) } : {}),
          ...(apiKey !== undefined ? { apiKeySealed: apiKey ? deps.keys.encrypt('providers', apiKey) : null } : {}),
        },
        request,
      );
      return toProviderDto(await ownProvider(p.workspaceId, request.params.id));
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
      const p = principalOf(request);
      const gone = (await models().find({ providerId: request.params.id, workspaceId: p.workspaceId })).map(
        (m) => m._id,
      );
      await onProvider(p.workspaceId, request.params.id, { type: 'DeleteProvider', now: Date.now() }, request);
      await deps.models.clearDefaults(requestContext(request), p.workspaceId, gone);
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
    async (request) => syncProvider(principalOf(request).workspaceId, request.params.id, request),
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
    async (request) => {
      const p = principalOf(request);
      const d = await ownProvider(p.workspaceId, request.params.id);
      const m = await models().findOne({ _id: request.body.modelId, providerId: d._id, workspaceId: p.workspaceId });
      if (!m) throw DomainError.notFound('Model');
      const apiKey = openKey(d);
      const client =
        d.kind === 'fake'
          ? new FakeClient(d._id, new FakeScripts())
          : createModelClient({ id: d._id, kind: d.kind, apiKey, baseUrl: d.baseUrl });
      const started = performance.now();
      const latency = () => Math.round(performance.now() - started);
      try {
        const answer = await client.complete({
          model: m.model,
          system: ['You answer connection checks.'],
          messages: [{ role: 'user', text: 'Reply with the single word: ok' }],
          tools: [],
          maxTokens: 1024,
          effort: 'low',
          signal: AbortSignal.timeout(testTimeoutMs),
        });
        return { ok: true, latencyMs: latency(), reply: answer.text.slice(0, 2000) };
      } catch (err) {
        return {
          ok: false,
          latencyMs: latency(),
          error: redact(errorMessage(err) || String(err), [apiKey ?? '']).slice(0, 2000),
        };
      }
    },
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
      const d = await ownProvider(principalOf(request).workspaceId, request.params.id);
      if (d.kind !== 'fake') throw new DomainError('unsupported', 'Only fake providers take scripted answers');
      return { pending: fakeScripts.push(d._id, request.body.responses, request.body.reset ?? false) };
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
      const p = principalOf(request);
      const d = await ownProvider(p.workspaceId, request.params.id);
      if (!request.body.enabled)
        await refuseDefault(
          p.workspaceId,
          await models().find({ providerId: d._id, workspaceId: p.workspaceId }),
          'disabling',
        );
      const r = await onProvider(
        p.workspaceId,
        d._id,
        { type: 'SetModelsEnabled', enabled: request.body.enabled },
        request,
      );
      return { changed: r.events.length };
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
      const p = principalOf(request);
      const list = parseListQuery(request.query, {
        sortKeys: { model: 'model', label: 'label', providerName: 'providerName', enabled: 'enabled' },
        defaultSort: 'model',
        searchFields: ['model', 'label', 'providerName'],
      });
      const filter = {
        workspaceId: p.workspaceId,
        ...(request.query.provider ? { providerId: request.query.provider } : {}),
        ...(request.query.enabled !== undefined ? { enabled: request.query.enabled } : {}),
      };
      const [items, total] = await Promise.all([
        models().find(filter, list.find),
        models().count(filter, { search: list.search }),
      ]);
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
      const b = request.body;
      const model = b.model.trim();
      if (!model) throw DomainError.validation([{ field: 'model', code: 'required', message: 'must not be blank' }]);
      const modelId = newId();
      await onProvider(
        p.workspaceId,
        b.providerId,
        {
          type: 'AddModel',
          spec: {
            modelId,
            model,
            label: b.label?.trim() || null,
            price: b.price,
            caps: b.caps,
            synced: false,
            followCatalog: false,
          },
        },
        request,
      );
      return reply.status(201).send(toModelDto(await ownModel(p.workspaceId, modelId)));
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
      const m = await ownModel(p.workspaceId, request.params.id);
      const b = request.body;
      if (b.enabled === false) await refuseDefault(p.workspaceId, [m], 'disabling');
      await onProvider(
        p.workspaceId,
        m.providerId,
        {
          type: 'ChangeModel',
          modelId: m._id,
          ...(b.enabled !== undefined ? { enabled: b.enabled } : {}),
          ...(b.label !== undefined ? { label: b.label.trim() || null } : {}),
          ...(b.price ? { price: b.price } : {}),
          ...(b.caps ? { caps: b.caps } : {}),
          ...(b.followCatalog !== undefined ? { followCatalog: b.followCatalog } : {}),
        },
        request,
      );
      return toModelDto(await ownModel(p.workspaceId, m._id));
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
      const p = principalOf(request);
      const m = await ownModel(p.workspaceId, request.params.id);
      await refuseDefault(p.workspaceId, [m], 'removing');
      await onProvider(p.workspaceId, m.providerId, { type: 'RemoveModel', modelId: m._id }, request);
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
