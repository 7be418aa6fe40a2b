import type { Logger } from 'pino';
import type { ProjectionEngine } from '../projections/engine.js';
import type { ProjectionLease } from '../projections/lease.js';
import { errorMessage } from '../domain/error-message.js';
import { ignoreFailure } from '../domain/ignore-failure.js';

/**
 * The projector role of `svc serve`: runs the projection engine only while this process holds the projector lease,
 * and stands by otherwise, asking again every poll interval. Its timer is what keeps a projector-only process alive
 * (docs/design.md, "Projector lease").
 */
export class ProjectorRole {
  private timer: NodeJS.Timeout | null = null;
  private leading = false;
  private stopped = false;
  /** Standing by is logged once, not at every poll. */
  private announced = false;
  private ticking: Promise<void> | null = null;

  constructor(
    private readonly engine: ProjectionEngine,
    private readonly lease: ProjectionLease,
    private readonly log: Logger,
  ) {
    engine.guardWrites(() => this.lease.held);
  }

  /** Whether this process writes the read models now. */
  get isLeading(): boolean {
    return this.leading;
  }

  /** The first attempt is awaited: a process alone starts projecting before it serves anything. */
  async start(): Promise<void> {
    await this.tick();
  }

  private tick(): Promise<void> {
    // A failed start or stop of the engine is logged and tried again at the next tick; it must not stop the ticks.
    const step = this.step().catch((err: unknown) =>
      this.log.error({ err: errorMessage(err) }, 'projector role step failed; trying again'),
    );
    this.ticking = step.finally(() => {
      this.ticking = null;
      if (!this.stopped) {
        this.timer = setTimeout(
          () => {
            this.tick().catch(ignoreFailure('each step logs its own failure'));
          },
          this.leading ? this.lease.times.renewMs : this.lease.times.pollMs,
        );
      }
    });
    return this.ticking;
  }

  private async step(): Promise<void> {
    let won = false;
    try {
      won = await this.lease.acquire();
    } catch (err) {
      // The store is unreachable: keep projecting while the lease surely holds, never past it.
      this.log.error({ err: errorMessage(err) }, 'could not renew the projector lease');
      won = this.leading && this.lease.held;
    }
    if (this.stopped) return;
    if (!won && !this.leading && !this.announced) {
      this.announced = true;
      const holder = await this.lease.current();
      this.log.info({ holder: holder?.holder ?? null }, 'standing by for the projector lease');
    }
    if (won && !this.leading) {
      this.leading = true;
      this.log.info({ holder: this.lease.holder }, 'took the projector lease; projecting');
      await this.engine.start();
    } else if (!won && this.leading) {
      this.leading = false;
      this.log.error({ holder: this.lease.holder }, 'lost the projector lease; standing by');
      await this.engine.stop();
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.ticking;
    if (this.leading) {
      this.leading = false;
      await this.engine.stop();
    }
    await this.lease.release();
  }
}
