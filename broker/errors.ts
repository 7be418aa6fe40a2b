import { DomainError, type FieldError } from '../domain/decider.js';

/** A broker answer other than 200, in the API's error body (docs/api.md). */
export class BrokerError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly fields: FieldError[] | null = null,
  ) {
    super(message);
    this.name = 'BrokerError';
  }
}

export const invalid = (field: string, code: string, message: string) =>
  new BrokerError(400, 'validation_failed', `${field} ${message}`, [{ field, code, message }]);

const statusOf: Record<string, number> = {
  validation_failed: 400,
  invalid_request_body: 400,
  invalid_token: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  unsupported: 422,
  rate_limited: 429,
};

/** Domain refusals keep their code; anything else is an internal error. */
export function toBrokerError(err: unknown): BrokerError {
  if (err instanceof BrokerError) return err;
  if (err instanceof DomainError) return new BrokerError(statusOf[err.code] ?? 400, err.code, err.message, err.fields);
  return new BrokerError(500, 'internal_error', `the broker failed: ${(err as Error)?.message ?? String(err)}`);
}

/** A model call that failed on the provider's side (or timed out) answers 502 `provider_error`. */
export function providerError(err: unknown): BrokerError {
  if (err instanceof BrokerError || err instanceof DomainError) return toBrokerError(err);
  return new BrokerError(502, 'provider_error', `the model call failed: ${(err as Error)?.message ?? String(err)}`);
}
