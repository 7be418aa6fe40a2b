import { DomainError } from '../../domain/decider.js';
import { secretsCollection, type SecretDoc } from '../../projections/secrets.js';
import type { DocumentStore } from '../../store/document-store.js';
import type { Page, PageRequest } from './list.js';

/** Secrets of one workspace, names and dates only: the sealed value is for the run start (docs/security.md). */
export class SecretQueries {
  constructor(
    private readonly docs: DocumentStore,
    private readonly workspaceId: string,
  ) {}

  private get secrets() {
    return this.docs.collection<SecretDoc>(secretsCollection);
  }

  async list(page: PageRequest): Promise<Page<SecretDoc>> {
    const filter = { workspaceId: this.workspaceId };
    const [items, total] = await Promise.all([
      this.secrets.find(filter, page.find),
      this.secrets.count(filter, { search: page.search }),
    ]);
    return { items, total };
  }

  async get(secretId: string): Promise<SecretDoc> {
    const doc = await this.secrets.findOne({ _id: secretId, workspaceId: this.workspaceId });
    if (!doc) throw DomainError.notFound('Secret');
    return doc;
  }
}
