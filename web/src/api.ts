import type { ErrorBody, FieldError } from './types.js';

/** An error answer of the API (its `{code, message, fields, requestId}` body), or a network failure. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly fields: FieldError[] = [],
    readonly requestId: string | null = null,
  ) {
    super(message);
  }

  /** The message for one field, as the API named it (`name`, `limits.timeoutSeconds`). */
  field(name: string): string | undefined {
    return this.fields.find((f) => f.field === name)?.message;
  }
}

/** Fired when the API says the caller is not signed in; the app answers by showing the sign-in page. */
export const signedOutEvent = 'svc:signed-out';

function isErrorBody(v: unknown): v is ErrorBody {
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof (v as ErrorBody).code === 'string' &&
    typeof (v as ErrorBody).message === 'string'
  );
}

/** One call of the JSON API with the session cookie; error answers become ApiError. */
export async function api<T>(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
  let res: Response;
  try {
    res = await fetch(path, {
      method,
      credentials: 'same-origin',
      headers:
        body === undefined
          ? { accept: 'application/json' }
          : { accept: 'application/json', 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal,
    });
  } catch (err) {
    if (err instanceof DOMException && err.name === 'AbortError') throw err;
    throw new ApiError(0, 'network_error', 'The server could not be reached. Check that it is running and try again.');
  }
  if (res.status === 204) return undefined as T;
  const text = await res.text();
  let parsed: unknown = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = null;
  }
  if (!res.ok) {
    const e = isErrorBody(parsed)
      ? new ApiError(res.status, parsed.code, parsed.message, parsed.fields ?? [], parsed.requestId ?? null)
      : new ApiError(res.status, 'http_error', `The server answered ${res.status} ${res.statusText}`.trim());
    if (res.status === 401 && e.code === 'not_signed_in') window.dispatchEvent(new Event(signedOutEvent));
    throw e;
  }
  return parsed as T;
}

export const get = <T>(path: string, signal?: AbortSignal) => api<T>('GET', path, undefined, signal);
export const post = <T>(path: string, body: unknown = {}) => api<T>('POST', path, body);
export const patch = <T>(path: string, body: unknown) => api<T>('PATCH', path, body);
export const del = (path: string) => api<void>('DELETE', path);

/** A query string from the values that are set, in a stable order. */
export function qs(params: Record<string, string | number | undefined | null>): string {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') p.set(k, String(v));
  const s = p.toString();
  return s ? `?${s}` : '';
}
