import { emptyContent } from '../../../domain/playbook.js';
import { playbookFiles } from '../../../domain/playbook-render.js';
import { versionContent } from '../../playbooks.js';
import type { PreparedRun, ProvisionedRun } from './context.js';

/**
 * The prepare phase (docs/runs.md): the sandbox gets the run's input, the playbook's files (the version the run was
 * pinned to when it was queued; a missing one counts as empty) and the empty directories of docs/sandbox.md.
 */
export async function prepare(ctx: ProvisionedRun): Promise<PreparedRun> {
  const { run } = ctx;
  const playbook =
    (await versionContent(ctx.services.events, ctx.workspaceId, run.jobId, run.playbookVersion)) ?? emptyContent();
  await ctx.sandbox.putFiles([
    { path: '/svc/input.json', content: JSON.stringify(run.input ?? {}) },
    ...playbookFiles(playbook),
    { path: '/svc/outputs/.keep', content: '' },
    { path: '/svc/candidates/.keep', content: '' },
    { path: '/svc/logs/.keep', content: '' },
  ]);
  return Object.assign(ctx, { playbook });
}
