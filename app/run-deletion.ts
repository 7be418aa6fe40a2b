import { DomainError } from '../domain/decider.js';
import { jobRunsDecider, jobRunsStreamId } from '../domain/job-runs.js';
import { foldFigures } from '../domain/run-figures.js';
import { upcast } from '../domain/upcast.js';
import { isLive, runDecider, runStreamId } from '../domain/run.js';
import { runsCollection, type RunDoc } from '../projections/runs.js';
import type { RunFiles } from '../adapters/run-files.js';
import type { DocumentStore } from '../store/document-store.js';
import type { EventStore, Position } from '../store/event-store.js';
import type { CommandBus, CommandContext } from './commands.js';
import { timelineStreamId } from './timeline.js';

export type SkipReason = 'not_found' | 'unfinished' | 'reflection_pending';

export interface DeleteRunsAnswer {
  deleted: string[];
  skipped: Array<{ id: string; reason: SkipReason }>;
  /** The last event appended, for read-your-writes. */
  position: Position | null;
}

const messages: Record<Exclude<SkipReason, 'not_found'>, string> = {
  unfinished: 'Only a finished run can be deleted',
  reflection_pending: 'A reflection of this run is pending; delete it once the reflection ends',
};

/**
 * Deleting runs for real in an event-sourced store (docs/design.md, "Run deletion"): the `RunDeleted` fact goes to
 * the job's admission stream (which stays), with the run's last figures, then the run's own stream and timeline
 * are deleted and its files removed. Read models drop the run on the fact; statistics keep its figures.
 */
export class RunDeletion {
  constructor(
    private readonly bus: CommandBus,
    private readonly events: EventStore,
    private readonly docs: DocumentStore,
    private readonly files: Pick<RunFiles, 'remove'>,
    private readonly clock: () => number = Date.now,
  ) {}

  /** One run: 404 when it is not this workspace's, 409 while it is live or its reflection is pending. */
  async deleteOne(workspaceId: string, runId: string, ctx: CommandContext): Promise<Position | null> {
    const outcome = await this.attempt(workspaceId, runId, ctx);
    if (!('skipped' in outcome)) return outcome.position;
    if (outcome.skipped === 'not_found') throw DomainError.notFound('Run');
    throw new DomainError('conflict', messages[outcome.skipped]);
  }

  /** Up to 100 runs; each that cannot go is reported with why, and the others go. Duplicates count once. */
  async deleteMany(workspaceId: string, ids: readonly string[], ctx: CommandContext): Promise<DeleteRunsAnswer> {
    const answer: DeleteRunsAnswer = { deleted: [], skipped: [], position: null };
    for (const id of [...new Set(ids)]) {
      const outcome = await this.attempt(workspaceId, id, ctx);
      if ('skipped' in outcome) answer.skipped.push({ id, reason: outcome.skipped });
      else {
        answer.deleted.push(id);
        answer.position = outcome.position ?? answer.position;
      }
    }
    return answer;
  }

  private async attempt(
    workspaceId: string,
    runId: string,
    ctx: CommandContext,
  ): Promise<{ skipped: SkipReason } | { position: Position | null }> {
    // Another workspace's run reads as missing, so its existence does not leak.
    const run = await this.docs.collection<RunDoc>(runsCollection).findOne({ _id: runId, workspaceId });
    if (!run) return { skipped: 'not_found' };
    const streamId = runStreamId(runId);
    this.bus.forget(streamId);
    const { state } = await this.bus.load(streamId, runDecider);
    if (state.status === 'none') return { skipped: 'not_found' };
    if (isLive(state.status)) return { skipped: 'unfinished' };
    if (state.reflection === 'pending') return { skipped: 'reflection_pending' };
    const figures = foldFigures((await this.events.readStream(streamId)).map(upcast));
    if (!figures) return { skipped: 'not_found' };
    const recorded = await this.bus.execute(
      jobRunsStreamId(run.jobId),
      jobRunsDecider,
      { type: 'RecordRunDeleted', runId, figures, now: this.clock() },
      { ...ctx, workspaceId },
    );
    // The fact is written first, so what was removed and by whom is never lost; a crash right after it leaves
    // streams and files that nothing shows any more (a known gap, docs/design.md, "Run deletion").
    await this.events.deleteStream(streamId);
    await this.events.deleteStream(timelineStreamId(runId));
    this.bus.forget(streamId);
    await this.files.remove(runId);
    return { position: recorded.position };
  }
}
