import { defaultLimits } from '../domain/settings.js';
import { jobsCollection, type JobDoc } from '../projections/jobs.js';
import type { DocumentStore } from '../store/document-store.js';

/** Jobs looked at: enough to know the sizes in use, without reading every job of a large instance at start. */
const jobsRead = 1000;

/**
 * The disk sizes whose sandboxes are started when the runner starts (docs/design.md, "Sandbox provisioning"), most
 * used first: those of the enabled jobs that run as the agent (a root job never takes a ready sandbox), each job's own
 * limit or its workspace's default; the default size when no such job exists.
 */
export async function readySizes(
  docs: DocumentStore,
  workspaceDiskMb: (workspaceId: string) => Promise<number>,
  max: number,
): Promise<number[]> {
  const jobs = await docs
    .collection<JobDoc>(jobsCollection)
    .find({ archived: false, enabled: true }, { limit: jobsRead });
  const defaults = new Map<string, number>();
  const counts = new Map<number, number>();
  for (const job of jobs) {
    if (job.runAsRoot) continue;
    let size = job.limits?.diskMb;
    if (size === undefined) {
      if (!defaults.has(job.workspaceId)) defaults.set(job.workspaceId, await workspaceDiskMb(job.workspaceId));
      size = defaults.get(job.workspaceId)!;
    }
    counts.set(size, (counts.get(size) ?? 0) + 1);
  }
  if (counts.size === 0) return [defaultLimits.diskMb];
  return [...counts.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, max)
    .map(([size]) => size);
}
