import { runSetup } from './setup.js';
import { randomBytes, randomUUID } from 'node:crypto';
import type { JobConfig } from '../../domain/job.js';
import type { PlaybookContent } from '../../domain/playbook.js';
import { playbookFiles } from '../../domain/playbook-render.js';
import { outputMismatch, shadowMainTimeoutMs } from '../../domain/shadow.js';
import type { Limits } from '../../schemas/job.js';
import type { OpTest } from '../../schemas/playbook.js';
import { discardedTimeline } from '../timeline.js';
import { sandboxEnv, type AgentModel, type BrokerSession, type ExecutorPorts, type OpenedSession } from './ports.js';
import { stopMessages } from '../../domain/run-stop.js';
import { mcpGoesWithTheRun } from './phases/context.js';
import type { RunMcp } from '../../adapters/mcp/run-tools.js';
import { runScripted, type ScriptedResult } from './scripted.js';
import type { Sandbox } from '../../adapters/sandbox/types.js';
import { errorMessage } from '../../domain/error-message.js';
import { ignoreFailure, type DebugLog } from '../../domain/ignore-failure.js';

export interface ShadowRequest {
  workspaceId: string;
  jobId: string;
  job: JobConfig;
  /** The playbook as reflection would save it. */
  proposed: PlaybookContent;
  /** The saved version the proposal starts from: its image is used when the Dockerfile did not change. */
  baseVersion: number;
  dockerfileChanged: boolean;
  /** The image reflection built for a changed Dockerfile. */
  image?: string | null;
  reflected: {
    number: number;
    input: unknown;
    instructions: string | null;
    status: string;
    finishedAt: number | null;
    outputs: Record<string, unknown>;
  };
}

/** `svc llm` and verifier spend (micro-USD) and tokens, which reflection adds to its own. */
export interface Spent {
  cost: number;
  tokens: number;
}

export interface ShadowOutcome extends Spent {
  test: OpTest;
}

const nothingSpent: Spent = { cost: 0, tokens: 0 };

const minutes = (ms: number) => `${Math.floor(ms / 60_000)}m${Math.round((ms % 60_000) / 1000)}s`;
const skipped = (detail: string, spent = nothingSpent): ShadowOutcome => ({
  test: { status: 'skipped', detail },
  ...spent,
});

/** What a shadow run is given before it starts: the limits, main's time and the models. */
interface ShadowPlan {
  settings: Awaited<ReturnType<ExecutorPorts['settings']>>;
  limits: Limits;
  main: { ms: number; capped: boolean };
  model: AgentModel;
  utility: AgentModel;
  runId: string;
  token: string;
}

/** What a shadow run holds and gives back whatever happens. */
interface ShadowHeld {
  sandbox: Sandbox | null;
  session: BrokerSession | null;
  mcp: RunMcp | null;
}

/**
 * Tries a proposed main script before reflection saves it (docs/design.md, "Learning: scripted runs, reflection,
 * shadow runs"): a fresh sandbox prepared like a real run's, the reflected run's input, job state through a
 * copy-on-write overlay, MCP actions refused, events discarded. Passed, failed (with main's output for the model's
 * second attempt), or skipped when it could not say.
 */
export class ShadowRunner {
  constructor(
    private readonly ports: ExecutorPorts,
    private readonly log: DebugLog & { error(obj: object, msg: string): void },
    private readonly clock: () => number = Date.now,
  ) {}

  async run(req: ShadowRequest): Promise<ShadowOutcome> {
    const plan = await this.plan(req);
    if ('test' in plan) return plan;
    const held: ShadowHeld = { sandbox: null, session: null, mcp: null };
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), plan.main.ms + 5 * 60_000);
    try {
      return await this.attempt(req, plan, held, controller.signal);
    } catch (err) {
      if (controller.signal.aborted) return skipped('inconclusive: the shadow run ran out of time');
      this.log.error({ err, jobId: req.jobId }, 'shadow run failed');
      return skipped(`the shadow run could not run: ${errorMessage(err)}`);
    } finally {
      clearTimeout(timer);
      held.session?.close();
      await held.mcp?.close().catch(ignoreFailure(mcpGoesWithTheRun, this.log));
      // Logged like a real run's: a sandbox left behind holds the host's resources until the reaper finds it.
      await held.sandbox
        ?.destroy()
        .catch((err: unknown) => this.log.error({ err, jobId: req.jobId }, 'could not destroy the shadow sandbox'));
    }
  }

  /** The limits and models, or why the shadow run cannot start. */
  private async plan(req: ShadowRequest): Promise<ShadowPlan | ShadowOutcome> {
    const settings = await this.ports.settings(req.workspaceId);
    const limits = { ...settings.defaultLimits, ...req.job.limits } as Limits;
    const model = await this.ports.agentModel(req.workspaceId, req.job.modelId);
    if (!model) return skipped('no model is configured, so the shadow run could not start');
    if (req.dockerfileChanged && req.image === undefined)
      return skipped('the Dockerfile changed and its image was not built');
    const utility = (await this.ports.utilityModel(req.workspaceId, req.job.modelId)) ?? model;
    const main = shadowMainTimeoutMs(limits.timeoutSeconds);
    const token = randomBytes(32).toString('base64url');
    return { settings, limits, main, model, utility, runId: `shadow-${randomUUID()}`, token };
  }

  /** The steps of a shadow run once it may start; what it acquires goes into `held`. */
  private async attempt(
    req: ShadowRequest,
    plan: ShadowPlan,
    held: ShadowHeld,
    signal: AbortSignal,
  ): Promise<ShadowOutcome> {
    const image = await this.image(req, plan, signal);
    const opened = await this.openSession(req, plan, held);
    try {
      held.sandbox = await this.createSandbox(req, plan, image, opened);
    } catch (err) {
      return skipped(`the shadow run's sandbox could not be created: ${errorMessage(err)}`);
    }
    const sandbox = held.sandbox;
    await sandbox.putFiles(shadowFiles(req));
    const user = req.job.runAsRoot ? 'root' : 'agent';
    if (req.proposed.setup !== null) {
      const setup = await runSetup(sandbox, req.proposed.setup, user, signal, plan.main.ms);
      if (setup.exitCode !== 0)
        return skipped(`inconclusive: the setup script failed with exit code ${setup.exitCode}`);
    }
    await held.mcp?.connect(sandbox);
    const result = await this.main(req, plan, sandbox, opened.session, signal);
    // Nothing of the sandbox runs once main is judged: a process it left cannot change what is read back from it
    // (docs/security.md, "Reading back from sandboxes").
    await held.mcp?.close().catch(ignoreFailure(mcpGoesWithTheRun, this.log));
    await sandbox.stopProcesses();
    const llm = opened.session.llmUsage;
    const verified = result.kind === 'stopped' ? null : result;
    const spent: Spent = {
      cost: opened.session.llmSpend + (verified?.verifyCost ?? 0),
      tokens: llm.input + llm.output + (verified ? verified.verifyUsage.input + verified.verifyUsage.output : 0),
    };
    const refused = held.mcp?.refused ?? [];
    if (refused.length > 0)
      return skipped(
        `inconclusive: the main script called MCP tools with side effects (${refused.map((r) => `${r.server}.${r.tool}`).join(', ')}), which a shadow run refuses`,
        spent,
      );
    return this.judge(req, plan, result, spent);
  }

  /** The base version's image when the Dockerfile did not change, else the one reflection built. */
  private async image(req: ShadowRequest, plan: ShadowPlan, signal: AbortSignal): Promise<string | null> {
    if (req.dockerfileChanged) return req.image ?? null;
    return this.ports.runImage({
      workspaceId: req.workspaceId,
      jobId: req.jobId,
      playbookVersion: req.baseVersion,
      fallback: req.job.image ?? plan.settings.defaultImage,
      signal,
    });
  }

  /** The MCP servers in shadow mode (actions refused) and a broker session whose job state is an overlay. */
  private async openSession(req: ShadowRequest, plan: ShadowPlan, held: ShadowHeld): Promise<OpenedSession> {
    const mcpOptions = { shadow: true, runAsRoot: req.job.runAsRoot, timeline: () => undefined };
    held.mcp = (await this.ports.mcp?.(req.workspaceId, req.jobId, mcpOptions)) ?? null;
    const { network, allowedDomains, allowPrivateNetwork } = req.job;
    const opened = await this.ports.openSession({
      runId: plan.runId,
      jobId: req.jobId,
      workspaceId: req.workspaceId,
      token: plan.token,
      costLimit: Math.round(plan.limits.maxCostUsd * 1e6),
      timeline: discardedTimeline,
      agentModel: plan.model,
      utilityModel: plan.utility,
      agentSpend: () => 0,
      mcp: held.mcp,
      stateOverlay: true,
      egress: { network, allowedDomains, allowPrivateNetwork },
    });
    held.session = opened.session;
    return opened;
  }

  private async createSandbox(
    req: ShadowRequest,
    plan: ShadowPlan,
    image: string | null,
    opened: OpenedSession,
  ): Promise<Sandbox> {
    const { runId, token, limits } = plan;
    const ws = req.workspaceId;
    return this.ports.backend.create({
      id: runId,
      labels: { runId, jobId: req.jobId, workspaceId: ws },
      image,
      limits: { cpus: limits.cpus, memoryMb: limits.memoryMb, pidsLimit: limits.pidsLimit, diskMb: limits.diskMb },
      network: req.job.network,
      runAsRoot: req.job.runAsRoot,
      env: sandboxEnv(await this.ports.secretEnv(ws, req.jobId), token, runId, req.jobId, req.job.network),
      brokerSocket: opened.brokerSocket,
      proxySocket: opened.proxySocket,
      ttlMs: plan.main.ms + 10 * 60_000,
    });
  }

  /** The proposed main and its checks, on the scripted path of real runs with a discarded timeline. */
  private main(
    req: ShadowRequest,
    plan: ShadowPlan,
    sandbox: Sandbox,
    session: BrokerSession,
    signal: AbortSignal,
  ): Promise<ScriptedResult> {
    const spec = req.job.spec as { outputs?: Array<{ name: string }>; successCriteria?: string[] };
    return runScripted({
      sandbox,
      user: req.job.runAsRoot ? 'root' : 'agent',
      timeline: discardedTimeline,
      session,
      signal,
      clock: this.clock,
      // runScripted gives main half of what remains: twice main's own time.
      remainingMs: () => plan.main.ms * 2,
      stopReason: () => ({ status: 'timed_out', error: stopMessages.shadowTimeout }),
      declaredOutputs: (spec.outputs ?? []).map((o) => o.name),
      verify: req.proposed.verify,
      instruction: req.job.instruction,
      successCriteria: spec.successCriteria ?? [],
      verdictModel: plan.utility,
      onVerifying: async () => undefined,
    });
  }

  /** What the scripted path's result says of the proposal; a recent success's outputs must match where they should. */
  private judge(req: ShadowRequest, plan: ShadowPlan, result: ScriptedResult, spent: Spent): ShadowOutcome {
    if (result.kind === 'stopped') return skipped('inconclusive: the shadow run ran out of time', spent);
    if (result.kind === 'fell_short') return fellShort(result, plan.main, spent);
    const declared = ((req.job.spec as { outputs?: Array<{ name: string }> }).outputs ?? []).map((o) => o.name);
    const { reflected } = req;
    const recent =
      reflected.status === 'succeeded' &&
      reflected.finishedAt !== null &&
      this.clock() - reflected.finishedAt <= 60 * 60_000;
    if (declared.length === 0 || !recent)
      return { test: { status: 'passed', detail: 'main passed its shadow run (outputs not compared)' }, ...spent };
    const varies = req.proposed.verify?.varies ?? [];
    const earlier = { number: reflected.number, outputs: reflected.outputs };
    const mismatch = outputMismatch(declared, varies, earlier, result.outputs);
    if (mismatch) return { test: { status: 'failed', detail: mismatch, output: '' }, ...spent };
    const detail = `main passed its shadow run, and its outputs matched run #${reflected.number}`;
    return { test: { status: 'passed', detail }, ...spent };
  }
}

/** A main that fell short fails the proposal, unless the shadow run could not tell (its own time cap, the verifier). */
function fellShort(
  result: Extract<ScriptedResult, { kind: 'fell_short' }>,
  main: { ms: number; capped: boolean },
  spent: Spent,
): ShadowOutcome {
  const output = result.output.slice(-3000);
  if (/did not finish within/.test(result.reason)) {
    if (main.capped)
      return skipped(`inconclusive: main did not finish within ${minutes(main.ms)} a shadow run allows`, spent);
    return {
      test: { status: 'failed', detail: "main did not finish within half of the run's time limit", output },
      ...spent,
    };
  }
  if (/^the verifier could not judge/.test(result.reason)) return skipped(`inconclusive: ${result.reason}`, spent);
  return { test: { status: 'failed', detail: result.reason, output }, ...spent };
}

/** The files of a real run's sandbox, with the reflected run's input and the proposed playbook. */
function shadowFiles(req: ShadowRequest): Array<{ path: string; content: string }> {
  return [
    { path: '/svc/input.json', content: JSON.stringify(req.reflected.input ?? {}) },
    ...playbookFiles(req.proposed),
    { path: '/svc/outputs/.keep', content: '' },
    { path: '/svc/candidates/.keep', content: '' },
    { path: '/svc/logs/.keep', content: '' },
  ];
}
