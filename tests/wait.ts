import { setTimeout as delay } from 'node:timers/promises';

/**
 * Waiting in tests: on a condition with a deadline, never for a fixed time. A fixed sleep is either too short under
 * load (the test flakes) or too long everywhere (the suite crawls); a poll with a generous deadline is as fast as the
 * condition and only slow when the test is failing anyway.
 */

export interface WaitOptions {
  /** How long the condition may take before the wait fails (generous: a loaded 2-core machine is slow). */
  timeoutMs?: number;
  /** How often the condition is probed. */
  intervalMs?: number;
}

type Probe<T> = () => T | null | undefined | false | Promise<T | null | undefined | false>;

/**
 * Probes until `probe` answers something truthy and answers that. Past the deadline it throws "timed out after N ms
 * waiting for <what>", with the last error the probe threw, if any, so a failure says what never happened.
 */
export async function waitFor<T>(what: string, probe: Probe<T>, options: WaitOptions = {}): Promise<T> {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const intervalMs = options.intervalMs ?? 20;
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown = undefined;
  for (;;) {
    try {
      const got = await probe();
      if (got) return got;
      lastError = undefined;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      const why = lastError === undefined ? '' : ` (last probe threw: ${String(lastError)})`;
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${why}`);
    }
    await delay(intervalMs);
  }
}

/**
 * A bounded negative check: asserts that `happened` stays false for `forMs`. Only for properties that can only be
 * observed as an absence (a message that must not arrive, a process that must keep running); each call site says why
 * no event can stand in for it. Probed throughout, so it fails as soon as the thing happens.
 */
export async function staysFalse(
  what: string,
  happened: () => boolean | Promise<boolean>,
  forMs: number,
  intervalMs = 20,
): Promise<void> {
  const until = Date.now() + forMs;
  for (;;) {
    if (await happened()) throw new Error(`expected ${what} not to happen within ${forMs} ms, but it did`);
    if (Date.now() >= until) return;
    await delay(Math.min(intervalMs, Math.max(1, until - Date.now())));
  }
}
