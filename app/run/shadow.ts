import { runSetup } from './setup.js';
import { randomBytes, randomUUID } from 'node:crypto';
import type { JobConfig } from '../../domain/job.js';
import type { PlaybookContent } from '../../domain/playbook.js';
import { playbookFiles } from '../../domain/playbook-render.js';
import { outputMismatch, shadowMainTimeoutMs } from '../../domain/shadow.js';
import type { Limits } from '../../schemas/job.js';
import type { OpTest } from '../../schemas/playbook.js';
import { discardedTimeline } from '../timeline.js';
import { sandboxEnv, type BrokerSession, type ExecutorPorts } from './executor.js';
import type { RunMcp } from '../../adapters/mcp/run-tools.js';
import { runScripted } from './scripted.js';
import type { Sandbox } from '../../adapters/sandbox/types.js';
import { errorMessage } from '../../domain/error-message.js';

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

export interface ShadowOutcome {
  test: OpTest;
  /** `svc llm` and verifier spend, which reflection adds to its cost. */
  cost: number;
}

const minutes = (ms: number) => `${Math.floor(ms / 60_000)}m${Math.round((ms % 60_000) / 1000)}s`;

/**
 * Tries a proposed main script before reflection saves it (BEHAVIOUR §2.8): a fresh sandbox prepared like a real
 * run's, the reflected run's input, job state through a copy-on-write overlay, MCP actions refused, events discarded.
 * Passed, failed (with main's output for the model's second attempt), or skipped when it could not say.
 */
export class ShadowRunner {
  constructor(
    private readonly ports: ExecutorPorts,
    private readonly log: { error(obj: object, msg: string): void },
    private readonly clock: () => number = Date.now,
  ) {}

  async run(req: ShadowRequest): Promise<ShadowOutcome> {
    const skipped = (detail: string, cost = 0): ShadowOutcome => ({ test: { status: 'skipped', detail }, cost });
    const ws = req.workspaceId;
    const settings = await this.ports.settings(ws);
    const limits = { ...settings.defaultLimits, ...req.job.limits } as Limits;
    const main = shadowMainTimeoutMs(limits.timeoutSeconds);
    const model = await this.ports.agentModel(ws, req.job.modelId);
    if (!model) return skipped('no model is configured, so the shadow run could not start');
    if (req.dockerfileChanged && req.image === undefined)
      return skipped('the Dockerfile changed and its image was not built');
    const utility = (await this.ports.utilityModel(ws, req.job.modelId)) ?? model;

    const runId = `shadow-${randomUUID()}`;
    const token = randomBytes(32).toString('base64url');
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), main.ms + 5 * 60_000);
    let sandbox: Sandbox | null = null;
    let session: BrokerSession | null = null;
    let mcp: RunMcp | null = null;
    try {
      const image = req.dockerfileChanged
        ? (req.image ?? null)
        : await this.ports.runImage({
            workspaceId: ws,
            jobId: req.jobId,
            playbookVersion: req.baseVersion,
            fallback: req.job.image ?? settings.defaultImage,
            signal: controller.signal,
          });
      mcp =
        (await this.ports.mcp?.(ws, req.jobId, {
          shadow: true,
          runAsRoot: req.job.runAsRoot,
          timeline: () => undefined,
        })) ?? null;
      const opened = await this.ports.openSession({
        runId,
        jobId: req.jobId,
        workspaceId: ws,
        token,
        costLimit: Math.round(limits.maxCostUsd * 1e6),
        timeline: discardedTimeline,
        agentModel: model,
        utilityModel: utility,
        agentSpend: () => 0,
        mcp,
        stateOverlay: true,
        egress: {
          network: req.job.network,
          allowedDomains: req.job.allowedDomains,
          allowPrivateNetwork: req.job.allowPrivateNetwork,
        },
      });
      session = opened.session;
      try {
        sandbox = await this.ports.backend.create({
          id: runId,
          labels: { runId, jobId: req.jobId, workspaceId: ws },
          image,
          limits: { cpus: limits.cpus, memoryMb: limits.memoryMb, pidsLimit: limits.pidsLimit, diskMb: limits.diskMb },
          network: req.job.network,
          runAsRoot: req.job.runAsRoot,
          env: sandboxEnv(await this.ports.secretEnv(ws, req.jobId), token, runId, req.jobId, req.job.network),
          brokerSocket: opened.brokerSocket,
          proxySocket: opened.proxySocket,
          ttlMs: main.ms + 10 * 60_000,
        });
      } catch (err) {
        return skipped(`the shadow run's sandbox could not be created: ${errorMessage(err)}`);
      }
      await sandbox.putFiles([
        { path: '/svc/input.json', content: JSON.stringify(req.reflected.input ?? {}) },
        ...playbookFiles(req.proposed),
        { path: '/svc/outputs/.keep', content: '' },
        { path: '/svc/candidates/.keep', content: '' },
        { path: '/svc/logs/.keep', content: '' },
      ]);
      if (req.proposed.setup !== null) {
        const setup = await runSetup(
          sandbox,
          req.proposed.setup,
          req.job.runAsRoot ? 'root' : 'agent',
          controller.signal,
          main.ms,
        );
        if (setup.exitCode !== 0)
          return skipped(`inconclusive: the setup script failed with exit code ${setup.exitCode}`);
      }
      await mcp?.connect(sandbox);
      const spec = req.job.spec as { outputs?: Array<{ name: string }>; successCriteria?: string[] };
      const declared = (spec.outputs ?? []).map((o) => o.name);
      const openSession = session;
      const result = await runScripted({
        sandbox,
        user: req.job.runAsRoot ? 'root' : 'agent',
        timeline: discardedTimeline,
        session: openSession,
        signal: controller.signal,
        clock: this.clock,
        // runScripted gives main half of what remains: twice main's own time.
        remainingMs: () => main.ms * 2,
        stopReason: () => ({ status: 'timed_out', error: 'the shadow run exceeded its time limit' }),
        declaredOutputs: declared,
        verify: req.proposed.verify,
        instruction: req.job.instruction,
        successCriteria: spec.successCriteria ?? [],
        verdictModel: utility,
        onVerifying: async () => undefined,
      });
      // Nothing of the sandbox runs once main is judged: a process it left cannot change what is read back from it
      // (docs/security.md, "Reading back from sandboxes").
      await mcp?.close().catch(() => undefined);
      await sandbox.stopProcesses();
      const cost = openSession.llmSpend + (result.kind === 'stopped' ? 0 : result.verifyCost);
      if ((mcp?.refused.length ?? 0) > 0)
        return skipped(
          `inconclusive: the main script called MCP tools with side effects (${mcp!.refused.map((r) => `${r.server}.${r.tool}`).join(', ')}), which a shadow run refuses`,
          cost,
        );
      if (result.kind === 'stopped') return skipped('inconclusive: the shadow run ran out of time', cost);
      if (result.kind === 'fell_short') {
        if (/did not finish within/.test(result.reason)) {
          return main.capped
            ? skipped(`inconclusive: main did not finish within ${minutes(main.ms)} a shadow run allows`, cost)
            : {
                test: {
                  status: 'failed',
                  detail: "main did not finish within half of the run's time limit",
                  output: result.output.slice(-3000),
                },
                cost,
              };
        }
        if (/^the verifier could not judge/.test(result.reason)) return skipped(`inconclusive: ${result.reason}`, cost);
        return { test: { status: 'failed', detail: result.reason, output: result.output.slice(-3000) }, cost };
      }
      const recent =
        req.reflected.status === 'succeeded' &&
        req.reflected.finishedAt !== null &&
        this.clock() - req.reflected.finishedAt <= 60 * 60_000;
      if (declared.length > 0 && recent) {
        const mismatch = outputMismatch(
          declared,
          req.proposed.verify?.varies ?? [],
          { number: req.reflected.number, outputs: req.reflected.outputs },
          result.outputs,
        );
        if (mismatch) return { test: { status: 'failed', detail: mismatch, output: '' }, cost };
        return {
          test: {
            status: 'passed',
            detail: `main passed its shadow run, and its outputs matched run #${req.reflected.number}`,
          },
          cost,
        };
      }
      return { test: { status: 'passed', detail: 'main passed its shadow run (outputs not compared)' }, cost };
    } catch (err) {
      if (controller.signal.aborted) return skipped('inconclusive: the shadow run ran out of time');
      this.log.error({ err, jobId: req.jobId }, 'shadow run failed');
      return skipped(`the shadow run could not run: ${errorMessage(err)}`);
    } finally {
      clearTimeout(timer);
      session?.close();
      await mcp?.close().catch(() => undefined);
      await sandbox?.destroy().catch(() => undefined);
    }
  }
}
