import { DomainError } from '../../domain/decider.js';
import { modelsCollection, providersCollection, type ModelDoc, type ProviderDoc } from '../../projections/providers.js';
import type { DocumentStore, Filter } from '../../store/document-store.js';
import type { Page, PageRequest } from './list.js';

/** Model providers of one workspace and their models. */
export class ProviderQueries {
  constructor(
    private readonly docs: DocumentStore,
    private readonly workspaceId: string,
  ) {}

  private get providers() {
    return this.docs.collection<ProviderDoc>(providersCollection);
  }

  private get models() {
    return this.docs.collection<ModelDoc>(modelsCollection);
  }

  async list(page: PageRequest): Promise<Page<ProviderDoc>> {
    const filter = { workspaceId: this.workspaceId };
    const [items, total] = await Promise.all([
      this.providers.find(filter, page.find),
      this.providers.count(filter, { search: page.search }),
    ]);
    return { items, total };
  }

  async get(providerId: string): Promise<ProviderDoc> {
    const d = await this.providers.findOne({ _id: providerId, workspaceId: this.workspaceId });
    if (!d) throw DomainError.notFound('Provider');
    return d;
  }

  async model(modelId: string): Promise<ModelDoc> {
    const m = await this.models.findOne({ _id: modelId, workspaceId: this.workspaceId });
    if (!m) throw DomainError.notFound('Model');
    return m;
  }

  /** A model of the given provider, or `not_found` ("Model not found"). */
  async modelOf(providerId: string, modelId: string): Promise<ModelDoc> {
    const m = await this.models.findOne({ _id: modelId, providerId, workspaceId: this.workspaceId });
    if (!m) throw DomainError.notFound('Model');
    return m;
  }

  /** Every model of a provider (none when the provider is not in this workspace). */
  modelsOf(providerId: string): Promise<ModelDoc[]> {
    return this.models.find({ providerId, workspaceId: this.workspaceId });
  }

  async listModels(page: PageRequest, by: { providerId?: string; enabled?: boolean }): Promise<Page<ModelDoc>> {
    const filter: Filter = {
      workspaceId: this.workspaceId,
      ...(by.providerId ? { providerId: by.providerId } : {}),
      ...(by.enabled !== undefined ? { enabled: by.enabled } : {}),
    };
    const [items, total] = await Promise.all([
      this.models.find(filter, page.find),
      this.models.count(filter, { search: page.search }),
    ]);
    return { items, total };
  }
}
