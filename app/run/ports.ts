import type { Limits } from '../../schemas/job.js';
import type { CommandContext } from '../commands.js';
import type { Timeline } from '../timeline.js';
import type { RunImageRequest } from '../images.js';
import type { RunMcp } from '../../adapters/mcp/run-tools.js';
import type { ModelClient, Price } from '../../adapters/models/types.js';
import { brokerPort, proxyPort, type NetworkMode, type SandboxBackend } from '../../adapters/sandbox/types.js';

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
   * The image the run's sandbox starts from (docs/design.md, "Images"): the fallback when the playbook has no
   * Dockerfile, else a build of that Dockerfile, waited for. Rejects with RunImageError (the run's error), or with
   * the signal's reason.
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
const reserved = /^(SVC_.*|HTTPS?_PROXY|https?_proxy|NO_PROXY|no_proxy|NODE_USE_ENV_PROXY|ALL_PROXY|all_proxy)$/;

/**
 * A sandbox's environment: the job's secrets (never over the service's own variables), the broker's address and the
 * run's token, and for networked jobs the egress proxy, which is the only way out of the sandbox (docs/sandbox.md,
 * "Environment"; docs/design.md, "Runs").
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
