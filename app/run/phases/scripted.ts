import { runMain } from '../scripted.js';
import { RunEnd, type PreparedRun } from './context.js';

/**
 * The scripted phase (docs/runs.md): a scripted run whose playbook has a main script runs it, with half of the time
 * left. Its result waits in the context for the verify phase; the stop signal ends the run here. Other runs skip it.
 */
export async function scripted(ctx: PreparedRun): Promise<RunEnd | null> {
  if (ctx.run.mode !== 'scripted' || ctx.playbook.main === null) return null;
  const { clock } = ctx.services;
  ctx.tally.mainRan = true;
  ctx.tally.workStarted = true;
  ctx.main = await runMain({
    sandbox: ctx.sandbox,
    user: ctx.user,
    timeline: ctx.timeline,
    signal: ctx.stop.signal,
    clock,
    remainingMs: () => ctx.deadline - clock(),
  });
  const session = ctx.session;
  return ctx.stop.stopped ? RunEnd.stopped(ctx.stop, session.outputs) : null;
}
