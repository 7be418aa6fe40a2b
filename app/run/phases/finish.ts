import { ignoreFailure } from '../../../domain/ignore-failure.js';
import { wantsReflection } from '../../../domain/reflection.js';
import { redactValue } from '../../../domain/redact.js';
import type { RunOutcome } from '../../../domain/run.js';
import { collect } from './collect.js';
import { mcpGoesWithTheRun, type RunContext, type RunEnd } from './context.js';
import { cancelWins, unrecordedFails } from './policy.js';

/**
 * The finish phase (docs/runs.md): collects what the sandbox left if the run's work started and nothing collected it
 * yet, releases the session, the MCP servers and the sandbox, and records the final status: first on the timeline
 * (streams end when they see it, so the timeline is complete before the run's final event), then on the run.
 */
export async function finish(ctx: RunContext, end: RunEnd): Promise<void> {
  const { services, runId } = ctx;
  await collect(ctx);
  const cancelled = cancelWins(end, ctx.stop.cancelled);
  const llmSpend = await release(ctx);
  await ctx.timeline.flush();
  const final = unrecordedFails(cancelled, ctx.timeline.failed);
  const outcome = outcomeOf(ctx, final, llmSpend);
  await ctx.timeline
    .append('run.status', { status: outcome.status, ...(outcome.error ? { error: outcome.error } : {}) })
    .catch((err: unknown) => services.log.error({ err, runId }, 'could not write the final status to the timeline'));
  await recordScriptCalls(ctx);
  await services.runs.finish(ctx.run.jobId, runId, outcome, ctx.command);
}

/** Gives back what the run holds; stdio MCP servers run inside the sandbox, so they close before it goes. */
async function release(ctx: RunContext): Promise<number> {
  const { clock, log } = ctx.services;
  const { llmSpend } = ctx.held.session?.close() ?? { llmSpend: 0 };
  await ctx.held.mcp?.close().catch(ignoreFailure(mcpGoesWithTheRun, log));
  const sandbox = ctx.held.sandbox;
  if (sandbox) {
    const t0 = clock();
    await sandbox
      .destroy()
      .catch((err: unknown) => log.error({ err, runId: ctx.runId }, 'could not destroy the sandbox'));
    ctx.timeline.record('sandbox.destroy', { sandboxId: sandbox.id }, { ms: clock() - t0 });
  }
  return llmSpend;
}

/** The run's outcome as stored: texts redacted, spend and tokens of the agent and of `svc llm` added up. */
function outcomeOf(ctx: RunContext, end: RunEnd, llmSpend: number): RunOutcome {
  const { tally, redact } = ctx;
  const llmUsage = ctx.held.session?.llmUsage ?? { input: 0, output: 0 };
  const { usage } = tally;
  return {
    status: end.status,
    error: end.error === null ? null : redact(end.error),
    summary: end.summary === null ? null : redact(end.summary),
    outputs: (redactValue(end.outputs, redact) ?? {}) as Record<string, unknown>,
    cost: tally.agentCost + llmSpend,
    turns: tally.turns,
    tokIn: usage.input + usage.cacheRead + usage.cacheWrite + llmUsage.input,
    tokOut: usage.output + llmUsage.output,
    fellBack: tally.fellBack,
    verifyCost: tally.verifyCost,
    verifyTokens: tally.verifyTokens,
    reflection: wantsReflection({ ...tally, status: end.status, mode: ctx.run.mode }) ? 'pending' : 'skipped',
    finishedAt: ctx.services.clock(),
  };
}

/** Toolkit calls and failures of the run, kept beside the playbook's versions whether or not the job learns. */
async function recordScriptCalls(ctx: RunContext): Promise<void> {
  if (ctx.tally.scriptCalls.size === 0) return;
  const counts = [...ctx.tally.scriptCalls].map(([name, c]) => ({ name, ...c }));
  await ctx.services.ports
    .recordScriptCalls(ctx.command, ctx.workspaceId, ctx.run.jobId, ctx.runId, counts)
    .catch((err: unknown) => ctx.services.log.error({ err, runId: ctx.runId }, 'could not record toolkit calls'));
}
