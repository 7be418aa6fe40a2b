import { modelsCollection, providersCollection, settingsCollection, type ModelDoc, type ProviderDoc, type SettingsDoc } from '../projections/providers.js';
import type { SettingsDto } from '../schemas/provider.js';
import { createModelClient } from '../runner/models/client.js';
import type { ModelClient, Price } from '../runner/models/types.js';
import type { DocumentStore } from '../store/document-store.js';
import type { Keys } from './keys.js';

/** BEHAVIOUR §9.2 defaults. */
export const defaultSettings: SettingsDto = {
  agentModelId: null,
  utilityModelId: null,
  reflectionModelId: null,
  defaultImage: null,
  defaultLimits: { timeoutSeconds: 900, maxTurns: 60, maxCostUsd: 2, cpus: 1, memoryMb: 1024, pidsLimit: 256 },
  dailySpendLimitUsd: 0,
  retentionDays: 90,
};

export interface ResolvedModel {
  id: string;
  client: ModelClient;
  name: string;
  price: Price;
  contextWindow: number;
}

/** Settings and model resolution for runs, on the host: provider keys are decrypted only here, only when used. */
export class Models {
  constructor(private readonly docs: DocumentStore, private readonly keys: Keys) {}

  async settings(workspaceId: string): Promise<SettingsDto> {
    const stored = await this.docs.collection<SettingsDoc>(settingsCollection).findOne({ _id: workspaceId });
    const { _id, ...rest } = stored ?? { _id: workspaceId };
    const merged = { ...defaultSettings, ...(rest as Partial<SettingsDto>) };
    return { ...merged, defaultLimits: { ...defaultSettings.defaultLimits, ...(merged.defaultLimits ?? {}) } };
  }

  /** An enabled, listed model of the workspace, ready to call; null when there is none. */
  async load(workspaceId: string, modelId: string | null): Promise<ResolvedModel | null> {
    if (!modelId) return null;
    const model = await this.docs.collection<ModelDoc>(modelsCollection).findOne({ _id: modelId, workspaceId, enabled: true });
    if (!model || model.unlistedAt !== null) return null;
    const provider = await this.docs.collection<ProviderDoc>(providersCollection).findOne({ _id: model.providerId });
    if (!provider) return null;
    const apiKey = provider.apiKeySealed ? this.keys.decrypt('providers', provider.apiKeySealed) : null;
    return { id: model._id, name: model.model, price: model.price, contextWindow: model.contextWindow, client: createModelClient({ id: provider._id, kind: provider.kind, apiKey, baseUrl: provider.baseUrl }) };
  }

  /** agent: the job's model when still usable, else the workspace's; utility and reflection fall back to the run's. */
  async resolve(workspaceId: string, purpose: 'agent' | 'utility' | 'reflection', runModelId: string | null): Promise<ResolvedModel | null> {
    const s = await this.settings(workspaceId);
    const agent = (await this.load(workspaceId, runModelId)) ?? (await this.load(workspaceId, s.agentModelId));
    if (purpose === 'agent') return agent;
    const own = await this.load(workspaceId, purpose === 'utility' ? s.utilityModelId : s.reflectionModelId);
    return own ?? agent;
  }
}
