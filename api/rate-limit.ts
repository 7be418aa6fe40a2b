import { ApiError } from './errors.js';

/**
 * A token bucket per key: `burst` calls at once, refilled at `perMinute`. In-process; a scaled setup rate-limits
 * per api process, which errs on the side of letting calls through.
 */
export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    private readonly perMinute: number,
    private readonly burst: number,
    private readonly clock: () => number = Date.now,
  ) {}

  /** Throws 429 `rate_limited` with Retry-After when the key has no call left. */
  take(key: string): void {
    const now = this.clock();
    const rate = this.perMinute / 60_000;
    const b = this.buckets.get(key) ?? { tokens: this.burst, at: now };
    b.tokens = Math.min(this.burst, b.tokens + (now - b.at) * rate);
    b.at = now;
    if (b.tokens < 1) {
      this.buckets.set(key, b);
      const retryAfter = Math.max(1, Math.ceil((1 - b.tokens) / rate / 1000));
      throw new ApiError(429, 'rate_limited', `Too many calls; try again in ${retryAfter} s`, null, {
        'Retry-After': String(retryAfter),
      });
    }
    b.tokens -= 1;
    this.buckets.set(key, b);
    if (this.buckets.size > 10_000) this.evictFull(now, rate);
  }

  private evictFull(now: number, rate: number): void {
    for (const [k, v] of this.buckets) if (v.tokens + (now - v.at) * rate >= this.burst) this.buckets.delete(k);
  }
}
