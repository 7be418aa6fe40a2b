export interface GuardLogger {
  error(obj: object, msg: string): void;
  fatal(obj: object, msg: string): void;
}

/** How long an orderly stop after an uncaught exception may take before the process exits anyway. */
const stopDeadlineMs = 10_000;

/**
 * Last lines of defence for `svc serve` (docs/design.md, "Failure handling"). Every promise of the service is
 * awaited or handled (the lint keeps it so); a rejection that still escapes is a bug, logged with its stack, and the
 * server goes on serving, because a rejected promise leaves no code half-run. An uncaught exception can leave any
 * state half-changed, so it is logged and the server stops in order and exits 1 for its supervisor to start it
 * again: acknowledged writes are in the event log, which survives even a SIGKILL.
 * Answers a function that removes the handlers.
 */
export function guardProcess(
  log: GuardLogger,
  stop: () => Promise<void>,
  exit: (code: number) => void = (code) => process.exit(code),
): () => void {
  let stopping = false;
  const onRejection = (reason: unknown) => {
    log.error(
      { err: reason },
      'unhandled promise rejection; the server goes on (a bug: every promise should be handled)',
    );
  };
  const onException = (err: Error, origin: string) => {
    log.fatal({ err, origin }, 'uncaught exception; stopping the server');
    if (stopping) return;
    stopping = true;
    setTimeout(() => exit(1), stopDeadlineMs);
    stop().then(
      () => exit(1),
      (stopErr: unknown) => {
        log.error({ err: stopErr }, 'error while stopping after an uncaught exception');
        exit(1);
      },
    );
  };
  process.on('unhandledRejection', onRejection);
  process.on('uncaughtException', onException);
  return () => {
    process.off('unhandledRejection', onRejection);
    process.off('uncaughtException', onException);
  };
}
