import { runDecider, runStreamId } from '../../../domain/run.js';
import { runSetup } from '../setup.js';
import { RunEnd, type PreparedRun } from './context.js';

/**
 * The setup phase (docs/runs.md): the playbook's setup script, if any, then the job's MCP servers (stdio ones start
 * inside the sandbox) and the run marked running. Both come before any script or the agent.
 */
export async function setup(ctx: PreparedRun): Promise<RunEnd | null> {
  if (ctx.playbook.setup !== null) {
    const { clock } = ctx.services;
    const result = await runSetup(ctx.sandbox, ctx.playbook.setup, ctx.user, ctx.stop.signal, ctx.deadline - clock());
    const entry = { exitCode: result.exitCode, output: result.output };
    ctx.timeline.record('sandbox.setup', entry, { ms: result.ms });
    if (ctx.stop.stopped) return RunEnd.stopped(ctx.stop);
    if (result.exitCode !== 0) {
      ctx.tally.setupFailed = true;
      return RunEnd.failed(`The setup script failed with exit code ${result.exitCode}`);
    }
  }
  await ctx.mcp?.connect(ctx.sandbox);
  const started = {
    type: 'StartRun' as const,
    sandbox: { id: ctx.sandbox.id, backend: ctx.services.ports.backend.info().backend },
  };
  await ctx.services.bus.execute(runStreamId(ctx.runId), runDecider, started, ctx.command);
  await ctx.timeline.append('run.status', { status: 'running' });
  return null;
}
