import { errorMessage } from './error-message.js';

/** Where an ignored failure is noted: the service's pino logger fits, at debug level. */
export interface DebugLog {
  debug(obj: object, msg: string): void;
}

/**
 * A rejection handler for the few promises whose failure changes nothing (docs/design.md, "Failure handling"):
 * `promise.catch(ignoreFailure('the sandbox is destroyed next', log))`. `reason` says why ignoring is right there; with
 * a log at hand the failure is noted at debug level with that reason, so an ignored error still leaves a trace.
 * Where the failure matters to the caller or to the run's record, let it reach them instead.
 */
export function ignoreFailure(reason: string, log?: DebugLog): (err: unknown) => void {
  return (err) => log?.debug({ reason, error: errorMessage(err) }, `ignored a failure: ${reason}`);
}
