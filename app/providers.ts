import type { Static } from 'typebox';
import { DomainError } from '../domain/decider.js';
import { errorMessage } from '../domain/error-message.js';
import {
  normalizeBaseUrl,
  providerDecider,
  providerStreamId,
  type ModelSpec,
  type ProviderCommand,
  type ProviderKind,
} from '../domain/provider.js';
import { redact } from '../domain/redact.js';
import { defaultRole } from '../domain/settings.js';
import type { ModelDoc, ProviderDoc } from '../projections/providers.js';
import type {
  CreateModelInputBody,
  FakeScriptBody,
  PatchModelInputBody,
  SyncResult,
  TestProviderOutputBody,
} from '../schemas/provider.js';
import type { DocumentStore } from '../store/document-store.js';
import type { Position } from '../store/event-store.js';
import type { Keys } from '../adapters/keys.js';
import { createModelClient } from '../adapters/models/client.js';
import { FakeClient, FakeScripts } from '../adapters/models/fake.js';
import type { CommandBus, CommandContext } from './commands.js';
import { newId } from './ids.js';
import { listModels } from './model-sync.js';
import type { Models } from './models.js';
import { ProviderQueries } from './queries/providers.js';

type NewModel = Static<typeof CreateModelInputBody>;
type ModelChanges = Static<typeof PatchModelInputBody>;
type TestAnswer = Static<typeof TestProviderOutputBody>;
type FakeResponses = Static<typeof FakeScriptBody>['responses'];

const testTimeoutMs = 30_000;

/** The one model a fake provider comes with. */
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

const blankName = (field: string) =>
  DomainError.validation([{ field, code: 'required', message: 'must not be blank' }]);

/**
 * Model providers of a workspace and their models: adding, changing, syncing with their source, testing, and
 * removing. Every change goes through the provider's stream, which refuses another workspace's provider as missing,
 * and waits for the read models so the caller reads its own write. Provider keys are opened only here.
 */
export class Providers {
  constructor(
    private readonly bus: CommandBus,
    private readonly docs: DocumentStore,
    private readonly keys: Keys,
    private readonly models: Models,
    /** The scripted answers of fake providers, shared with the fake model clients of this process. */
    private readonly fakeScripts: FakeScripts,
    /** Resolves once the read models have caught up with a position (the projection engine's `waitFor`). */
    private readonly projected: (position: Position | null) => Promise<unknown>,
  ) {}

  private async onProvider(ctx: CommandContext, workspaceId: string, id: string, command: ProviderCommand) {
    const result = await this.bus.execute(
      providerStreamId(id),
      providerDecider,
      (s) => {
        if (command.type !== 'CreateProvider' && (s.status !== 'active' || s.workspaceId !== workspaceId))
          throw DomainError.notFound('Provider');
        return command;
      },
      ctx,
    );
    await this.projected(result.position);
    return result;
  }

  /** The workspace-scoped reads of the query layer: another workspace's provider or model is not found. */
  private read(workspaceId: string): ProviderQueries {
    return new ProviderQueries(this.docs, workspaceId);
  }

  private openKey(d: ProviderDoc): string | null {
    return d.apiKeySealed ? this.keys.decrypt('providers', d.apiKeySealed) : null;
  }

  /** 409 when one of the models is a workspace default ("X is the workspace's agent model…"). */
  private async refuseDefault(workspaceId: string, ms: ModelDoc[], action: string): Promise<void> {
    const used = await this.models.defaultUsing(
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

  /**
   * Adds a provider and answers its id with the first sync: a fake one comes with its one model, the others read
   * their source at once.
   */
  async create(
    ctx: CommandContext,
    workspaceId: string,
    input: { name: string; kind: ProviderKind; baseUrl?: string | null; apiKey?: string | null },
  ): Promise<{ id: string; sync: SyncResult }> {
    const name = input.name.trim();
    if (!name) throw blankName('name');
    const baseUrl = normalizeBaseUrl(input.baseUrl);
    const apiKey = input.apiKey?.trim() || null;
    const id = newId();
    const initial = input.kind === 'fake' ? [fakeModel()] : [];
    await this.onProvider(ctx, workspaceId, id, {
      type: 'CreateProvider',
      providerId: id,
      workspaceId,
      name,
      kind: input.kind,
      baseUrl,
      apiKeySealed: apiKey ? this.keys.encrypt('providers', apiKey) : null,
      models: initial,
      now: Date.now(),
    });
    const sync =
      input.kind === 'fake'
        ? { added: initial.length, updated: 0, unlisted: 0 }
        : await this.sync(ctx, workspaceId, id);
    return { id, sync };
  }

  /** An empty apiKey removes the key; an empty baseUrl removes the base URL. */
  async update(
    ctx: CommandContext,
    workspaceId: string,
    id: string,
    input: { name?: string; baseUrl?: string | null; apiKey?: string },
  ): Promise<void> {
    const name = input.name?.trim();
    if (name === '') throw blankName('name');
    const apiKey = input.apiKey?.trim();
    await this.onProvider(ctx, workspaceId, id, {
      type: 'UpdateProvider',
      ...(name !== undefined ? { name } : {}),
      ...(input.baseUrl !== undefined ? { baseUrl: normalizeBaseUrl(input.baseUrl) } : {}),
      ...(apiKey !== undefined ? { apiKeySealed: apiKey ? this.keys.encrypt('providers', apiKey) : null } : {}),
    });
  }

  /** Deletes the provider and its models; workspace defaults that pointed at them are unset. */
  async delete(ctx: CommandContext, workspaceId: string, id: string): Promise<void> {
    const gone = (await this.read(workspaceId).modelsOf(id)).map((m) => m._id);
    await this.onProvider(ctx, workspaceId, id, { type: 'DeleteProvider', now: Date.now() });
    await this.models.clearDefaults(ctx, workspaceId, gone);
  }

  /** Reads the source, then lets the decider add, adopt, re-list, update and unlist (docs/api.md). */
  async sync(ctx: CommandContext, workspaceId: string, id: string): Promise<SyncResult> {
    const d = await this.read(workspaceId).get(id);
    let listed: Awaited<ReturnType<typeof listModels>> = null;
    let error: string | null = null;
    const apiKey = this.openKey(d);
    try {
      listed = await listModels(d.kind, d.baseUrl, apiKey);
    } catch (err) {
      error = redact(errorMessage(err), [apiKey ?? '']) || 'the source could not be read';
    }
    // A manual source (fake) has nothing to sync.
    if (listed === null && error === null) return { added: 0, updated: 0, unlisted: 0 };
    const result = await this.onProvider(ctx, workspaceId, id, {
      type: 'SyncModels',
      listed,
      error,
      newIds: newId,
      now: Date.now(),
    });
    const synced = result.events.find((e) => e.type === 'ProviderSynced')?.data as {
      result: SyncResult;
      error: string | null;
    };
    return { ...synced.result, ...(synced.error ? { error: synced.error } : {}) };
  }

  /** One short call to a model of the provider; a fake provider answers without taking a scripted answer. */
  async test(workspaceId: string, id: string, modelId: string): Promise<TestAnswer> {
    const read = this.read(workspaceId);
    const d = await read.get(id);
    const m = await read.modelOf(d._id, modelId);
    const apiKey = this.openKey(d);
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
  }

  /** Queues scripted answers of a fake provider and answers how many are pending. */
  async script(workspaceId: string, id: string, responses: FakeResponses, reset: boolean): Promise<number> {
    const d = await this.read(workspaceId).get(id);
    if (d.kind !== 'fake') throw new DomainError('unsupported', 'Only fake providers take scripted answers');
    return this.fakeScripts.push(d._id, responses, reset);
  }

  /** Turns every model of a provider on or off and answers how many changed; a default cannot be turned off. */
  async setModelsEnabled(ctx: CommandContext, workspaceId: string, id: string, enabled: boolean): Promise<number> {
    const read = this.read(workspaceId);
    const d = await read.get(id);
    if (!enabled) await this.refuseDefault(workspaceId, await read.modelsOf(d._id), 'disabling');
    const r = await this.onProvider(ctx, workspaceId, d._id, { type: 'SetModelsEnabled', enabled });
    return r.events.length;
  }

  /** Adds a model by hand, enabled, and answers its id. */
  async addModel(ctx: CommandContext, workspaceId: string, input: NewModel): Promise<string> {
    const model = input.model.trim();
    if (!model) throw blankName('model');
    const modelId = newId();
    await this.onProvider(ctx, workspaceId, input.providerId, {
      type: 'AddModel',
      spec: {
        modelId,
        model,
        label: input.label?.trim() || null,
        price: input.price,
        caps: input.caps,
        synced: false,
        followCatalog: false,
      },
    });
    return modelId;
  }

  /** Editing label, price or caps stops the catalog from overwriting them; a default cannot be disabled. */
  async changeModel(ctx: CommandContext, workspaceId: string, modelId: string, b: ModelChanges): Promise<void> {
    const m = await this.read(workspaceId).model(modelId);
    if (b.enabled === false) await this.refuseDefault(workspaceId, [m], 'disabling');
    await this.onProvider(ctx, workspaceId, m.providerId, {
      type: 'ChangeModel',
      modelId: m._id,
      ...(b.enabled !== undefined ? { enabled: b.enabled } : {}),
      ...(b.label !== undefined ? { label: b.label.trim() || null } : {}),
      ...(b.price ? { price: b.price } : {}),
      ...(b.caps ? { caps: b.caps } : {}),
      ...(b.followCatalog !== undefined ? { followCatalog: b.followCatalog } : {}),
    });
  }

  /** Removes a model; a workspace default cannot be removed. */
  async removeModel(ctx: CommandContext, workspaceId: string, modelId: string): Promise<void> {
    const m = await this.read(workspaceId).model(modelId);
    await this.refuseDefault(workspaceId, [m], 'removing');
    await this.onProvider(ctx, workspaceId, m.providerId, { type: 'RemoveModel', modelId: m._id });
  }
}
