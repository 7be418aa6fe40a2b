import type { Retention } from '../app/retention.js';

export interface RetentionLogger {
  info(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** Daily at 03:17 UTC, plus up to 10 minutes of jitter so replicas and instances do not all start at once. */
const hourUtc = 3;
const minuteUtc = 17;
const jitterMs = 10 * 60 * 1000;
const dayMs = 24 * 60 * 60 * 1000;

/** The next 03:17 UTC strictly after `now`. */
export function nextRetentionAt(now: number): number {
  const d = new Date(now);
  const today = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate(), hourUtc, minuteUtc);
  return today > now ? today : today + dayMs;
}

/** The scheduler role's retention pass (docs/design.md, "Retention"); `svc admin apply-retention` runs one by hand. */
export class RetentionLoop {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;

  constructor(
    private readonly retention: Pick<Retention, 'pass'>,
    private readonly log: RetentionLogger,
    private readonly random: () => number = Math.random,
  ) {}

  start(): void {
    const now = Date.now();
    const at = nextRetentionAt(now) + Math.floor(this.random() * jitterMs);
    // Unref'd: a pending daily pass must not keep a stopping process alive.
    this.timer = setTimeout(() => {
      this.running = this.retention
        .pass()
        .then((report) => this.log.info(report, 'retention pass done'))
        .catch((err: unknown) => this.log.error({ err }, 'retention pass failed; the next one tries again'))
        .finally(() => {
          this.running = null;
          if (this.timer) this.start();
        });
    }, at - now).unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
  }
}
