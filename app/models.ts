import {
  defaultModelKeys,
  settingsDecider,
  settingsStreamId,
  withDefaults,
  type DefaultModelKey,
} from '../domain/settings.js';
import type { ProjectionEngine } from '../projections/engine.js';
import {
  modelsCollection,
  providersCollection,
  settingsCollection,
  type ModelDoc,
  type ProviderDoc,
  type SettingsDoc,
} from '../projections/providers.js';
import type { ModelDto } from '../schemas/provider.js';
import type { SettingsDto, SettingsPatch } from '../schemas/settings.js';
import { createModelClient } from '../adapters/models/client.js';
import type { ModelClient, Price, ProviderConfig } from '../adapters/models/types.js';
import type { DocumentStore } from '../store/document-store.js';
import type { CommandBus, CommandContext } from './commands.js';
import type { Keys } from '../adapters/keys.js';

export { defaultSettings } from '../domain/settings.js';

/** Which default a call is for (docs/models.md, "Which model a call uses"). */
export type ModelPurpose = 'agent' | 'utility' | 'reflection';

/** A model ready to be called: its record and its provider with the opened key. Only the host ever holds this. */
export interface ModelChoice {
  model: ModelDto;
  provider: ProviderConfig;
}

/** The shape the runner's ports take (app/run/ports.ts AgentModel). */
export interface ResolvedModel {
  id: string;
  client: ModelClient;
  name: string;
  price: Price;
  contextWindow: number;
}

/** Settings and model resolution for runs, on the host: provider keys are decrypted only here, only when used. */
export class Models {
  constructor(
    private readonly bus: CommandBus,
    private readonly docs: DocumentStore,
    private readonly engine: ProjectionEngine,
    private readonly keys: Keys,
  ) {}

  /** The workspace's settings, defaults filled in; read on every call and never cached, so changes apply at once. */
  async settingsFor(workspaceId: string): Promise<SettingsDto> {
    const stored = await this.docs.collection<SettingsDoc>(settingsCollection).findOne({ _id: workspaceId });
    const { _id, ...rest } = stored ?? { _id: workspaceId };
    return withDefaults(rest as Partial<SettingsDto>);
  }

  /** Same as `settingsFor` (the name the runner's wiring uses). */
  settings(workspaceId: string): Promise<SettingsDto> {
    return this.settingsFor(workspaceId);
  }

  /**
   * Applies a settings patch. Default models must be enabled, listed models of the workspace; `secretNames` are the
   * workspace's secret names the caller found for `notifySecret`. Answers the settings after the change.
   */
  async changeSettings(
    ctx: CommandContext,
    workspaceId: string,
    patch: SettingsPatch,
    secretNames: string[] = [],
  ): Promise<SettingsDto> {
    const usableModelIds: string[] = [];
    for (const key of defaultModelKeys) {
      const id = patch[key];
      if (typeof id === 'string' && id !== '' && (await this.usable(workspaceId, id))) usableModelIds.push(id);
    }
    const r = await this.bus.execute(
      settingsStreamId(workspaceId),
      settingsDecider,
      { type: 'ChangeSettings', patch, usableModelIds, secretNames, now: Date.now() },
      ctx,
    );
    await this.engine.waitFor(r.position);
    return this.settingsFor(workspaceId);
  }

  /** The first workspace default (agent, utility, reflection) that is one of `modelIds`, or null. */
  async defaultUsing(
    workspaceId: string,
    modelIds: string[],
  ): Promise<{ key: DefaultModelKey; modelId: string } | null> {
    const s = await this.settingsFor(workspaceId);
    for (const key of defaultModelKeys) {
      const id = s[key];
      if (id && modelIds.includes(id)) return { key, modelId: id };
    }
    return null;
  }

  /** Unsets every default that points at one of `modelIds` (their provider is gone). */
  async clearDefaults(ctx: CommandContext, workspaceId: string, modelIds: string[]): Promise<void> {
    const s = await this.settingsFor(workspaceId);
    const patch: SettingsPatch = {};
    for (const key of defaultModelKeys) if (s[key] && modelIds.includes(s[key]!)) patch[key] = null;
    if (Object.keys(patch).length) await this.changeSettings(ctx, workspaceId, patch);
  }

  /** An enabled, listed model of the workspace (what a default or a job may name). */
  async usable(workspaceId: string, modelId: string): Promise<boolean> {
    const m = await this.docs
      .collection<ModelDoc>(modelsCollection)
      .findOne({ _id: modelId, workspaceId, enabled: true });
    return m !== null && m.unlistedAt === null;
  }

  /** An enabled, listed model of the workspace with its provider; null when there is none. */
  async choice(workspaceId: string, modelId: string | null): Promise<ModelChoice | null> {
    if (!modelId) return null;
    const m = await this.docs
      .collection<ModelDoc>(modelsCollection)
      .findOne({ _id: modelId, workspaceId, enabled: true });
    if (!m || m.unlistedAt !== null) return null;
    const p = await this.docs.collection<ProviderDoc>(providersCollection).findOne({ _id: m.providerId, workspaceId });
    if (!p) return null;
    const apiKey = p.apiKeySealed ? this.keys.decrypt('providers', p.apiKeySealed) : null;
    const model: ModelDto = {
      id: m._id,
      providerId: m.providerId,
      providerName: m.providerName,
      providerKind: m.providerKind,
      model: m.model,
      label: m.label,
      price: m.price,
      contextWindow: m.contextWindow,
      caps: m.caps,
      enabled: m.enabled,
      synced: m.synced,
      followCatalog: m.followCatalog,
      unlistedAt: m.unlistedAt,
    };
    return { model, provider: { id: p._id, kind: p.kind, apiKey, baseUrl: p.baseUrl } };
  }

  /**
   * docs/models.md, "Which model a call uses": agent = the job's model while it is enabled and listed, else the
   * workspace agent model; utility = the workspace utility model, else the run's (agent) model; reflection = the
   * workspace reflection model, else the run's (agent) model. Null when nothing usable is configured.
   */
  async resolveModel(
    workspaceId: string,
    purpose: ModelPurpose,
    jobModelId: string | null,
  ): Promise<ModelChoice | null> {
    const s = await this.settingsFor(workspaceId);
    if (purpose !== 'agent') {
      const own = await this.choice(workspaceId, purpose === 'utility' ? s.utilityModelId : s.reflectionModelId);
      if (own) return own;
    }
    return (await this.choice(workspaceId, jobModelId)) ?? (await this.choice(workspaceId, s.agentModelId));
  }

  /** `resolveModel` with a client, in the shape the runner takes. */
  async resolve(workspaceId: string, purpose: ModelPurpose, jobModelId: string | null): Promise<ResolvedModel | null> {
    const c = await this.resolveModel(workspaceId, purpose, jobModelId);
    return (
      c && {
        id: c.model.id,
        name: c.model.model,
        price: c.model.price,
        contextWindow: c.model.contextWindow,
        client: createModelClient(c.provider),
      }
    );
  }
}
