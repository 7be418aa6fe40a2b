import { DomainError, type DomainEvent } from './decider.js';
import { streamCategory } from './stream.js';

/**
 * A job's key/value state (docs/jobs.md, "State"): the events of its stream and the limit rules, pure so that the
 * store, the REST routes and a shadow run's overlay all decide the same way.
 */

export const jobStateStream = streamCategory<JobStateEvent>('jobstate');
export const jobStateStreamId = jobStateStream.id;

export const stateLimits = { keyChars: 200, valueBytes: 1024 * 1024, keys: 1000, totalBytes: 16 * 1024 * 1024 };

/**
 * `keys` and `bytes` are the job's totals after the event: applying an event to the documents needs nothing but the
 * event, so it can be repeated (another process catching up) without counting twice.
 */
export type JobStateEvent =
  | DomainEvent<'JobStateSet', { key: string; value: string; size: number; keys: number; bytes: number }>
  | DomainEvent<'JobStateDeleted', { key: string; keys: number; bytes: number }>;

/** What the limits look at: how many keys the job has and how many bytes its keys and values take. */
export interface StateUsage {
  keys: number;
  bytes: number;
}

/** Bytes a key/value pair counts for: both in UTF-8. */
export const entrySize = (key: string, value: string) => Buffer.byteLength(key) + Buffer.byteLength(value);

const tooLarge = (field: string, message: string) => DomainError.validation([{ field, code: 'too_large', message }]);

export function checkKey(key: string): void {
  if (key.length === 0)
    throw DomainError.validation([{ field: 'key', code: 'required', message: 'must not be empty' }]);
  if ([...key].length > stateLimits.keyChars)
    throw tooLarge(
      'key',
      `is longer than ${stateLimits.keyChars} characters (keys are limited to 200 characters and values to 1 MiB)`,
    );
}

/**
 * Decides a set against the job's usage and the key's current size (null: a new key). Answers the usage after it.
 * A new key is refused at 1,000 keys; a set that grows the total beyond 16 MiB fails, one that keeps or shrinks it
 * succeeds.
 */
export function decideSet(
  key: string,
  value: string,
  usage: StateUsage,
  oldSize: number | null,
): StateUsage & { size: number } {
  checkKey(key);
  if (Buffer.byteLength(value) > stateLimits.valueBytes)
    throw tooLarge('value', 'is larger than 1 MiB (keys are limited to 200 characters and values to 1 MiB)');
  if (oldSize === null && usage.keys >= stateLimits.keys) {
    throw DomainError.validation([
      {
        field: 'key',
        code: 'too_many_keys',
        message: `is new, and a job keeps at most ${stateLimits.keys} keys (existing keys stay writable)`,
      },
    ]);
  }
  const size = entrySize(key, value);
  const bytes = usage.bytes - (oldSize ?? 0) + size;
  if (size > (oldSize ?? 0) && bytes > stateLimits.totalBytes)
    throw tooLarge('value', 'would grow the job state beyond 16 MiB of keys and values');
  return { size, keys: usage.keys + (oldSize === null ? 1 : 0), bytes };
}

/** Answers the usage after deleting a key of this size. */
export function decideDelete(usage: StateUsage, oldSize: number): StateUsage {
  return { keys: Math.max(0, usage.keys - 1), bytes: Math.max(0, usage.bytes - oldSize) };
}
