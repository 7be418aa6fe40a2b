import type { RunFiles } from '../../adapters/run-files.js';
import type { EventStore } from '../../store/event-store.js';
import type { CommandBus } from '../commands.js';
import type { Runs } from '../runs.js';
import type { ExecutorPorts } from './ports.js';
import { agent } from './phases/agent.js';
import { openRunContext, RunEnd, type RunContext, type RunLogger, type RunServices } from './phases/context.js';
import { finish } from './phases/finish.js';
import { fallBack, thrownEnd } from './phases/policy.js';
import { prepare } from './phases/prepare.js';
import { provision } from './phases/provision.js';
import { scripted } from './phases/scripted.js';
import { setup } from './phases/setup.js';
import { FellShort, verify } from './phases/verify.js';

/**
 * One run from claim to final status, as a sequence of phases (docs/runs.md): provision, prepare, setup, scripted,
 * verify, agent, then collect and finish. It never throws once the run is read: whatever goes wrong ends the run
 * through the error policy (./phases/policy.ts), and the finish phase runs exactly once.
 */
export class RunExecutor {
  private readonly services: RunServices;

  constructor(
    bus: CommandBus,
    events: EventStore,
    runs: Pick<Runs, 'finish'>,
    ports: ExecutorPorts,
    files: RunFiles,
    log: RunLogger,
    clock: () => number = Date.now,
  ) {
    this.services = { bus, events, runs, ports, files, log, clock };
  }

  async execute(runId: string, cancel: AbortSignal): Promise<void> {
    const ctx = await openRunContext(this.services, runId, cancel);
    if (!ctx) return;
    try {
      const end = await this.work(ctx).catch((err: unknown) => thrownEnd(ctx, err));
      await finish(ctx, end).catch((err: unknown) =>
        this.services.log.error({ err, runId }, 'could not finish the run'),
      );
    } finally {
      ctx.stop.dispose();
    }
  }

  /** The phases before finish, in order; the first to answer an end ends the run's work. */
  private async work(ctx: RunContext): Promise<RunEnd> {
    const provisioned = await provision(ctx);
    if (provisioned instanceof RunEnd) return provisioned;
    const run = await prepare(provisioned);
    const early = (await setup(run)) ?? (await scripted(run)) ?? (await verify(run));
    if (early instanceof RunEnd) return early;
    if (early instanceof FellShort) await fallBack(run, early);
    return agent(run);
  }
}
