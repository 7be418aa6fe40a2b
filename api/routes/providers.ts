import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Type from 'typebox';
import { catalog } from '../../domain/catalog.js';
import { listModels } from '../../server/model-sync.js';
import { DomainError } from '../../domain/decider.js';
import { providerDecider, providerStreamId, settingsDecider, settingsStreamId, type ModelSpec, type ProviderCommand } from '../../domain/provider.js';
import { modelsCollection, providersCollection, type ModelDoc, type ProviderDoc } from '../../projections/providers.js';
import { IdParams } from '../../schemas/common.js';
import {
  CatalogEntryDto, CreateModelInputBody, CreateProviderInputBody, CreateProviderOutputBody, FakeScriptBody, ModelDto, ModelListEnvelope, PatchModelInputBody,
  ProviderDto, ProviderListQuery, SettingsDto, SettingsPatch, SyncResult,
} from '../../schemas/provider.js';
import { fakeScripts } from '../../runner/models/fake.js';
import { newId } from '../../server/ids.js';
import { principalOf } from '../auth.js';
import { requestContext } from '../context.js';
import type { AppDeps } from '../deps.js';
import { parseListQuery } from '../list-query.js';

const fakeModel = (): ModelSpec => ({
  modelId: newId(), model: 'fake-model', label: 'Fake model', price: { in: 0, out: 0, cacheRead: 0, cacheWrite: 0 },
  caps: { tools: true, parallelTools: true, reasoning: true, jsonSchema: true, promptCache: true, vision: true, context: 200_000 }, synced: false, followCatalog: false,
});


function toProviderDto(d: ProviderDoc): ProviderDto {
  return { id: d._id, name: d.name, kind: d.kind, baseUrl: d.baseUrl, hasApiKey: d.apiKeySealed !== null, createdAt: d.createdAt };
}

export function toModelDto(d: ModelDoc): ModelDto {
  return { id: d._id, providerId: d.providerId, providerName: d.providerName, providerKind: d.providerKind, model: d.model, label: d.label, price: d.price, contextWindow: d.contextWindow, caps: d.caps, enabled: d.enabled, synced: d.synced, followCatalog: d.followCatalog, unlistedAt: d.unlistedAt };
}

export default function providerRoutes(fastify: FastifyInstance, deps: AppDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const providers = () => deps.stores.docs.collection<ProviderDoc>(providersCollection);
  const models = () => deps.stores.docs.collection<ModelDoc>(modelsCollection);

  async function onProvider(workspaceId: string, id: string, command: ProviderCommand, request: Parameters<typeof requestContext>[0]) {
    const result = await deps.bus.execute(providerStreamId(id), providerDecider, (s) => {
      if (command.type !== 'CreateProvider' && (s.status !== 'active' || s.workspaceId !== workspaceId)) throw DomainError.notFound('Provider');
      return command;
    }, requestContext(request));
    await deps.engine.waitFor(result.position);
    return result;
  }

  async function syncProvider(workspaceId: string, id: string, request: Parameters<typeof requestContext>[0]): Promise<SyncResult> {
    const d = await providers().findOne({ _id: id, workspaceId });
    if (!d) throw DomainError.notFound('Provider');
    let listed: Awaited<ReturnType<typeof listModels>> = null;
    let error: string | null = null;
    try {
      listed = await listModels(d.kind, d.baseUrl, d.apiKeySealed ? deps.keys.decrypt('providers', d.apiKeySealed) : null);
    } catch (err) {
      error = (err as Error).message;
    }
    if (listed === null && error === null) return { added: 0, updated: 0, unlisted: 0 };
    const result = await onProvider(workspaceId, id, { type: 'SyncModels', listed, error, newIds: newId, now: Date.now() }, request);
    const synced = result.events.find((e) => e.type === 'ProviderSynced')?.data as { result: SyncResult; error: string | null };
    return { ...synced.result, ...(synced.error ? { error: synced.error } : {}) };
  }

  async function ownModel(workspaceId: string, id: string): Promise<ModelDoc> {
    const m = await models().findOne({ _id: id, workspaceId });
    if (!m) throw DomainError.notFound('Model');
    return m;
  }

  app.get('/api/providers', { schema: { summary: 'List model providers', tags: ['models'], querystring: ProviderListQuery, response: { 200: Type.Object({ items: Type.Array(ProviderDto), page: Type.Integer(), pageSize: Type.Integer(), total: Type.Integer() }, { additionalProperties: false }) } } }, async (request) => {
    const p = principalOf(request);
    const list = parseListQuery(request.query, { sortKeys: { name: 'sortName', createdAt: 'createdAt' }, defaultSort: 'name', searchFields: ['name'] });
    const filter = { workspaceId: p.workspaceId };
    const [items, total] = await Promise.all([providers().find(filter, list.find), providers().count(filter, { search: list.search })]);
    return { items: items.map(toProviderDto), page: list.page, pageSize: list.pageSize, total };
  });

  app.post('/api/providers', { schema: { summary: 'Add a model provider', description: 'The API key is stored encrypted and never returned (only `hasApiKey`).', tags: ['models'], body: CreateProviderInputBody, response: { 201: CreateProviderOutputBody } } }, async (request, reply) => {
    const p = principalOf(request);
    const name = request.body.name.trim();
    if (!name) throw DomainError.validation([{ field: 'name', code: 'required', message: 'must not be blank' }]);
    const id = newId();
    const baseUrl = request.body.baseUrl?.replace(/\/+$/, '') || null;
    const apiKey = request.body.apiKey?.trim() || null;
    // A fake provider comes with its one model; the others fill themselves from their source right away.
    const initial = request.body.kind === 'fake' ? [fakeModel()] : [];
    await onProvider(p.workspaceId, id, { type: 'CreateProvider', providerId: id, workspaceId: p.workspaceId, name, kind: request.body.kind, baseUrl, apiKeySealed: apiKey ? deps.keys.encrypt('providers', apiKey) : null, models: initial, now: Date.now() }, request);
    const sync = request.body.kind === 'fake' ? { added: 1, updated: 0, unlisted: 0 } : await syncProvider(p.workspaceId, id, request);
    return reply.status(201).send({ id, sync });
  });

  app.get('/api/providers/:id', { schema: { summary: 'Get a provider', tags: ['models'], params: IdParams, response: { 200: ProviderDto } } }, async (request) => {
    const d = await providers().findOne({ _id: request.params.id, workspaceId: principalOf(request).workspaceId });
    if (!d) throw DomainError.notFound('Provider');
    return toProviderDto(d);
  });

  app.patch('/api/providers/:id', {
    schema: { summary: 'Change a provider', description: 'An empty apiKey removes the key.', tags: ['models'], params: IdParams, body: Type.Object({ name: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })), apiKey: Type.Optional(Type.String({ maxLength: 1000 })), baseUrl: Type.Optional(Type.String({ maxLength: 500 })) }, { additionalProperties: false }), response: { 200: ProviderDto } },
  }, async (request) => {
    const p = principalOf(request);
    const b = request.body;
    await onProvider(p.workspaceId, request.params.id, {
      type: 'UpdateProvider',
      ...(b.name !== undefined ? { name: b.name.trim() } : {}),
      ...(b.baseUrl !== undefined ? { baseUrl: b.baseUrl.trim() || null } : {}),
      ...(b.apiKey !== undefined ? { apiKeySealed: b.apiKey.trim() ? deps.keys.encrypt('providers', b.apiKey.trim()) : null } : {}),
    }, request);
    return toProviderDto((await providers().findOne({ _id: request.params.id }))!);
  });

  app.delete('/api/providers/:id', { schema: { summary: 'Delete a provider and its models', tags: ['models'], params: IdParams, response: { 204: Type.Null() } } }, async (request, reply) => {
    const p = principalOf(request);
    const gone = (await models().find({ providerId: request.params.id, workspaceId: p.workspaceId })).map((m) => m._id);
    await onProvider(p.workspaceId, request.params.id, { type: 'DeleteProvider', now: Date.now() }, request);
    // Defaults that pointed at its models are cleared.
    const s = await deps.models.settings(p.workspaceId);
    const cleared = Object.fromEntries((['agentModelId', 'utilityModelId', 'reflectionModelId'] as const).filter((k) => s[k] && gone.includes(s[k]!)).map((k) => [k, null]));
    if (Object.keys(cleared).length) await deps.bus.execute(settingsStreamId(p.workspaceId), settingsDecider, { type: 'ChangeSettings', changes: cleared, now: Date.now() }, requestContext(request));
    return reply.status(204).send(null);
  });

  app.post('/api/providers/:id/sync', {
    schema: { summary: "Sync a provider's models with its source", description: 'Adds new models, updates catalog-following ones, marks dropped ones unlisted; never deletes. An unreadable source answers `error` and changes nothing.', tags: ['models'], params: IdParams, response: { 200: SyncResult } },
  }, async (request) => syncProvider(principalOf(request).workspaceId, request.params.id, request));

  app.post('/api/providers/:id/script', {
    schema: { summary: 'Queue scripted answers of a fake provider', description: 'Each model call of the fake provider takes the next answer; with an empty queue it runs the commands the instruction quotes.', tags: ['models'], params: IdParams, body: FakeScriptBody, response: { 200: Type.Object({ pending: Type.Integer() }, { additionalProperties: false }) } },
  }, async (request) => {
    const d = await providers().findOne({ _id: request.params.id, workspaceId: principalOf(request).workspaceId });
    if (!d) throw DomainError.notFound('Provider');
    if (d.kind !== 'fake') throw new DomainError('unsupported', 'Only fake providers take scripted answers');
    return { pending: fakeScripts.push(d._id, request.body.responses, request.body.reset ?? false) };
  });

  app.get('/api/models', { schema: { summary: 'List models', tags: ['models'], querystring: ProviderListQuery, response: { 200: ModelListEnvelope } } }, async (request) => {
    const p = principalOf(request);
    const list = parseListQuery(request.query, { sortKeys: { model: 'model', providerName: 'providerName' }, defaultSort: 'model', searchFields: ['model', 'label', 'providerName'] });
    const filter = { workspaceId: p.workspaceId };
    const [items, total] = await Promise.all([models().find(filter, list.find), models().count(filter, { search: list.search })]);
    return { items: items.map(toModelDto), page: list.page, pageSize: list.pageSize, total };
  });

  app.post('/api/models', { schema: { summary: 'Add a model by hand', tags: ['models'], body: CreateModelInputBody, response: { 201: ModelDto } } }, async (request, reply) => {
    const p = principalOf(request);
    const b = request.body;
    const modelId = newId();
    await onProvider(p.workspaceId, b.providerId, { type: 'AddModel', spec: { modelId, model: b.model.trim(), label: b.label?.trim() || null, price: b.price, caps: b.caps, synced: false, followCatalog: false } }, request);
    return reply.status(201).send(toModelDto(await ownModel(p.workspaceId, modelId)));
  });

  app.patch('/api/models/:id', { schema: { summary: 'Change a model', tags: ['models'], params: IdParams, body: PatchModelInputBody, response: { 200: ModelDto } } }, async (request) => {
    const p = principalOf(request);
    const m = await ownModel(p.workspaceId, request.params.id);
    if (request.body.enabled === false) {
      const s = await deps.models.settings(p.workspaceId);
      const role = (['agentModelId', 'utilityModelId', 'reflectionModelId'] as const).find((k) => s[k] === m._id);
      if (role) throw new DomainError('conflict', `${m.model} is the workspace's ${role.replace('ModelId', '')} model; pick another one before disabling it`);
    }
    const b = request.body;
    await onProvider(p.workspaceId, m.providerId, { type: 'ChangeModel', modelId: m._id, ...(b.enabled !== undefined ? { enabled: b.enabled } : {}), ...(b.label !== undefined ? { label: b.label.trim() || null } : {}), ...(b.price ? { price: b.price } : {}) }, request);
    return toModelDto(await ownModel(p.workspaceId, m._id));
  });

  app.delete('/api/models/:id', { schema: { summary: 'Remove a model', tags: ['models'], params: IdParams, response: { 204: Type.Null() } } }, async (request, reply) => {
    const p = principalOf(request);
    const m = await ownModel(p.workspaceId, request.params.id);
    await onProvider(p.workspaceId, m.providerId, { type: 'RemoveModel', modelId: m._id }, request);
    return reply.status(204).send(null);
  });

  app.get('/api/catalog/models', {
    schema: { summary: 'Built-in catalog of current Anthropic and OpenAI models with prices', tags: ['models'], querystring: Type.Object({ provider: Type.Optional(Type.Union([Type.Literal('anthropic'), Type.Literal('openai')])) }, { additionalProperties: false }), response: { 200: Type.Array(CatalogEntryDto) } },
  }, async (request) => catalog.filter((c) => !request.query.provider || c.provider === request.query.provider).map(({ model, label, price, caps }) => ({ model, label, price, caps })));

  app.get('/api/settings', { schema: { summary: 'Workspace settings', tags: ['settings'], response: { 200: SettingsDto } } }, async (request) => deps.models.settings(principalOf(request).workspaceId));

  app.patch('/api/settings', { schema: { summary: 'Change workspace settings', description: 'Default models must be enabled models of the workspace; null unsets one. An empty defaultImage resets it.', tags: ['settings'], body: SettingsPatch, response: { 200: SettingsDto } } }, async (request) => {
    const p = principalOf(request);
    const changes: Record<string, unknown> = { ...request.body };
    const bad = [];
    for (const key of ['agentModelId', 'utilityModelId', 'reflectionModelId'] as const) {
      const id = request.body[key];
      if (typeof id === 'string' && !(await models().findOne({ _id: id, workspaceId: p.workspaceId, enabled: true }))) bad.push({ field: key, code: 'invalid', message: 'must be an enabled model of this workspace' });
    }
    if (bad.length) throw DomainError.validation(bad);
    if (request.body.defaultImage !== undefined) changes.defaultImage = request.body.defaultImage?.trim() || null;
    if (request.body.defaultLimits) changes.defaultLimits = request.body.defaultLimits;
    const result = await deps.bus.execute(settingsStreamId(p.workspaceId), settingsDecider, { type: 'ChangeSettings', changes, now: Date.now() }, requestContext(request));
    await deps.engine.waitFor(result.position);
    return deps.models.settings(p.workspaceId);
  });
}
