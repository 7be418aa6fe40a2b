/**
 * Why a run ended before its work did (docs/runs.md, "Stop reasons"), and the words its error says then. The words
 * are stored with the run and shown to people, so they stay as they are; code names them through these constants.
 */
export const stopReasons = {
  /** Someone cancelled the run, or the runner executing it shut down (which cancels what it runs). */
  cancelled: 'cancelled',
  /** The run's time limit passed. */
  timeout: 'timeout',
  /** The run reached its turn or cost limit. */
  limit: 'limit',
  /** The runner executing the run is gone; the run is never resumed. */
  interrupted: 'interrupted',
} as const;

export type StopReason = (typeof stopReasons)[keyof typeof stopReasons];

/** The reasons that fire a run's stop signal while it works (the other two end it from outside its work). */
export type SignalledStop = typeof stopReasons.cancelled | typeof stopReasons.timeout;

export const stopMessages = {
  /** A run's work cut off by its stop signal; a cancelled run's error then becomes `cancelled`. */
  stopped: 'run was stopped',
  /** What a command or script cut off by a cancel tells the model. */
  toolStopped: 'the run was stopped',
  cancelled: 'Cancelled',
  cancelledBeforeStart: 'Cancelled before it started',
  timeout: 'the run exceeded its time limit',
  imageWaitTimeout: 'the run exceeded its time limit while waiting for the job image',
  shadowTimeout: 'the shadow run exceeded its time limit',
  interrupted: 'interrupted: the replica executing this run stopped',
} as const;

/** The error of a run that used up its turns. */
export function turnLimitMessage(maxTurns: number): string {
  return `the run exceeded its limit of ${maxTurns} turn${maxTurns === 1 ? '' : 's'}`;
}

/** The error of a run that used up its cost limit (micro-USD). */
export function costLimitMessage(maxCostMicroUsd: number): string {
  return `the run exceeded its cost limit of $${(maxCostMicroUsd / 1e6).toFixed(2)}`;
}

/** Whether a run's error only says that its stop signal cut the work off (a cancel then words it `Cancelled`). */
export function isStopMessage(error: string | null): boolean {
  return error === stopMessages.stopped || error === stopMessages.toolStopped;
}

/** The final status and error of work its stop signal cut off. */
export function stoppedOutcome(reason: SignalledStop): { status: 'cancelled' | 'timed_out'; error: string } {
  return reason === stopReasons.timeout
    ? { status: 'timed_out', error: stopMessages.timeout }
    : { status: 'cancelled', error: stopMessages.stopped };
}
