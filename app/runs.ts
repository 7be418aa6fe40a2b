import { randomUUID } from 'node:crypto';
import { Subject } from 'rxjs';
import { DomainError } from '../domain/decider.js';
import { jobDecider, jobStreamId } from '../domain/job.js';
import { jobRunsDecider, jobRunsStreamId, skippedBecauseBusy } from '../domain/job-runs.js';
import { nextMode } from '../domain/modes.js';
import { emptyOutcome, runDecider, runStreamId, type RunOutcome, type RunPlan, type Trigger } from '../domain/run.js';
import { jobsCollection, type JobDoc } from '../projections/jobs.js';
import { runsCollection, type RunDoc } from '../projections/runs.js';
import type { DocumentStore } from '../store/document-store.js';
import type { EventStore, Position } from '../store/event-store.js';
import { TimelineWriter } from './timeline.js';
import type { CommandBus, CommandContext } from './commands.js';
import { newId } from './ids.js';

export interface TriggerRequest {
  trigger: Trigger;
  triggeredBy: string | null;
  input: unknown;
  instructions: string | null;
}

export interface TriggerAnswer {
  runId: string | null;
  status: 'queued' | 'skipped';
  position: Position | null;
}

/**
 * The trigger path and the run's life outside the runner: admission under the overlap policy, cancel, retry, and
 * the release that lets the next queued run start. Every decision is an expected-revision append.
 */
export class Runs {
  /**
   * Nudges the local dispatcher when a run may start, once the runs read model shows it (the dispatcher claims from
   * that model, so a nudge before the projection would find nothing and leave the run to the next poll, 500 ms
   * later); other processes find it by polling.
   */
  readonly startable = new Subject<string>();

  constructor(
    private readonly bus: CommandBus,
    private readonly events: EventStore,
    private readonly docs: DocumentStore,
    private readonly clock: () => number = Date.now,
    /** Resolves once the read models have caught up with a position (the projection engine's `waitFor`). */
    private readonly projected: (position: Position | null) => Promise<unknown> = async () => undefined,
    /**
     * Resolves once the live output this process made is shared with other replicas (`SharedDeltas.shareNow`): done
     * before a run's end is recorded, so that a replica ending its stream at that end has the output to show.
     */
    private readonly outputShared: () => Promise<void> = async () => undefined,
  ) {}

  private nudge(runId: string, position: Position | null): void {
    // A projection that is late or failing only delays the nudge: the dispatcher's poll still finds the run.
    const go = () => this.startable.next(runId);
    this.projected(position).then(go, go);
  }

  /**
   * What the workspace's runs queued since `since` cost, reflection and verification included (micro-USD). Runs still
   * in flight count what they have recorded so far, which is nothing until they finish: a known gap, so runs that start
   * together can pass the cap.
   */
  async spentSince(workspaceId: string, since: number): Promise<number> {
    const runs = await this.docs.collection<RunDoc>(runsCollection).find({ workspaceId, queuedAt: { $gte: since } });
    return runs.reduce((sum, r) => sum + (r.cost ?? 0) + (r.reflectionCost ?? 0) + (r.verifyCost ?? 0), 0);
  }

  async trigger(workspaceId: string, jobId: string, req: TriggerRequest, ctx: CommandContext): Promise<TriggerAnswer> {
    const { state: job } = await this.bus.load(jobStreamId(jobId), jobDecider);
    if (job.status !== 'active' || job.workspaceId !== workspaceId) throw DomainError.notFound('Job');
    // The enabled switch gates only the automatic triggers (docs/jobs.md, "Triggers and overlap").
    if (!job.config.enabled && (req.trigger === 'schedule' || req.trigger === 'webhook'))
      return { runId: null, status: 'skipped', position: null };

    const runId = newId();
    const admitted = await this.bus.execute(
      jobRunsStreamId(jobId),
      jobRunsDecider,
      { type: 'AdmitRun', runId, concurrency: job.config.concurrency },
      ctx,
    );
    const admission =
      admitted.events[0]!.type === 'RunAdmitted'
        ? (admitted.events[0]!.data as { number: number; outcome: 'start' | 'wait' | 'skip' })
        : null;
    if (!admission) throw new Error('admission produced no run');

    const doc = await this.docs.collection<JobDoc>(jobsCollection).findOne({ _id: jobId });
    const plan: RunPlan = {
      runId,
      jobId,
      jobName: job.config.name,
      workspaceId,
      number: admission.number,
      trigger: req.trigger,
      triggeredBy: req.triggeredBy,
      input: req.input ?? {},
      instructions: req.instructions,
      mode: doc
        ? nextMode({
            playbookEmpty: doc.playbookEmpty,
            hasMain: doc.playbookHasMain,
            modePin: job.config.modePin,
            demoted: doc.demoted,
          })
        : 'explore',
      playbookVersion: doc?.playbookVersion ?? 0,
      modelId: job.config.modelId,
      queuedAt: this.clock(),
    };
    const command =
      admission.outcome === 'skip'
        ? { type: 'SkipRun' as const, plan, error: skippedBecauseBusy }
        : { type: 'QueueRun' as const, plan, submitted: admission.outcome === 'start' };
    const created = await this.bus.execute(runStreamId(runId), runDecider, command, ctx);
    if (admission.outcome === 'start') this.nudge(runId, created.position);
    return { runId, status: admission.outcome === 'skip' ? 'skipped' : 'queued', position: created.position };
  }

  async retry(
    workspaceId: string,
    runId: string,
    triggeredBy: string | null,
    ctx: CommandContext,
  ): Promise<TriggerAnswer> {
    const run = await this.find(workspaceId, runId);
    const job = await this.docs
      .collection<JobDoc>(jobsCollection)
      .findOne({ _id: run.jobId, workspaceId, archived: false });
    if (!job) throw DomainError.notFound('Job');
    return this.trigger(
      workspaceId,
      run.jobId,
      { trigger: 'retry', triggeredBy, input: run.input, instructions: run.instructions },
      ctx,
    );
  }

  /** "Learn from this run": marks its reflection pending for a reflector to take (docs/learning.md, "Reflection"). */
  readonly reflectable = new Subject<string>();

  async requestReflection(workspaceId: string, runId: string, ctx: CommandContext): Promise<Position | null> {
    await this.find(workspaceId, runId);
    const result = await this.bus.execute(
      runStreamId(runId),
      runDecider,
      { type: 'RequestReflection', key: randomUUID(), now: this.clock() },
      ctx,
    );
    this.reflectable.next(runId);
    return result.position;
  }

  /** Queued: ends at once. Live: asks its runner to stop it. Final: 409. */
  async cancel(workspaceId: string, runId: string, ctx: CommandContext): Promise<Position | null> {
    const run = await this.find(workspaceId, runId);
    const result = await this.bus.execute(
      runStreamId(runId),
      runDecider,
      { type: 'CancelRun', now: this.clock() },
      ctx,
    );
    const ended = result.events.find((e) => e.type === 'RunFinished');
    if (ended) {
      await this.timelineStatus(workspaceId, runId, 'cancelled', (ended.data as { error: string | null }).error);
      await this.release(run.jobId, runId, ctx);
    }
    return result.position;
  }

  /** Cancels every queued run of a job (archiving); live runs finish on their own. */
  async cancelQueued(workspaceId: string, jobId: string, ctx: CommandContext): Promise<void> {
    const queued = await this.docs.collection<RunDoc>(runsCollection).find({ workspaceId, jobId, status: 'queued' });
    for (const run of queued) {
      await this.cancel(workspaceId, run._id, ctx).catch((err: unknown) => {
        // Claimed meanwhile: it is live now and runs to its end, as archiving promises.
        if (!(err instanceof DomainError && err.code === 'conflict')) throw err;
      });
    }
  }

  /** The runner's last word on a run. Releases the job's slot, which may start the next queued run. */
  async finish(jobId: string, runId: string, outcome: RunOutcome, ctx: CommandContext): Promise<Position | null> {
    await this.outputShared();
    const result = await this.bus.execute(runStreamId(runId), runDecider, { type: 'FinishRun', outcome }, ctx);
    await this.release(jobId, runId, ctx);
    if (outcome.reflection === 'pending') this.reflectable.next(runId);
    return result.position;
  }

  /** Ends a live run whose runner is gone: never resumed, failed as interrupted (docs/runs.md, "Stop reasons"). */
  async interrupt(jobId: string, runId: string, error: string): Promise<void> {
    const { state } = await this.bus.load(runStreamId(runId), runDecider);
    const ctx: CommandContext = {
      workspaceId: state.status === 'none' ? null : state.workspaceId,
      actor: { type: 'system', id: null },
      requestId: null,
    };
    if (state.status === 'provisioning' || state.status === 'running' || state.status === 'verifying') {
      await this.timelineStatus(state.workspaceId, runId, 'failed', error);
      await this.bus
        .execute(
          runStreamId(runId),
          runDecider,
          { type: 'FinishRun', outcome: { ...emptyOutcome(this.clock()), error } },
          ctx,
        )
        .catch((err: unknown) => {
          if (!(err instanceof DomainError && err.code === 'conflict')) throw err;
        });
    }
    await this.release(jobId, runId, ctx);
  }

  async release(jobId: string, runId: string, ctx: CommandContext): Promise<void> {
    const released = await this.bus.execute(jobRunsStreamId(jobId), jobRunsDecider, { type: 'ReleaseRun', runId }, ctx);
    const next = released.events.find((e) => e.type === 'RunReleased')?.data as { next: string | null } | undefined;
    if (!next?.next) return;
    const { state } = await this.bus.load(runStreamId(next.next), runDecider);
    // The next run's stream is missing or it ended while waiting (cancelled): let the one after it go instead.
    if (state.status !== 'queued') return this.release(jobId, next.next, ctx);
    const submitted = await this.bus.execute(runStreamId(next.next), runDecider, { type: 'SubmitRun' }, ctx);
    this.nudge(next.next, submitted.position);
  }

  /** The final status on the run's timeline, for runs that end without a runner to write it. */
  private timelineStatus(workspaceId: string, runId: string, status: string, error: string | null): Promise<void> {
    return new TimelineWriter(this.events, runId, workspaceId, undefined, this.clock).append('run.status', {
      status,
      ...(error ? { error } : {}),
    });
  }

  async find(workspaceId: string, runId: string): Promise<RunDoc> {
    const run = await this.docs.collection<RunDoc>(runsCollection).findOne({ _id: runId, workspaceId });
    if (!run) throw DomainError.notFound('Run');
    return run;
  }
}
