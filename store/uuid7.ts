import { randomFillSync } from 'node:crypto';

/**
 * Random bytes for ids, filled a few hundred ids at a time: one call into the CSPRNG per id cost a job creation about
 * as much as its decider (docs/performance.md, "Job creations through the API: CPU per creation").
 */
const pool = Buffer.alloc(16 * 256);
let poolUsed = pool.length;

/**
 * UUID v7: time-ordered, so ids sort by creation and index well. A key that only grows is written at the right edge
 * of its index, one page for a whole group commit, where random ids land on a page each (docs/performance.md,
 * "Fewer pages, fewer calls (2026-11-27)").
 */
export function uuid7(now: number = Date.now()): string {
  if (poolUsed === pool.length) {
    randomFillSync(pool);
    poolUsed = 0;
  }
  const bytes = pool.subarray(poolUsed, poolUsed + 16);
  poolUsed += 16;
  bytes.writeUIntBE(now, 0, 6);
  bytes[6] = (bytes[6]! & 0x0f) | 0x70;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
