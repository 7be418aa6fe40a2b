import { playbookVersionsCollection, type PlaybookVersionDoc } from '../../projections/playbooks.js';
import { runsCollection, type RunDoc } from '../../projections/runs.js';
import type { DocumentStore } from '../../store/document-store.js';
import type { JobQueries } from './jobs.js';

export interface JobHistory {
  /** The job's runs queued since `from` that were not skipped, by number. */
  runs: RunDoc[];
  /** The playbook versions saved since `from`, by version. */
  versions: PlaybookVersionDoc[];
}

/** What a job's statistics are computed from; the job is looked up first (archived or foreign: not found). */
export class StatsQueries {
  constructor(
    private readonly docs: DocumentStore,
    private readonly jobs: JobQueries,
    private readonly workspaceId: string,
  ) {}

  async jobHistory(jobId: string, from: number): Promise<JobHistory> {
    await this.jobs.get(jobId);
    const workspaceId = this.workspaceId;
    const [runs, versions] = await Promise.all([
      this.docs
        .collection<RunDoc>(runsCollection)
        .find({ jobId, workspaceId, queuedAt: { $gte: from }, status: { $ne: 'skipped' } }, { sort: [['number', 1]] }),
      this.docs
        .collection<PlaybookVersionDoc>(playbookVersionsCollection)
        .find({ jobId, workspaceId, createdAt: { $gte: from } }, { sort: [['version', 1]] }),
    ]);
    return { runs, versions };
  }
}
