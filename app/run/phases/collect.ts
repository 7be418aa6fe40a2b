import { errorMessage } from '../../../domain/error-message.js';
import { ignoreFailure } from '../../../domain/ignore-failure.js';
import type { Sandbox } from '../../../adapters/sandbox/types.js';
import { mcpGoesWithTheRun, type RunContext } from './context.js';

const artifactCap = 50 * 1024 * 1024;
const candidatesCap = 1024 * 1024;

/**
 * The collect phase (docs/runs.md): reads back what the run left (artifacts, candidate scripts) once nothing of the
 * sandbox runs any more. Its stdio MCP servers are closed, then every process is killed and waited for, so no process
 * can swap a file for a link while the host reads; without that certainty nothing is read (docs/security.md,
 * "Reading back from sandboxes"). Runs at most once, and only once the run's work started.
 */
export async function collect(ctx: RunContext): Promise<void> {
  const sandbox = ctx.held.sandbox;
  if (!sandbox || !ctx.tally.workStarted || ctx.tally.collected) return;
  ctx.tally.collected = true;
  await ctx.held.mcp?.close().catch(ignoreFailure(mcpGoesWithTheRun, ctx.services.log));
  try {
    await sandbox.stopProcesses();
  } catch (err) {
    ctx.timeline.record('log', {
      message: `Collected nothing from the sandbox: its processes could not be stopped (${errorMessage(err)})`,
    });
    return;
  }
  await artifacts(ctx, sandbox);
  await candidates(ctx, sandbox);
}

/** Files in /svc/outputs, up to 50 MiB in all, kept as the run's artifacts. */
async function artifacts(ctx: RunContext, sandbox: Sandbox): Promise<void> {
  try {
    const { files, truncated } = await sandbox.readDir('/svc/outputs', artifactCap);
    const kept = files.filter((f) => f.name !== '.keep');
    for (const f of kept) await ctx.services.files.saveArtifact(ctx.runId, f.name, f.content);
    const note = truncated ? ' (the 50 MiB cap left some out)' : '';
    if (kept.length > 0 || truncated)
      ctx.timeline.record('log', {
        message: `Collected ${kept.length} artifact(s)${note}`,
        artifacts: kept.map((f) => ({ name: f.name, size: f.size })),
      });
  } catch (err) {
    ctx.timeline.record('log', { message: `Could not collect artifacts: ${errorMessage(err)}` });
  }
}

/** Scripts the agent wrote in /svc/candidates for reflection to consider, at most 1 MiB. */
async function candidates(ctx: RunContext, sandbox: Sandbox): Promise<void> {
  try {
    const { files } = await sandbox.readDir('/svc/candidates', candidatesCap);
    for (const f of files) if (f.name !== '.keep') await ctx.services.files.saveCandidate(ctx.runId, f.name, f.content);
  } catch (err) {
    ctx.timeline.record('log', { message: `Could not collect candidate scripts: ${errorMessage(err)}` });
  }
}
