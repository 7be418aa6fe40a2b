import { jobDecider, jobStreamId } from '../../../domain/job.js';
import { stopMessages, stopReasons } from '../../../domain/run-stop.js';
import { dailySpendError, utcDayStart } from '../../../domain/spend.js';
import { errorMessage } from '../../../domain/error-message.js';
import type { Limits } from '../../../schemas/job.js';
import { RunImageError } from '../../images.js';
import { noModelMessage, sandboxEnv, type OpenedSession } from '../ports.js';
import { RunEnd, type Provisioned, type ProvisionedRun, type RunContext } from './context.js';

type Plan = Pick<Provisioned, 'job' | 'limits' | 'deadline' | 'model' | 'utility' | 'user'>;

/**
 * The provision phase (docs/runs.md): the job, its limits and the run's deadline, the model, the daily spend check,
 * the image, then the broker session and the sandbox. Answers the run with all of that, or how it ended.
 */
export async function provision(ctx: RunContext): Promise<ProvisionedRun | RunEnd> {
  const { services, run, workspaceId: ws } = ctx;
  await ctx.timeline.append('run.status', { status: 'provisioning' });
  const { state: job } = await services.bus.load(jobStreamId(run.jobId), jobDecider);
  if (job.status === 'none') return RunEnd.failed('The job does not exist');
  ctx.tally.selfImprove = job.config.selfImprove;
  const settings = await services.ports.settings(ws);
  const limits: Limits = { ...settings.defaultLimits, ...job.config.limits } as Limits;
  const deadline = ctx.startedAt + limits.timeoutSeconds * 1000;
  ctx.stop.armDeadline(deadline - services.clock());
  const model = await services.ports.agentModel(ws, run.modelId);
  if (!model) return RunEnd.failed(noModelMessage);
  const overSpend = await spendError(ctx, settings.dailySpendLimitUsd);
  if (overSpend) return RunEnd.failed(overSpend);
  const image = await runImage(ctx, job.config.image ?? settings.defaultImage);
  if (image instanceof RunEnd) return image;
  const utility = (await services.ports.utilityModel(ws, run.modelId)) ?? model;
  const user = job.config.runAsRoot ? 'root' : 'agent';
  const plan: Plan = { job: job.config, limits, deadline, model, utility, user };
  const opened = await openSession(ctx, plan);
  return createSandbox(ctx, plan, image.image, opened);
}

/** The daily spend cap's refusal (spend is read only under a cap); checked before the sandbox, so it costs nothing. */
async function spendError(ctx: RunContext, dailySpendLimitUsd: number): Promise<string | null> {
  const spent =
    dailySpendLimitUsd > 0
      ? await ctx.services.ports.spentSince(ctx.workspaceId, utcDayStart(ctx.services.clock()))
      : 0;
  return dailySpendError(dailySpendLimitUsd, spent);
}

/**
 * The run's image (docs/design.md, "Images"), with `sandbox.image_wait` entries when it has to wait for a build. A
 * build that failed, or a Dockerfile this runner cannot build, ends the run with that error; so does the stop signal.
 */
export async function runImage(ctx: RunContext, fallback: string | null): Promise<{ image: string | null } | RunEnd> {
  const { clock, ports } = ctx.services;
  let waitedSince: number | null = null;
  const waitEnded = (done: boolean) => {
    if (waitedSince !== null) ctx.timeline.record('sandbox.image_wait', { done }, { ms: clock() - waitedSince });
  };
  try {
    const image = await ports.runImage({
      workspaceId: ctx.workspaceId,
      jobId: ctx.run.jobId,
      playbookVersion: ctx.run.playbookVersion,
      fallback,
      signal: ctx.stop.signal,
      onWait: (message) => {
        waitedSince = clock();
        ctx.timeline.record('sandbox.image_wait', { message });
      },
    });
    waitEnded(true);
    return { image };
  } catch (err) {
    waitEnded(false);
    if (ctx.stop.stopped)
      return ctx.stop.reason === stopReasons.timeout
        ? new RunEnd('timed_out', stopMessages.imageWaitTimeout)
        : new RunEnd('cancelled', stopMessages.stopped);
    if (err instanceof RunImageError) return RunEnd.failed(err.message);
    throw err;
  }
}

/** The run's MCP servers (HTTP ones connect from the host later) and its broker session on sockets of its own. */
async function openSession(ctx: RunContext, plan: Plan): Promise<OpenedSession> {
  const { ports } = ctx.services;
  const { job } = plan;
  ctx.held.mcp =
    (await ports.mcp?.(ctx.workspaceId, ctx.run.jobId, {
      shadow: false,
      runAsRoot: job.runAsRoot,
      timeline: (type, payload, ms) => ctx.timeline.record(type, payload, { ms }),
    })) ?? null;
  const opened = await ports.openSession({
    runId: ctx.runId,
    jobId: ctx.run.jobId,
    workspaceId: ctx.workspaceId,
    token: ctx.token,
    costLimit: Math.round(plan.limits.maxCostUsd * 1e6),
    timeline: ctx.timeline,
    agentModel: plan.model,
    utilityModel: plan.utility,
    agentSpend: () => ctx.tally.agentCost,
    mcp: ctx.held.mcp,
    egress: { network: job.network, allowedDomains: job.allowedDomains, allowPrivateNetwork: job.allowPrivateNetwork },
  });
  ctx.held.session = opened.session;
  return opened;
}

/** The sandbox, with the job's secrets, the broker and the proxy in its environment; recorded as `sandbox.create`. */
async function createSandbox(
  ctx: RunContext,
  plan: Plan,
  image: string | null,
  opened: OpenedSession,
): Promise<ProvisionedRun | RunEnd> {
  const { ports, clock } = ctx.services;
  const { job, limits } = plan;
  const { runId, workspaceId: ws } = ctx;
  const jobId = ctx.run.jobId;
  const env = sandboxEnv(await ports.secretEnv(ws, jobId), ctx.token, runId, jobId, job.network);
  const t0 = clock();
  try {
    ctx.held.sandbox = await ports.backend.create({
      id: `run-${runId}`,
      labels: { runId, jobId, workspaceId: ws },
      image,
      limits: { cpus: limits.cpus, memoryMb: limits.memoryMb, pidsLimit: limits.pidsLimit, diskMb: limits.diskMb },
      network: job.network,
      runAsRoot: job.runAsRoot,
      env,
      brokerSocket: opened.brokerSocket,
      proxySocket: opened.proxySocket,
      ttlMs: limits.timeoutSeconds * 1000 + 5 * 60_000,
    });
  } catch (err) {
    return RunEnd.failed(`Failed to create the sandbox: ${errorMessage(err)}`);
  }
  const sandbox = ctx.held.sandbox;
  const info = ports.backend.info();
  const created = { sandboxId: sandbox.id, image, adapter: info.backend, isolation: info.isolation };
  ctx.timeline.record('sandbox.create', created, { ms: clock() - t0 });
  return Object.assign(ctx, plan, { session: opened.session, sandbox, mcp: ctx.held.mcp });
}
