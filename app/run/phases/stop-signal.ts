import { stopReasons, stoppedOutcome, type SignalledStop } from '../../../domain/run-stop.js';

/**
 * The one signal that cuts a run's work off, and why it fired: a cancel (the dispatcher's signal) or the run's
 * deadline, whichever came first (docs/runs.md, "Stop reasons").
 */
export class RunStopSignal {
  private readonly controller = new AbortController();
  private why: SignalledStop | null = null;
  private timer: NodeJS.Timeout | null = null;
  private readonly onCancel = () => this.fire(stopReasons.cancelled);

  constructor(private readonly cancel: AbortSignal) {
    if (cancel.aborted) this.fire(stopReasons.cancelled);
    else cancel.addEventListener('abort', this.onCancel, { once: true });
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get stopped(): boolean {
    return this.controller.signal.aborted;
  }

  /** Why the signal fired; null while it has not. */
  get reason(): SignalledStop | null {
    return this.why;
  }

  /** Whether a cancel was asked for, even after the signal fired for the deadline or the work ended. */
  get cancelled(): boolean {
    return this.cancel.aborted;
  }

  /** Fires the signal `ms` from now with the reason `timeout`. */
  armDeadline(ms: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => this.fire(stopReasons.timeout), Math.max(0, ms));
  }

  /** What a timeout, else a cancel, makes of the run: its final status and error. */
  outcome(): { status: 'cancelled' | 'timed_out'; error: string } {
    return stoppedOutcome(this.why ?? stopReasons.cancelled);
  }

  dispose(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.cancel.removeEventListener('abort', this.onCancel);
  }

  private fire(reason: SignalledStop): void {
    this.why ??= reason;
    this.controller.abort();
  }
}
