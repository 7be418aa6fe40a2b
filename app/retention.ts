import { DomainError } from '../domain/decider.js';
import { runDecider, runStreamId } from '../domain/run.js';
import { dayMs } from '../domain/stats.js';
import { workspacesCollection } from '../projections/identity.js';
import { runsCollection, type RunDoc } from '../projections/runs.js';
import type { RunFiles } from '../adapters/run-files.js';
import type { Doc, DocumentStore } from '../store/document-store.js';
import type { EventStore } from '../store/event-store.js';
import type { CommandBus, CommandContext } from './commands.js';
import { timelineStreamId } from './timeline.js';

/** Runs purged per read: a pass over a large backlog goes in pages. */
const pageSize = 200;

export interface RetentionReport {
  workspaces: number;
  purged: number;
}

/**
 * Retention (docs/design.md, "Retention"): the timeline and files of runs that finished more than the workspace's
 * `retentionDays` ago are removed; the run itself (its row, its figures, the statistics) stays. Each purge ends
 * with a `RunPurged` fact on the run's stream, which is what makes a pass safe to repeat or to interrupt.
 */
export class Retention {
  constructor(
    private readonly bus: CommandBus,
    private readonly events: EventStore,
    private readonly docs: DocumentStore,
    private readonly files: Pick<RunFiles, 'remove'>,
    private readonly retentionDays: (workspaceId: string) => Promise<number>,
    private readonly clock: () => number = Date.now,
  ) {}

  async pass(): Promise<RetentionReport> {
    const workspaces = await this.docs.collection<Doc>(workspacesCollection).find({});
    let purged = 0;
    for (const w of workspaces) purged += await this.purgeWorkspace(w._id);
    return { workspaces: workspaces.length, purged };
  }

  async purgeWorkspace(workspaceId: string): Promise<number> {
    const days = await this.retentionDays(workspaceId);
    const before = this.clock() - days * dayMs;
    const ctx: CommandContext = { workspaceId, actor: { type: 'system', id: null }, requestId: null };
    let purged = 0;
    // The read model shows a purge a moment later: runs seen in this pass are not tried twice.
    const seen = new Set<string>();
    for (;;) {
      const due = await this.docs.collection<RunDoc>(runsCollection).find(
        {
          workspaceId,
          finishedAt: { $lt: before },
          $or: [{ purgedAt: { $exists: false } }, { purgedAt: null }],
        },
        { sort: [['finishedAt', 1]], limit: pageSize },
      );
      const fresh = due.filter((r) => !seen.has(r._id));
      for (const run of fresh) {
        seen.add(run._id);
        if (await this.purge(run._id, days, ctx)) purged++;
      }
      // Runs left (pending reflections) are tried again by the next pass.
      if (due.length < pageSize || fresh.length === 0) return purged;
    }
  }

  private async purge(runId: string, days: number, ctx: CommandContext): Promise<boolean> {
    const { state } = await this.bus.load(runStreamId(runId), runDecider);
    if (state.status === 'none' || state.purged || state.reflection === 'pending') return false;
    await this.events.deleteStream(timelineStreamId(runId));
    await this.files.remove(runId);
    try {
      const done = await this.bus.execute(
        runStreamId(runId),
        runDecider,
        { type: 'PurgeRun', now: this.clock(), retentionDays: days },
        ctx,
      );
      return done.events.length > 0;
    } catch (err) {
      if (err instanceof DomainError && err.code === 'not_found') return false;
      throw err;
    }
  }
}
