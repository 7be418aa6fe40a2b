import { randomBytes } from 'node:crypto';
import type { DebugLog } from '../../../domain/ignore-failure.js';
import type { JobConfig } from '../../../domain/job.js';
import type { PlaybookContent } from '../../../domain/playbook.js';
import { redactor } from '../../../domain/redact.js';
import { runDecider, runStreamId, type FinalStatus, type RunState } from '../../../domain/run.js';
import type { Limits } from '../../../schemas/job.js';
import type { RunFiles } from '../../../adapters/run-files.js';
import type { RunMcp } from '../../../adapters/mcp/run-tools.js';
import type { Usage } from '../../../adapters/models/types.js';
import type { Sandbox, SandboxUser } from '../../../adapters/sandbox/types.js';
import type { EventStore } from '../../../store/event-store.js';
import type { CommandBus, CommandContext } from '../../commands.js';
import type { Runs } from '../../runs.js';
import { TimelineWriter } from '../../timeline.js';
import type { AgentModel, BrokerSession, ExecutorPorts } from '../ports.js';
import type { MainRun } from '../scripted.js';
import { RunStopSignal } from './stop-signal.js';

/** The host services the phases use (docs/runs.md). */
export interface RunServices {
  bus: CommandBus;
  events: EventStore;
  runs: Pick<Runs, 'finish'>;
  ports: ExecutorPorts;
  files: Pick<RunFiles, 'saveArtifact' | 'saveCandidate' | 'savePayload'>;
  log: RunLogger;
  clock: () => number;
}

export interface RunLogger extends DebugLog {
  error(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

/**
 * Why a failed close of a run's MCP connections is only noted: its stdio servers run inside the sandbox, whose
 * processes are stopped or destroyed right after, and a remote server keeps nothing of the run that needs closing.
 */
export const mcpGoesWithTheRun = "stdio MCP servers end with the run's sandbox; a remote one needs nothing more";

export type LiveRun = Exclude<RunState, { status: 'none' }>;

/** What the run holds that the finish phase gives back; each is set as soon as it is acquired. */
export interface HeldResources {
  mcp: RunMcp | null;
  session: BrokerSession | null;
  sandbox: Sandbox | null;
}

/** What the run has spent and done so far: the finish phase turns it into the run's outcome. */
export interface RunTally {
  agentCost: number;
  usage: Usage;
  turns: number;
  verifyCost: number;
  verifyTokens: number;
  /** Toolkit calls and failures per script, recorded beside the playbook when the run finishes. */
  scriptCalls: Map<string, { calls: number; failures: number }>;
  selfImprove: boolean;
  mainRan: boolean;
  /** Reflection may repair a setup script: a failed setup counts as the run having done something. */
  setupFailed: boolean;
  fellBack: boolean;
  /** Set when the scripted or the agent phase starts: from then on the sandbox has something to collect. */
  workStarted: boolean;
  collected: boolean;
}

/** One run's state as its phases go: who it is, what it holds, what it has accumulated. */
export interface RunContext {
  readonly runId: string;
  readonly run: LiveRun;
  readonly workspaceId: string;
  /** The context of the commands the run appends (its actor is the run). */
  readonly command: CommandContext;
  readonly token: string;
  readonly redact: (text: string) => string;
  readonly timeline: TimelineWriter;
  readonly stop: RunStopSignal;
  readonly startedAt: number;
  readonly services: RunServices;
  readonly held: HeldResources;
  readonly tally: RunTally;
  /** The main script's run, for the verify phase; null when the run has no main script to run. */
  main: MainRun | null;
  /** What the agent is told first when it takes over from a main script that fell short. */
  brief: string | null;
}

/** What provisioning adds: the job, its limits and models, and the run's session and sandbox. */
export interface Provisioned {
  job: JobConfig;
  limits: Limits;
  deadline: number;
  model: AgentModel;
  utility: AgentModel;
  user: SandboxUser;
  session: BrokerSession;
  sandbox: Sandbox;
  mcp: RunMcp | null;
}

export type ProvisionedRun = RunContext & Provisioned;
/** A run whose sandbox holds its files: what the setup, scripted, verify and agent phases work on. */
export type PreparedRun = ProvisionedRun & { playbook: PlaybookContent };

/** How a run's work ended: the final status and error before the error policy's last word (./policy.ts). */
export class RunEnd {
  constructor(
    readonly status: FinalStatus,
    readonly error: string | null,
    readonly summary: string | null = null,
    readonly outputs: Record<string, unknown> = {},
  ) {}

  static failed(error: string, outputs: Record<string, unknown> = {}): RunEnd {
    return new RunEnd('failed', error, null, outputs);
  }

  /** The work was cut off by the run's stop signal. */
  static stopped(stop: RunStopSignal, outputs: Record<string, unknown> = {}): RunEnd {
    const { status, error } = stop.outcome();
    return new RunEnd(status, error, null, outputs);
  }
}

const zeroUsage = (): Usage => ({ input: 0, output: 0, cacheRead: 0, cacheWrite: 0, reasoning: 0 });

/**
 * The context of a claimed run, or null when the run is no longer waiting to be provisioned. The run's token is
 * redacted like a secret wherever the run's texts are stored.
 */
export async function openRunContext(
  services: RunServices,
  runId: string,
  cancel: AbortSignal,
): Promise<RunContext | null> {
  const { state: run } = await services.bus.load(runStreamId(runId), runDecider);
  if (run.status !== 'provisioning') return null;
  const workspaceId = run.workspaceId;
  const secretValues = await services.ports.secretValues(workspaceId).catch(() => []);
  const token = randomBytes(32).toString('base64url');
  const redact = redactor([...secretValues, token]);
  const { events, clock, files, log } = services;
  return {
    runId,
    run,
    workspaceId,
    command: { workspaceId, actor: { type: 'run', id: runId }, requestId: null, correlationId: runId },
    token,
    redact,
    timeline: new TimelineWriter(events, runId, workspaceId, redact, clock, files, log),
    stop: new RunStopSignal(cancel),
    startedAt: run.startedAt ?? clock(),
    services,
    held: { mcp: null, session: null, sandbox: null },
    tally: {
      agentCost: 0,
      usage: zeroUsage(),
      turns: 0,
      verifyCost: 0,
      verifyTokens: 0,
      scriptCalls: new Map(),
      selfImprove: false,
      mainRan: false,
      setupFailed: false,
      fellBack: false,
      workStarted: false,
      collected: false,
    },
    main: null,
    brief: null,
  };
}
