import { errorMessage } from '../../../domain/error-message.js';
import { runDecider, runStreamId } from '../../../domain/run.js';
import { isStopMessage, stopMessages } from '../../../domain/run-stop.js';
import { RunEnd, type PreparedRun, type RunContext } from './context.js';
import { briefOf, type FellShort } from './verify.js';

/*
 * The run's one error policy (docs/runs.md, "Error policy"). A phase ends the run by answering a RunEnd (a failure
 * it can word, a stop, or success); a thrown error becomes a failure here; a main script that fell short hands over to
 * the agent here. Whatever the end, the finish phase runs once, and these rules give it the final word.
 */

/** A thrown error as the run's end: logged with the run, and the run fails with its message. */
export function thrownEnd(ctx: RunContext, err: unknown): RunEnd {
  ctx.services.log.error({ err, runId: ctx.runId }, 'run failed unexpectedly');
  return RunEnd.failed(`The run failed unexpectedly: ${errorMessage(err)}`);
}

/**
 * A cancel wins over every end but success, whatever fired the stop signal first; an error that only says the
 * work was stopped then reads `Cancelled`.
 */
export function cancelWins(end: RunEnd, cancelled: boolean): RunEnd {
  if (!cancelled || end.status === 'succeeded') return end;
  const error = !end.error || isStopMessage(end.error) ? stopMessages.cancelled : end.error;
  return new RunEnd('cancelled', error, end.summary, end.outputs);
}

/**
 * A run whose record could not be written does not pass; the run itself still ends (docs/design.md, "Failure
 * handling").
 */
export function unrecordedFails(end: RunEnd, timelineFailure: Error | null): RunEnd {
  if (!timelineFailure || end.status !== 'succeeded') return end;
  const error = `The run's timeline could not be written: ${timelineFailure.message}`;
  return new RunEnd('failed', error, end.summary, end.outputs);
}

/**
 * A main script that fell short: the agent takes over in the same sandbox, told what the script did, and the
 * script's `svc fail` is forgotten so that the agent's success counts (docs/learning.md, "Fallback").
 */
export async function fallBack(ctx: PreparedRun, short: FellShort): Promise<void> {
  const reason = short.result.reason;
  await ctx.timeline.append('fallback', { reason: reason.charAt(0).toUpperCase() + reason.slice(1) });
  await ctx.services.bus.execute(runStreamId(ctx.runId), runDecider, { type: 'FallBackRun', reason }, ctx.command);
  await ctx.timeline.append('run.status', { status: 'running' });
  ctx.tally.fellBack = true;
  ctx.session.clearFail();
  ctx.brief = briefOf(ctx, short);
}
