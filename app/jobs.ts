import { randomBytes } from 'node:crypto';
import { DomainError } from '../domain/decider.js';
import { jobDecider, jobStreamId, type JobCommand, type JobState } from '../domain/job.js';
import { validateContent, type PlaybookContent } from '../domain/playbook.js';
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
    private readonly clock: () => number = Date.now,
  ) {}

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
    );
    await this.projected(result.position);
  }

  /** Creates a job and answers its id. A Dockerfile in the spec (compile proposes one) becomes playbook version 1. */
  async create(ctx: CommandContext, workspaceId: string, fields: NewJobFields): Promise<string> {
    const jobId = newId();
    const environment = proposedEnvironment(fields.spec);
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

  async change(ctx: CommandContext, workspaceId: string, jobId: string, patch: JobChanges): Promise<void> {
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
