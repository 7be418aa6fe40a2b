import { fallbackBrief } from '../../../domain/verify-run.js';
import { runDecider, runStreamId } from '../../../domain/run.js';
import { verifyMain, type VerifyResult } from '../scripted.js';
import { RunEnd, type PreparedRun } from './context.js';

/** A main script that fell short: the agent takes over in the same sandbox (./policy.ts, `fallBack`). */
export class FellShort {
  constructor(readonly result: Extract<VerifyResult, { kind: 'fell_short' }>) {}
}

/**
 * The verify phase (docs/runs.md): what the main script did is checked (exit code, declared outputs, the playbook's
 * checks, then the utility model's verdict when asked). Passed ends the run as succeeded; short of that the run falls
 * back to the agent. Runs without a main script skip it.
 */
export async function verify(ctx: PreparedRun): Promise<RunEnd | FellShort | null> {
  const main = ctx.main;
  if (main === null) return null;
  const { bus, clock } = ctx.services;
  await bus.execute(runStreamId(ctx.runId), runDecider, { type: 'VerifyRun' }, ctx.command);
  await ctx.timeline.append('run.status', { status: 'verifying' });
  const spec = ctx.job.spec as { outputs?: Array<{ name: string }>; successCriteria?: string[] };
  const result = await verifyMain(
    {
      sandbox: ctx.sandbox,
      user: ctx.user,
      timeline: ctx.timeline,
      session: ctx.session,
      signal: ctx.stop.signal,
      clock,
      declaredOutputs: (spec.outputs ?? []).map((o) => o.name),
      verify: ctx.playbook.verify,
      instruction: ctx.job.instruction,
      successCriteria: spec.successCriteria ?? [],
      verdictModel: ctx.utility,
    },
    main,
  );
  ctx.tally.verifyCost = result.verifyCost;
  ctx.tally.verifyTokens = result.verifyUsage.input + result.verifyUsage.output;
  if (result.kind === 'passed') return new RunEnd('succeeded', null, result.summary, result.outputs);
  return new FellShort(result);
}

/** What the agent is told of the main script that fell short (docs/learning.md, "Fallback"). */
export function briefOf(ctx: PreparedRun, short: FellShort): string {
  const session = ctx.session;
  return fallbackBrief({
    reason: short.result.reason,
    lastStep: session.steps.last,
    exitCode: short.result.exitCode,
    output: short.result.output,
    outputs: session.outputs,
    actions: session.actions,
  });
}
