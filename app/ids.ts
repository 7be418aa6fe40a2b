import { randomBytes } from 'node:crypto';
import { uuid7 } from '../store/uuid7.js';

/** UUID v7: time-ordered, so ids sort by creation and index well (the event store makes its events' ids the same way). */
export function newId(now: number = Date.now()): string {
  return uuid7(now);
}

/** A random secret for tokens: url-safe, 32 bytes of entropy. */
export function newSecret(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}
