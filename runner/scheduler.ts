import { scheduleDecider, scheduleStreamId } from '../domain/schedule.js';
import { jobsCollection, type JobDoc } from '../projections/jobs.js';
import type { ProjectionEngine } from '../projections/engine.js';
import type { CommandBus, CommandContext } from '../app/commands.js';
import type { Runs } from '../app/runs.js';
import type { DocumentStore } from '../store/document-store.js';

/** Time as the scheduler sees it: the real clock in production, a hand-moved one in tests. */
export interface Clock {
  now(): number;
}
export const systemClock: Clock = { now: () => Date.now() };

export interface SchedulerLogger {
  error(obj: object, msg: string): void;
}

/**
 * Fires due schedule occurrences. The `jobs` read model says which occurrence is next (`nextRunAt`); firing it is an
 * expected-revision append to the job's schedule stream, so any number of schedulers fire each occurrence once, and
 * the trigger goes through the same path as every other (trigger `schedule`).
 */
export class Scheduler {
  private timer: NodeJS.Timeout | null = null;
  private ticking: Promise<number> | null = null;

  constructor(
    private readonly bus: CommandBus,
    private readonly docs: DocumentStore,
    private readonly engine: ProjectionEngine,
    private readonly runs: Runs,
    private readonly log: SchedulerLogger,
    private readonly clock: Clock = systemClock,
  ) {}

  start(intervalMs = 1000): void {
    this.timer = setInterval(
      () => void this.tick().catch((err: unknown) => this.log.error({ err }, 'schedule tick failed')),
      intervalMs,
    );
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.ticking?.catch(() => 0);
  }

  /** Fires every occurrence due at the clock's now; answers how many this scheduler fired. */
  tick(): Promise<number> {
    this.ticking ??= this.fireDue().finally(() => {
      this.ticking = null;
    });
    return this.ticking;
  }

  private async fireDue(): Promise<number> {
    const now = this.clock.now();
    const due = await this.docs
      .collection<JobDoc>(jobsCollection)
      .find({ archived: false, enabled: true, nextRunAt: { $lte: now } }, { sort: [['nextRunAt', 1]], limit: 100 });
    let fired = 0;
    for (const job of due) {
      const occurrence = job.nextRunAt!;
      const ctx: CommandContext = {
        workspaceId: job.workspaceId,
        actor: { type: 'scheduler', id: null },
        requestId: null,
      };
      const result = await this.bus.execute(
        scheduleStreamId(job._id),
        scheduleDecider,
        { type: 'FireSchedule', jobId: job._id, occurrence, firedAt: now },
        ctx,
      );
      if (result.events.length === 0) continue;
      fired++;
      await this.runs
        .trigger(
          job.workspaceId,
          job._id,
          { trigger: 'schedule', triggeredBy: null, input: {}, instructions: null },
          { ...ctx, causationId: null },
        )
        .catch((err: unknown) => {
          this.log.error({ err, jobId: job._id }, 'scheduled trigger failed');
        });
      // The next occurrence becomes visible once the projector has seen this firing.
      await this.engine.waitFor(result.position, 2000);
    }
    return fired;
  }
}
