import { DomainError } from '../../domain/decider.js';
import { runsCollection, type RunDoc } from '../../projections/runs.js';
import type { DocumentStore, Filter } from '../../store/document-store.js';
import type { Page, PageRequest } from './list.js';

export interface RunFilter {
  status?: readonly string[];
  mode?: readonly string[];
  trigger?: readonly string[];
  jobIds?: readonly string[];
  /** Queued at or after (ms). */
  from?: number;
  /** Queued before (ms). */
  to?: number;
}

/**
 * The runs read model of one workspace. Runs of an archived job stay readable (they are history, docs/api.md);
 * runs of another workspace are not found.
 */
export class RunQueries {
  constructor(
    private readonly docs: DocumentStore,
    private readonly workspaceId: string,
  ) {}

  private get runs() {
    return this.docs.collection<RunDoc>(runsCollection);
  }

  async get(runId: string): Promise<RunDoc> {
    const run = await this.runs.findOne({ _id: runId, workspaceId: this.workspaceId });
    if (!run) throw DomainError.notFound('Run');
    return run;
  }

  async list(page: PageRequest, by: RunFilter): Promise<Page<RunDoc>> {
    const filter: Filter = { workspaceId: this.workspaceId };
    if (by.status) filter.status = { $in: [...by.status] };
    if (by.mode) filter.mode = { $in: [...by.mode] };
    if (by.trigger) filter.trigger = { $in: [...by.trigger] };
    if (by.jobIds && by.jobIds.length > 0) filter.jobId = { $in: [...by.jobIds] };
    if (by.from !== undefined || by.to !== undefined)
      filter.queuedAt = {
        ...(by.from !== undefined ? { $gte: by.from } : {}),
        ...(by.to !== undefined ? { $lt: by.to } : {}),
      };
    const [items, total] = await Promise.all([
      this.runs.find(filter, page.find),
      this.runs.count(filter, { search: page.search }),
    ]);
    return { items, total };
  }
}
