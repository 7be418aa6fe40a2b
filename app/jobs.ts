import { randomBytes } from 'node:crypto';
import { DomainError } from '../domain/decider.js';
import { jobDecider, jobStreamId, type JobCommand, type JobState } from '../domain/job.js';
import { validateContent, type PlaybookContent } from '../domain/playbook.js';
import type { Spec } from '../domain/job-types.js';
import type { Position } from '../store/event-store.js';
import { hashToken } from '../adapters/keys.js';
import type { CommandBus, CommandContext } from './commands.js';
import { newId } from './ids.js';
import type { Playbooks } from './playbooks.js';
import type { Runs } from './runs.js';

export type NewJobFields = Extract<JobCommand, { type: 'CreateJob' }>['fields'];
export type JobChanges = Extract<JobCommand, { type: 'PatchJob' }>['patch'];

/** The playbook content a spec's Dockerfile makes, checked before the job exists so a bad one creates nothing. */
function proposedEnvironment(spec: { dockerfile?: string | null } | undefined): PlaybookContent | null {
  const dockerfile = spec?.dockerfile;
  if (!dockerfile || dockerfile.trim() === '') return null;
  try {
    return validateContent({ dockerfile }, { declaresInputs: false });
  } catch (err) {
    if (err instanceof DomainError && err.fields)
      throw DomainError.validation(err.fields.map((f) => ({ ...f, field: f.field.replace(/^content\./, 'spec.') })));
    throw err;
  }
}

/** What job changes consult outside the job stream; each is optional (a test may build Jobs without them). */
export interface JobCollaborators {
  /** The spec an instruction compiles to, or null when the workspace has no model to compile with. */
  respec?: (workspaceId: string, instruction: string) => Promise<Spec | null>;
  /** Whether a model id names an enabled, listed model of the workspace. */
  modelUsable?: (workspaceId: string, modelId: string) => Promise<boolean>;
  clock?: () => number;
}

/**
 * Creating, changing and archiving jobs, and their webhook tokens. Each waits for the jobs read model, so the
 * caller reads its own write. The job stream decides who may change a job, not the read model: a job of another
 * workspace, or an archived one, is as absent as a missing one.
 */
export class Jobs {
  constructor(
    private readonly bus: CommandBus,
    private readonly playbooks: Playbooks,
    private readonly runs: Runs,
    /** Resolves once the read models have caught up with a position (the projection engine's `waitFor`). */
    private readonly projected: (position: Position | null) => Promise<unknown>,
    private readonly options: JobCollaborators = {},
  ) {
    this.clock = options.clock ?? Date.now;
  }

  private readonly clock: () => number;

  /** A model id a job names must be an enabled, listed model of the workspace (docs/jobs.md, "Fields"). */
  private async checkModel(workspaceId: string, modelId: string | null | undefined): Promise<void> {
    const id = modelId?.trim();
    if (!id || !this.options.modelUsable || (await this.options.modelUsable(workspaceId, id))) return;
    throw DomainError.validation([
      { field: 'modelId', code: 'invalid', message: 'must be an enabled model of the workspace' },
    ]);
  }

  private async onJob(ctx: CommandContext, workspaceId: string, jobId: string, command: JobCommand) {
    const result = await this.bus.execute(
      jobStreamId(jobId),
      jobDecider,
      (state: JobState) => {
        if (command.type !== 'CreateJob' && (state.status !== 'active' || state.workspaceId !== workspaceId))
          throw DomainError.notFound('Job');
        return command;
      },
      ctx,
      // A new job's id was made by `create`: its stream has nothing to fold yet.
      { newStream: command.type === 'CreateJob' },
    );
    await this.projected(result.position);
  }

  /** Creates a job and answers its id. A Dockerfile in the spec (compile proposes one) becomes playbook version 1. */
  async create(ctx: CommandContext, workspaceId: string, fields: NewJobFields): Promise<string> {
    const jobId = newId();
    const environment = proposedEnvironment(fields.spec);
    await this.checkModel(workspaceId, fields.modelId);
    await this.onJob(ctx, workspaceId, jobId, { type: 'CreateJob', jobId, workspaceId, fields, now: this.clock() });
    if (environment)
      await this.playbooks.save(ctx, workspaceId, jobId, {
        content: environment,
        baseVersion: 0,
        summary: 'Environment proposed when the job was created',
        author: 'compile',
      });
    return jobId;
  }

  /**
   * Changes the fields given. A changed model is checked; a changed instruction recompiles the spec unless
   * `rebuildSpec` is false or the patch brings its own spec (docs/jobs.md, "Compile"). A model that fails to compile
   * throws `CompileFailed` and nothing is written.
   */
  async change(
    ctx: CommandContext,
    workspaceId: string,
    jobId: string,
    body: JobChanges & { rebuildSpec?: boolean },
  ): Promise<void> {
    const { rebuildSpec, ...patch } = body;
    if (patch.modelId !== undefined || patch.instruction !== undefined) {
      const { state } = await this.bus.load(jobStreamId(jobId), jobDecider);
      if (state.status !== 'active' || state.workspaceId !== workspaceId) throw DomainError.notFound('Job');
      // Only a changed model is checked again: a job keeps working on the model it has (docs/jobs.md, "Fields").
      if (patch.modelId !== undefined && patch.modelId.trim() !== (state.config.modelId ?? ''))
        await this.checkModel(workspaceId, patch.modelId);
      const instruction = patch.instruction?.trim();
      if (
        instruction &&
        instruction !== state.config.instruction &&
        rebuildSpec !== false &&
        patch.spec === undefined &&
        this.options.respec
      ) {
        const spec = await this.options.respec(workspaceId, instruction);
        if (spec) patch.spec = spec;
      }
    }
    await this.onJob(ctx, workspaceId, jobId, { type: 'PatchJob', patch, now: this.clock() });
  }

  /** Archives the job. Its queued runs die with it; a run already under way finishes (docs/runs.md). */
  async archive(ctx: CommandContext, workspaceId: string, jobId: string): Promise<void> {
    await this.onJob(ctx, workspaceId, jobId, { type: 'ArchiveJob', now: this.clock() });
    await this.runs.cancelQueued(workspaceId, jobId, ctx);
  }

  /** A new webhook token (`svh_…`), answered once; only its hash is kept and the previous one stops working. */
  async replaceWebhookToken(ctx: CommandContext, workspaceId: string, jobId: string): Promise<string> {
    const token = `svh_${randomBytes(32).toString('base64url')}`;
    await this.onJob(ctx, workspaceId, jobId, {
      type: 'SetWebhookToken',
      tokenHash: hashToken(token),
      now: this.clock(),
    });
    return token;
  }
}
