import { ModelError } from './types.js';

const overflow = /context (length|window)|prompt is too long|maximum context|too many tokens/i;

/**
 * Maps an SDK error (both SDKs expose `status` on API errors, none on connection failures) to the port's error:
 * 429, 529, 5xx and connection failures are transient; a 400/413 about the context window is an overflow.
 */
export function toModelError(err: unknown, started: boolean, aborted: boolean): ModelError {
  if (err instanceof ModelError) return err;
  const e = err as { status?: number; message?: string; name?: string };
  const message = e.message ?? String(err);
  if (aborted) return new ModelError(`the call was cancelled: ${message}`, null, false, false, started);
  const status = typeof e.status === 'number' ? e.status : null;
  if (status === null) return new ModelError(message, null, true, false, started);
  const transient = status === 429 || status === 529 || status >= 500;
  return new ModelError(
    message,
    status,
    transient,
    (status === 400 || status === 413) && overflow.test(message),
    started,
  );
}
