import { DomainError } from '../../domain/decider.js';
import { jobsCollection, type JobDoc } from '../../projections/jobs.js';
import type { ReadCache } from '../../projections/read-cache.js';
import type { DocumentStore, Filter } from '../../store/document-store.js';
import type { Page, PageRequest } from './list.js';

/**
 * The jobs read model of one workspace. An archived job, or a job of another workspace, is not found: every
 * read filters on both, so no caller can forget either (docs/api.md).
 */
export class JobQueries {
  constructor(
    private readonly docs: DocumentStore,
    private readonly cache: ReadCache,
    private readonly workspaceId: string,
  ) {}

  private get jobs() {
    return this.docs.collection<JobDoc>(jobsCollection);
  }

  private scope(): Filter {
    return { workspaceId: this.workspaceId, archived: false };
  }

  /** The job, or `not_found` ("Job not found"). */
  async get(jobId: string): Promise<JobDoc> {
    // Read by id alone, the store's cheapest read, and scoped here: every creation reads its job back this way.
    const doc = await this.jobs.findOne({ _id: jobId });
    if (!doc || doc.workspaceId !== this.workspaceId || doc.archived !== false) throw DomainError.notFound('Job');
    return doc;
  }

  async list(page: PageRequest, enabled?: readonly boolean[]): Promise<Page<JobDoc>> {
    const filter = this.scope();
    if (enabled) filter.enabled = { $in: [...enabled] };
    const [items, total] = await Promise.all([
      this.jobs.find(filter, page.find),
      this.jobs.count(filter, { search: page.search }),
    ]);
    return { items, total };
  }

  /**
   * A serialized answer kept until the jobs read model changes. `key` names the answer within this workspace (the
   * list route uses the query string as sent); the workspace is part of the cache key, so answers never cross.
   */
  cachedAnswer(key: string): string | undefined {
    return this.cache.peek<string>(this.cacheKey(key));
  }

  async answer(key: string, load: () => Promise<string>): Promise<string> {
    return this.cache.get([jobsCollection], this.cacheKey(key), load);
  }

  private cacheKey(key: string) {
    return `jobs:${this.workspaceId}:${key}`;
  }
}
