import { runSetup } from './setup.js';
import { toolkitTools } from './agent/toolkit.js';
import { wantsReflection } from '../../domain/reflection.js';
import { emptyContent, isEmptyPlaybook } from '../../domain/playbook.js';
import { playbookFiles, renderWithinBudget } from '../../domain/playbook-render.js';
import { fallbackBrief } from '../../domain/verify-run.js';
import { versionContent } from '../playbooks.js';
import { runScripted } from './scripted.js';
import type { RunFiles } from '../../adapters/run-files.js';
import { dailySpendError, utcDayStart } from '../../domain/spend.js';
import { redactor, redactValue } from '../../domain/redact.js';
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { jobDecider, jobStreamId } from '../../domain/job.js';
import { runDecider, runStreamId, type FinalStatus, type RunOutcome } from '../../domain/run.js';
import type { Limits } from '../../schemas/job.js';
import type { CommandBus, CommandContext } from '../commands.js';
import type { Runs } from '../runs.js';
import { TimelineWriter, type Timeline } from '../timeline.js';
import { RunImageError, type RunImageRequest } from '../images.js';
import type { EventStore } from '../../store/event-store.js';
import { runAgent } from './agent/loop.js';
import { firstMessage, systemPrompt } from './agent/prompt.js';
import { builtinTools, mcpAgentTools } from './agent/tools.js';
import type { RunMcp } from '../../adapters/mcp/run-tools.js';
import type { ModelClient, Price, Usage } from '../../adapters/models/types.js';
import {
  brokerPort,
  proxyPort,
  type NetworkMode,
  type Sandbox,
  type SandboxBackend,
} from '../../adapters/sandbox/types.js';
import { errorMessage } from '../../domain/error-message.js';

/** What the runner needs of a run's broker session (the /v1 routes `svc` calls). */
export interface BrokerSession {
  readonly outputs: Record<string, unknown>;
  readonly summary: string | null;
  readonly failReason: string | null;
  readonly steps: { count: number; last: string | null };
  /** Non-read-only MCP calls made through the broker, for a fallback's brief. */
  readonly actions: ReadonlyArray<{ server: string; tool: string; args: string; ok: boolean }>;
  /** Forgets an `svc fail` of the main script when the agent takes over. */
  clearFail(): void;
  readonly llmSpend: number;
  readonly llmUsage: { input: number; output: number };
  close(): { llmSpend: number };
}

export interface SessionRequest {
  runId: string;
  jobId: string;
  workspaceId: string;
  token: string;
  costLimit: number;
  egress: { network: NetworkMode; allowedDomains: string[] | null; allowPrivateNetwork: boolean };
  timeline: Timeline;
  agentModel: AgentModel;
  /** `svc llm --model utility`: the workspace's utility model, else the run's own. */
  utilityModel: AgentModel;
  agentSpend(): number;
  /** The run's MCP servers, for `svc mcp`; absent when the job has none. */
  mcp?: RunMcp | null;
  /** A shadow run: job state through a copy-on-write overlay, nothing written for real. */
  stateOverlay?: boolean;
}

export interface AgentModel {
  client: ModelClient;
  name: string;
  price: Price;
  contextWindow: number;
}

/** A run's open session and the host paths of its own sockets (docs/design.md "One broker socket per run"). */
export interface OpenedSession {
  session: BrokerSession;
  brokerSocket: string;
  /** Null for a job without network access. */
  proxySocket: string | null;
}

/** The host services a run uses, as ports: wiring adapts the concrete ones (server/start.ts). */
export interface ExecutorPorts {
  backend: SandboxBackend;
  /** Opens the run's session on sockets of its own, which honour only its token and go when the session closes. */
  openSession(request: SessionRequest): Promise<OpenedSession>;
  agentModel(workspaceId: string, modelId: string | null): Promise<AgentModel | null>;
  utilityModel(workspaceId: string, modelId: string | null): Promise<AgentModel | null>;
  settings(
    workspaceId: string,
  ): Promise<{ defaultLimits: Limits; defaultImage: string | null; dailySpendLimitUsd: number }>;
  /** Micro-USD spent by the workspace's runs queued since `since`. */
  spentSince(workspaceId: string, since: number): Promise<number>;
  secretEnv(workspaceId: string, jobId: string): Promise<Record<string, string>>;
  /** The job's granted, enabled MCP servers with their secrets resolved on the host; null when it has none. */
  mcp?(
    workspaceId: string,
    jobId: string,
    options: {
      shadow: boolean;
      runAsRoot: boolean;
      timeline(type: string, payload: Record<string, unknown>, ms: number | null): void;
    },
  ): Promise<RunMcp | null>;
  /**
   * The image the run's sandbox starts from (BEHAVIOUR §6.3): the fallback when the playbook has no Dockerfile, else a
   * build of that Dockerfile, waited for. Rejects with RunImageError (the run's error), or with the signal's reason.
   */
  runImage(request: Omit<RunImageRequest, 'canBuild'>): Promise<string | null>;
  secretValues(workspaceId: string): Promise<string[]>;
  /** Toolkit calls and failures of a finished run, kept beside the playbook's versions. */
  recordScriptCalls(
    ctx: CommandContext,
    workspaceId: string,
    jobId: string,
    runId: string,
    counts: Array<{ name: string; calls: number; failures: number }>,
  ): Promise<void>;
  jobState: {
    get(workspaceId: string, jobId: string, key: string): Promise<string | null>;
    set(ctx: CommandContext, workspaceId: string, jobId: string, key: string, value: string): Promise<void>;
  };
}

export const noModelMessage =
  'No model is configured. Pick a model for the job or set a default agent model in Settings.';
const artifactCap = 50 * 1024 * 1024;
const reserved = /^(SVC_.*|HTTPS?_PROXY|https?_proxy|NO_PROXY|no_proxy|NODE_USE_ENV_PROXY|ALL_PROXY|all_proxy)$/;

/**
 * One run from claim to final status (BEHAVIOUR §1.3): provisioning, the sandbox, the agent, wrap-up. It never
 * throws: whatever goes wrong ends the run as failed with the reason.
 */
/**
 * A sandbox's environment: the job's secrets (never over the service's own variables), the broker's address and the
 * run's token, and for networked jobs the egress proxy, which is the only way out of the sandbox (DESIGN §5).
 */
export function sandboxEnv(
  secretEnv: Record<string, string>,
  token: string,
  runId: string,
  jobId: string,
  network: NetworkMode,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(secretEnv)) if (!reserved.test(k)) env[k] = v;
  Object.assign(env, {
    SVC_BROKER_URL: `http://127.0.0.1:${brokerPort}`,
    SVC_TOKEN: token,
    SVC_RUN_ID: runId,
    SVC_JOB_ID: jobId,
  });
  if (network !== 'none') {
    const proxy = `http://svc:${token}@127.0.0.1:${proxyPort}`;
    Object.assign(env, {
      HTTP_PROXY: proxy,
      HTTPS_PROXY: proxy,
      http_proxy: proxy,
      https_proxy: proxy,
      NO_PROXY: 'svc,localhost,127.0.0.1',
      no_proxy: 'svc,localhost,127.0.0.1',
      NODE_USE_ENV_PROXY: '1',
    });
  }
  return env;
}

export class RunExecutor {
  constructor(
    private readonly bus: CommandBus,
    private readonly events: EventStore,
    private readonly runs: Runs,
    private readonly ports: ExecutorPorts,
    private readonly files: RunFiles,
    private readonly log: Pick<Logger, 'error' | 'info'>,
    private readonly clock: () => number = Date.now,
  ) {}

  async execute(runId: string, cancel: AbortSignal): Promise<void> {
    const { state: run } = await this.bus.load(runStreamId(runId), runDecider);
    if (run.status !== 'provisioning') return;
    const ws = run.workspaceId;
    const ctx: CommandContext = {
      workspaceId: ws,
      actor: { type: 'run', id: runId },
      requestId: null,
      correlationId: runId,
    };
    const secretValues = await this.ports.secretValues(ws).catch(() => []);
    // The run token is redacted like a secret wherever the run's texts are stored.
    const token = randomBytes(32).toString('base64url');
    const redact = redactor([...secretValues, token]);
    const timeline = new TimelineWriter(this.events, runId, ws, redact, this.clock, this.files, this.log);
    const startedAt = run.startedAt ?? this.clock();
    let sandbox: Sandbox | null = null;
    let session: BrokerSession | null = null;
    let mcp: RunMcp | null = null;
    let agentCost = 0;
    let usage: Usage = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, reasoning: 0 };
    let turns = 0;
    const controller = new AbortController();
    let stopReason: 'cancel' | 'deadline' | null = null;
    const onCancel = () => {
      stopReason ??= 'cancel';
      controller.abort();
    };
    cancel.addEventListener('abort', onCancel, { once: true });
    let deadlineTimer: NodeJS.Timeout | null = null;
    let selfImprove = false;
    let mainRan = false;
    let setupFailed = false;
    const scriptCalls = new Map<string, { calls: number; failures: number }>();

    const finish = async (status: FinalStatus, error: string | null, extra: Partial<RunOutcome> = {}) => {
      if (cancel.aborted && status !== 'succeeded') {
        status = 'cancelled';
        if (!error || /stopped/.test(error)) error = 'Cancelled';
      }
      const llm = session?.close() ?? { llmSpend: 0 };
      // Stdio MCP servers run inside the sandbox: closed before it goes.
      await mcp?.close().catch(() => undefined);
      if (sandbox) {
        const t0 = this.clock();
        await sandbox
          .destroy()
          .catch((err: unknown) => this.log.error({ err, runId }, 'could not destroy the sandbox'));
        timeline.record('sandbox.destroy', { sandboxId: sandbox.id }, { ms: this.clock() - t0 });
      }
      // A run whose record could not be written does not pass; the run itself still ends (docs/design.md, "Failure handling").
      await timeline.flush();
      if (timeline.failed && status === 'succeeded') {
        status = 'failed';
        error = `The run's timeline could not be written: ${timeline.failed.message}`;
      }
      const outcome: RunOutcome = {
        status,
        error: error === null ? null : redact(error),
        summary: extra.summary === undefined || extra.summary === null ? null : redact(extra.summary),
        outputs: (redactValue(extra.outputs ?? {}, redact) ?? {}) as Record<string, unknown>,
        cost: agentCost + llm.llmSpend,
        turns,
        tokIn: usage.input + usage.cacheRead + usage.cacheWrite + (session?.llmUsage.input ?? 0),
        tokOut: usage.output + (session?.llmUsage.output ?? 0),
        fellBack: extra.fellBack ?? false,
        verifyCost: extra.verifyCost ?? 0,
        reflection: wantsReflection({
          selfImprove,
          status,
          mode: run.mode,
          turns,
          fellBack: extra.fellBack ?? false,
          mainRan,
          setupFailed,
        })
          ? 'pending'
          : 'skipped',
        finishedAt: this.clock(),
      };
      // Streams end when they see the final status, so the timeline is complete before the run's final event.
      await timeline
        .append('run.status', { status, ...(outcome.error ? { error: outcome.error } : {}) })
        .catch((err: unknown) => this.log.error({ err, runId }, 'could not write the final status to the timeline'));
      if (scriptCalls.size > 0) {
        const counts = [...scriptCalls].map(([name, c]) => ({ name, ...c }));
        await this.ports
          .recordScriptCalls(ctx, ws, run.jobId, runId, counts)
          .catch((err: unknown) => this.log.error({ err, runId }, 'could not record toolkit calls'));
      }
      await this.runs.finish(run.jobId, runId, outcome, ctx);
    };

    try {
      await timeline.append('run.status', { status: 'provisioning' });
      const { state: job } = await this.bus.load(jobStreamId(run.jobId), jobDecider);
      if (job.status === 'none') return await finish('failed', 'The job does not exist');
      selfImprove = job.config.selfImprove;
      const settings = await this.ports.settings(ws);
      const limits: Limits = { ...settings.defaultLimits, ...job.config.limits } as Limits;
      const deadline = startedAt + limits.timeoutSeconds * 1000;
      deadlineTimer = setTimeout(
        () => {
          stopReason ??= 'deadline';
          controller.abort();
        },
        Math.max(0, deadline - this.clock()),
      );

      const model = await this.ports.agentModel(ws, run.modelId);
      if (!model) return await finish('failed', noModelMessage);
      const overSpend = dailySpendError(
        settings.dailySpendLimitUsd,
        settings.dailySpendLimitUsd > 0 ? await this.ports.spentSince(ws, utcDayStart(this.clock())) : 0,
      );
      if (overSpend) return await finish('failed', overSpend);
      const resolved = await this.resolveImage(
        run,
        job.config.image ?? settings.defaultImage,
        controller.signal,
        () => stopReason,
        timeline,
      );
      if ('status' in resolved) return await finish(resolved.status, resolved.error);
      const image = resolved.image;

      const utility = (await this.ports.utilityModel(ws, run.modelId)) ?? model;
      const maxCost = Math.round(limits.maxCostUsd * 1e6);
      mcp =
        (await this.ports.mcp?.(ws, run.jobId, {
          shadow: false,
          runAsRoot: job.config.runAsRoot,
          timeline: (type, payload, ms) => timeline.record(type, payload, { ms }),
        })) ?? null;
      const opened = await this.ports.openSession({
        runId,
        jobId: run.jobId,
        workspaceId: ws,
        token,
        costLimit: maxCost,
        timeline,
        agentModel: model,
        utilityModel: utility,
        agentSpend: () => agentCost,
        mcp,
        egress: {
          network: job.config.network,
          allowedDomains: job.config.allowedDomains,
          allowPrivateNetwork: job.config.allowPrivateNetwork,
        },
      });
      session = opened.session;

      const env = sandboxEnv(await this.ports.secretEnv(ws, run.jobId), token, runId, run.jobId, job.config.network);

      const t0 = this.clock();
      try {
        sandbox = await this.ports.backend.create({
          id: `run-${runId}`,
          labels: { runId, jobId: run.jobId, workspaceId: ws },
          image,
          limits: { cpus: limits.cpus, memoryMb: limits.memoryMb, pidsLimit: limits.pidsLimit, diskMb: limits.diskMb },
          network: job.config.network,
          runAsRoot: job.config.runAsRoot,
          env,
          brokerSocket: opened.brokerSocket,
          proxySocket: opened.proxySocket,
          ttlMs: limits.timeoutSeconds * 1000 + 5 * 60_000,
        });
      } catch (err) {
        return await finish('failed', `Failed to create the sandbox: ${errorMessage(err)}`);
      }
      const info = this.ports.backend.info();
      timeline.record(
        'sandbox.create',
        { sandboxId: sandbox.id, image, adapter: info.backend, isolation: info.isolation },
        { ms: this.clock() - t0 },
      );
      // The playbook version the run was pinned to when it was queued; a missing one counts as empty.
      const playbook = (await versionContent(this.events, ws, run.jobId, run.playbookVersion)) ?? emptyContent();
      await sandbox.putFiles([
        { path: '/svc/input.json', content: JSON.stringify(run.input ?? {}) },
        ...playbookFiles(playbook),
        { path: '/svc/outputs/.keep', content: '' },
        { path: '/svc/candidates/.keep', content: '' },
        { path: '/svc/logs/.keep', content: '' },
      ]);

      // HTTP servers connect from the host, stdio servers start inside the sandbox; both before any script or the agent.
      if (playbook.setup !== null) {
        const setup = await runSetup(
          sandbox,
          playbook.setup,
          job.config.runAsRoot ? 'root' : 'agent',
          controller.signal,
          deadline - this.clock(),
        );
        timeline.record('sandbox.setup', { exitCode: setup.exitCode, output: setup.output }, { ms: setup.ms });
        if (controller.signal.aborted)
          return await finish(
            stopReason === 'deadline' ? 'timed_out' : 'failed',
            stopReason === 'deadline' ? 'the run exceeded its time limit' : 'run was stopped',
          );
        if (setup.exitCode !== 0) {
          // Reflection may repair a setup script (BEHAVIOUR §4.1: a failed setup counts as the run having done something).
          setupFailed = true;
          return await finish('failed', `The setup script failed with exit code ${setup.exitCode}`);
        }
      }
      await mcp?.connect(sandbox);
      await this.bus.execute(
        runStreamId(runId),
        runDecider,
        { type: 'StartRun', sandbox: { id: sandbox.id, backend: info.backend } },
        ctx,
      );
      await timeline.append('run.status', { status: 'running' });

      const notes: string[] = [];
      const user = job.config.runAsRoot ? 'root' : 'agent';
      const s = sandbox;
      const spec = job.config.spec as { outputs?: Array<{ name: string }>; successCriteria?: string[] };
      let brief: string | null = null;
      let fellBack = false;
      let verifyCost = 0;
      if (run.mode === 'scripted' && playbook.main !== null) {
        mainRan = true;
        const openSession = session;
        const scripted = await runScripted({
          sandbox: s,
          user,
          timeline,
          session: openSession,
          signal: controller.signal,
          clock: this.clock,
          remainingMs: () => deadline - this.clock(),
          stopReason: () =>
            stopReason === 'deadline'
              ? { status: 'timed_out', error: 'the run exceeded its time limit' }
              : { status: 'failed', error: 'run was stopped' },
          declaredOutputs: (spec.outputs ?? []).map((o) => o.name),
          verify: playbook.verify,
          instruction: job.config.instruction,
          successCriteria: spec.successCriteria ?? [],
          verdictModel: utility,
          onVerifying: async () => {
            await this.bus.execute(runStreamId(runId), runDecider, { type: 'VerifyRun' }, ctx);
            await timeline.append('run.status', { status: 'verifying' });
          },
        });
        if (scripted.kind === 'stopped') {
          await this.collectArtifacts(s, runId, timeline, mcp);
          return await finish(scripted.status, scripted.error, { outputs: scripted.outputs });
        }
        verifyCost = scripted.verifyCost;
        if (scripted.kind === 'passed') {
          await this.collectArtifacts(s, runId, timeline, mcp);
          return await finish('succeeded', null, { summary: scripted.summary, outputs: scripted.outputs, verifyCost });
        }
        // Fell short: the agent takes over in the same sandbox, told what the script did (BEHAVIOUR §2.6 step 9, §2.7).
        const reason = scripted.reason.charAt(0).toUpperCase() + scripted.reason.slice(1);
        await timeline.append('fallback', { reason });
        await this.bus.execute(runStreamId(runId), runDecider, { type: 'FallBackRun', reason: scripted.reason }, ctx);
        await timeline.append('run.status', { status: 'running' });
        fellBack = true;
        openSession.clearFail();
        brief = fallbackBrief({
          reason: scripted.reason,
          lastStep: openSession.steps.last,
          exitCode: scripted.exitCode,
          output: scripted.output,
          outputs: openSession.outputs,
          actions: openSession.actions,
        });
      }
      const result = await runAgent({
        client: model.client,
        model: { name: model.name, price: model.price, contextWindow: model.contextWindow },
        system: systemPrompt(
          job.config.instruction,
          job.config.spec,
          isEmptyPlaybook(playbook) && playbook.dockerfile === null && playbook.setup === null
            ? null
            : renderWithinBudget(playbook),
        ),
        firstMessage: [
          brief,
          firstMessage({
            trigger: run.trigger,
            now: this.clock(),
            timezone: job.config.timezone,
            input: run.input,
            instructions: run.instructions,
          }),
        ]
          .filter(Boolean)
          .join('\n\n'),
        tools: [
          ...builtinTools,
          ...toolkitTools(playbook.toolkit, (name, failed) =>
            scriptCalls.set(name, {
              calls: (scriptCalls.get(name)?.calls ?? 0) + 1,
              failures: (scriptCalls.get(name)?.failures ?? 0) + (failed ? 1 : 0),
            }),
          ),
          ...mcpAgentTools(mcp),
        ],
        toolContext: {
          sandbox: s,
          user,
          env: {},
          signal: controller.signal,
          stopReason: () => (stopReason === 'deadline' ? 'the run exceeded its time limit' : 'the run was stopped'),
          remainingMs: () => deadline - this.clock(),
          state: {
            get: (key) => this.ports.jobState.get(ws, run.jobId, key),
            set: (key, value) => this.ports.jobState.set(ctx, ws, run.jobId, key, value),
          },
          remember: (note) => notes.push(note),
          onOutput: (callId, text) => timeline.delta({ type: 'tool_output', callId, text: text.slice(0, 3000) }),
        },
        maxTurns: limits.maxTurns,
        maxCost,
        deadline,
        signal: controller.signal,
        extraSpend: () => session?.llmSpend ?? 0,
        timeline,
        clock: this.clock,
      });
      agentCost = result.cost;
      usage = result.usage;
      turns = result.turns;

      await this.collectArtifacts(s, runId, timeline, mcp);
      // Outputs set with `svc output set` count too; the agent's finish wins per key.
      const outputs = { ...(session.outputs ?? {}), ...result.outputs };
      if (result.status === 'succeeded' && session.failReason) {
        timeline.record('error', { message: session.failReason });
        return await finish('failed', session.failReason, { summary: result.summary, outputs, fellBack, verifyCost });
      }
      return await finish(result.status, result.error, { summary: result.summary, outputs, fellBack, verifyCost });
    } catch (err) {
      this.log.error({ err, runId }, 'run failed unexpectedly');
      await finish('failed', `The run failed unexpectedly: ${errorMessage(err)}`).catch((e: unknown) =>
        this.log.error({ err: e, runId }, 'could not finish the run'),
      );
    } finally {
      if (deadlineTimer) clearTimeout(deadlineTimer);
      cancel.removeEventListener('abort', onCancel);
    }
  }

  /** BEHAVIOUR §1.3 step 5: the run's image, with `sandbox.image_wait` entries when it has to wait for a build. */
  private async resolveImage(
    run: { workspaceId: string; jobId: string; playbookVersion: number },
    fallback: string | null,
    signal: AbortSignal,
    stopReason: () => 'cancel' | 'deadline' | null,
    timeline: TimelineWriter,
  ): Promise<{ image: string | null } | { status: FinalStatus; error: string }> {
    let waitedSince: number | null = null;
    const waitEnded = (done: boolean) => {
      if (waitedSince !== null) timeline.record('sandbox.image_wait', { done }, { ms: this.clock() - waitedSince });
    };
    try {
      const image = await this.ports.runImage({
        workspaceId: run.workspaceId,
        jobId: run.jobId,
        playbookVersion: run.playbookVersion,
        fallback,
        signal,
        onWait: (message) => {
          waitedSince = this.clock();
          timeline.record('sandbox.image_wait', { message });
        },
      });
      waitEnded(true);
      return { image };
    } catch (err) {
      waitEnded(false);
      if (signal.aborted) {
        return stopReason() === 'deadline'
          ? { status: 'timed_out', error: 'the run exceeded its time limit while waiting for the job image' }
          : { status: 'cancelled', error: 'run was stopped' };
      }
      if (err instanceof RunImageError) return { status: 'failed', error: err.message };
      throw err;
    }
  }

  /**
   * Reads back what the run left (artifacts, candidate scripts) once nothing of the sandbox runs any more: its stdio MCP
   * servers are closed, then every process is killed and waited for, so no process can swap a file for a link while
   * the host reads. Without that certainty nothing is read (docs/security.md, "Reading back from sandboxes").
   */
  private async collectArtifacts(
    sandbox: Sandbox,
    runId: string,
    timeline: TimelineWriter,
    mcp: RunMcp | null,
  ): Promise<void> {
    await mcp?.close().catch(() => undefined);
    try {
      await sandbox.stopProcesses();
    } catch (err) {
      timeline.record('log', {
        message: `Collected nothing from the sandbox: its processes could not be stopped (${errorMessage(err)})`,
      });
      return;
    }
    try {
      const { files, truncated } = await sandbox.readDir('/svc/outputs', artifactCap);
      const kept = files.filter((f) => f.name !== '.keep');
      for (const f of kept) {
        await this.files.saveArtifact(runId, f.name, f.content);
      }
      const note = truncated ? ' (the 50 MiB cap left some out)' : '';
      if (kept.length > 0 || truncated)
        timeline.record('log', {
          message: `Collected ${kept.length} artifact(s)${note}`,
          artifacts: kept.map((f) => ({ name: f.name, size: f.size })),
        });
    } catch (err) {
      timeline.record('log', { message: `Could not collect artifacts: ${errorMessage(err)}` });
    }
    // Scripts the agent wrote for reflection to consider (BEHAVIOUR §1.3 wrap-up step 2), at most 1 MiB.
    try {
      const { files } = await sandbox.readDir('/svc/candidates', 1024 * 1024);
      for (const f of files) if (f.name !== '.keep') await this.files.saveCandidate(runId, f.name, f.content);
    } catch (err) {
      timeline.record('log', { message: `Could not collect candidate scripts: ${errorMessage(err)}` });
    }
  }
}
