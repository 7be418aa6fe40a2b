import { DomainError, type Decider, type DomainEvent } from './decider.js';
import type { Mode, RunStatus } from './job-types.js';
import type { AppliedOp } from './playbook-types.js';
import { stopMessages } from './run-stop.js';
import { streamCategory } from './stream.js';

export type Trigger = 'manual' | 'schedule' | 'webhook' | 'api' | 'retry';
export type Reflection = 'skipped' | 'pending' | 'done' | 'failed';
export type FinalStatus = 'succeeded' | 'failed' | 'cancelled' | 'timed_out' | 'skipped';

export const liveStatuses: readonly RunStatus[] = ['queued', 'provisioning', 'running', 'verifying'];
export const finalStatuses: readonly RunStatus[] = ['succeeded', 'failed', 'cancelled', 'timed_out', 'skipped'];
export const isLive = (s: RunStatus) => liveStatuses.includes(s);

/** What a trigger fixes about a run when it is created: later playbook or job changes never reach it. */
export interface RunPlan {
  runId: string;
  jobId: string;
  jobName: string;
  workspaceId: string;
  number: number;
  trigger: Trigger;
  triggeredBy: string | null;
  input: unknown;
  instructions: string | null;
  mode: Mode;
  playbookVersion: number;
  modelId: string | null;
  queuedAt: number;
}

export interface RunOutcome {
  status: FinalStatus;
  error: string | null;
  summary: string | null;
  outputs: Record<string, unknown>;
  cost: number;
  turns: number;
  tokIn: number;
  tokOut: number;
  fellBack: boolean;
  verifyCost: number;
  /** Input and output tokens of the verifier's verdict (payload version 2; 0 in upcast version 1 events). */
  verifyTokens: number;
  reflection: Reflection;
  finishedAt: number;
}

export type RunEvent =
  | DomainEvent<'RunQueued', RunPlan & { submitted: boolean }>
  | DomainEvent<'RunSkipped', RunPlan & { error: string; finishedAt: number }>
  /** A queued run waiting behind another under the `queue` policy may now start. */
  | DomainEvent<'RunSubmitted', { runId: string; jobId: string }>
  | DomainEvent<'RunClaimed', { runId: string; jobId: string; runnerId: string; startedAt: number }>
  | DomainEvent<'RunStarted', { runId: string; jobId: string; sandbox: { id: string; backend: string } }>
  | DomainEvent<'RunVerifying', { runId: string; jobId: string }>
  /** A scripted run whose main fell short goes back to running, now with the agent (docs/learning.md, "Fallback"). */
  | DomainEvent<'RunFellBack', { runId: string; jobId: string; reason: string }>
  | DomainEvent<'RunCancelRequested', { runId: string; jobId: string; requestedAt: number }>
  | DomainEvent<'RunFinished', RunOutcome & { runId: string; jobId: string; msTotal: number | null }>
  /** "Learn from this run" (or a finished run that wants reflection): `key` names this request. */
  | DomainEvent<'RunReflectionRequested', { runId: string; jobId: string; key: string; requestedAt: number }>
  /** A reflector took the request; a request started three times without an end fails. */
  | DomainEvent<
      'RunReflectionStarted',
      { runId: string; jobId: string; key: string; attempt: number; startedAt: number; runnerId: string }
    >
  /** `totalCost` and `totalTokens`: what every reflection of this run has spent so far, this one included. */
  | DomainEvent<
      'RunReflected',
      ReflectionResult & { runId: string; jobId: string; key: string; totalCost: number; totalTokens: number }
    >
  /** Retention removed the run's timeline and files; the run itself stays (docs/design.md, "Retention"). */
  | DomainEvent<'RunPurged', { runId: string; jobId: string; purgedAt: number; retentionDays: number }>;

export interface ReflectionResult {
  status: 'done' | 'failed';
  error: string | null;
  summary: string | null;
  ops: AppliedOp[] | null;
  /** The playbook version it saved, or null when it applied nothing. */
  version: number | null;
  cost: number;
  /** Input and output tokens of the reflection's model calls and of its shadow run's model calls. */
  tokens: number;
}

/** Attempts of one reflection request before it is failed: a reflector that keeps dying must not keep it pending. */
export const maxReflectionAttempts = 3;

export type RunState =
  | { status: 'none' }
  | (RunPlan & {
      status: RunStatus;
      submitted: boolean;
      runnerId: string | null;
      startedAt: number | null;
      cancelRequested: boolean;
      reflection: Reflection;
      reflectionKey: string | null;
      reflectionAttempts: number;
      reflectionCost: number;
      reflectionTokens: number;
      purged: boolean;
    });

export type RunCommand =
  | { type: 'QueueRun'; plan: RunPlan; submitted: boolean }
  | { type: 'SkipRun'; plan: RunPlan; error: string }
  | { type: 'SubmitRun' }
  | { type: 'ClaimRun'; runnerId: string; now: number }
  | { type: 'StartRun'; sandbox: { id: string; backend: string } }
  | { type: 'VerifyRun' }
  | { type: 'FallBackRun'; reason: string }
  | { type: 'CancelRun'; now: number }
  | { type: 'FinishRun'; outcome: RunOutcome }
  | { type: 'RequestReflection'; key: string; now: number }
  | { type: 'StartReflection'; key: string; now: number; runnerId: string }
  | { type: 'FinishReflection'; key: string; result: ReflectionResult }
  | { type: 'PurgeRun'; now: number; retentionDays: number };

export const runStream = streamCategory<RunEvent>('run');
export const runStreamId = runStream.id;
export const notRunning = () => new DomainError('conflict', 'The run is not running');
export const cancelledBeforeStart = stopMessages.cancelledBeforeStart;

function live(state: RunState) {
  if (state.status === 'none') throw DomainError.notFound('Run');
  return state;
}

export const runDecider: Decider<RunCommand, RunEvent, RunState> = {
  initialState: { status: 'none' },

  evolve(state, event) {
    switch (event.type) {
      case 'RunQueued':
        return {
          ...event.data,
          status: 'queued',
          runnerId: null,
          startedAt: null,
          cancelRequested: false,
          reflection: 'skipped',
          reflectionKey: null,
          reflectionAttempts: 0,
          reflectionCost: 0,
          reflectionTokens: 0,
          purged: false,
        };
      case 'RunSkipped':
        return {
          ...event.data,
          status: 'skipped',
          submitted: false,
          runnerId: null,
          startedAt: null,
          cancelRequested: false,
          reflection: 'skipped',
          reflectionKey: null,
          reflectionAttempts: 0,
          reflectionCost: 0,
          reflectionTokens: 0,
          purged: false,
        };
      default:
        break;
    }
    if (state.status === 'none') return state;
    switch (event.type) {
      case 'RunSubmitted':
        return { ...state, submitted: true };
      case 'RunClaimed':
        return { ...state, status: 'provisioning', runnerId: event.data.runnerId, startedAt: event.data.startedAt };
      case 'RunStarted':
        return { ...state, status: 'running' };
      case 'RunVerifying':
        return { ...state, status: 'verifying' };
      case 'RunFellBack':
        return { ...state, status: 'running' };
      case 'RunCancelRequested':
        return { ...state, cancelRequested: true };
      case 'RunFinished':
        return {
          ...state,
          status: event.data.status,
          reflection: event.data.reflection,
          reflectionKey: event.data.reflection === 'pending' ? autoReflectionKey(state.runId) : null,
          reflectionAttempts: 0,
        };
      case 'RunReflectionRequested':
        return { ...state, reflection: 'pending', reflectionKey: event.data.key, reflectionAttempts: 0 };
      case 'RunReflectionStarted':
        return { ...state, reflectionAttempts: event.data.attempt };
      case 'RunReflected':
        return {
          ...state,
          reflection: event.data.status,
          reflectionKey: null,
          reflectionCost: event.data.totalCost,
          reflectionTokens: event.data.totalTokens,
        };
      case 'RunPurged':
        return { ...state, purged: true };
      default:
        return state;
    }
  },

  decide(command, state) {
    switch (command.type) {
      case 'QueueRun':
        if (state.status !== 'none') throw new DomainError('conflict', 'The run exists already');
        return [{ type: 'RunQueued', data: { ...command.plan, submitted: command.submitted } }];
      case 'SkipRun':
        if (state.status !== 'none') throw new DomainError('conflict', 'The run exists already');
        return [
          { type: 'RunSkipped', data: { ...command.plan, error: command.error, finishedAt: command.plan.queuedAt } },
        ];
      case 'SubmitRun': {
        const s = live(state);
        return s.status === 'queued' && !s.submitted
          ? [{ type: 'RunSubmitted', data: { runId: s.runId, jobId: s.jobId } }]
          : [];
      }
      case 'ClaimRun': {
        const s = live(state);
        if (s.status !== 'queued' || !s.submitted) throw new DomainError('conflict', 'The run is not waiting to start');
        return [
          {
            type: 'RunClaimed',
            data: { runId: s.runId, jobId: s.jobId, runnerId: command.runnerId, startedAt: command.now },
          },
        ];
      }
      case 'StartRun': {
        const s = live(state);
        if (s.status !== 'provisioning') throw notRunning();
        return [{ type: 'RunStarted', data: { runId: s.runId, jobId: s.jobId, sandbox: command.sandbox } }];
      }
      case 'VerifyRun': {
        const s = live(state);
        if (s.status !== 'running') throw notRunning();
        return [{ type: 'RunVerifying', data: { runId: s.runId, jobId: s.jobId } }];
      }
      case 'FallBackRun': {
        const s = live(state);
        if (s.status !== 'verifying') throw notRunning();
        return [{ type: 'RunFellBack', data: { runId: s.runId, jobId: s.jobId, reason: command.reason } }];
      }
      case 'CancelRun': {
        const s = live(state);
        if (!isLive(s.status)) throw notRunning();
        // A run nobody claimed yet ends here; a claimed one is stopped by its runner, which finishes it.
        if (s.status === 'queued')
          return [finished(s, { ...emptyOutcome(command.now), status: 'cancelled', error: cancelledBeforeStart })];
        if (s.cancelRequested) return [];
        return [{ type: 'RunCancelRequested', data: { runId: s.runId, jobId: s.jobId, requestedAt: command.now } }];
      }
      case 'FinishRun': {
        const s = live(state);
        if (!isLive(s.status)) throw notRunning();
        return [finished(s, command.outcome)];
      }
      case 'RequestReflection': {
        const s = live(state);
        if (!learnable.includes(s.status))
          throw new DomainError('conflict', 'Only a succeeded, failed or timed-out run can be learned from');
        if (s.reflection === 'pending') throw new DomainError('conflict', 'A reflection of this run is in progress');
        return [
          {
            type: 'RunReflectionRequested',
            data: { runId: s.runId, jobId: s.jobId, key: command.key, requestedAt: command.now },
          },
        ];
      }
      case 'StartReflection': {
        const s = live(state);
        if (s.reflection !== 'pending' || s.reflectionKey !== command.key)
          throw new DomainError('conflict', 'This reflection request is no longer pending');
        return [
          {
            type: 'RunReflectionStarted',
            data: {
              runId: s.runId,
              jobId: s.jobId,
              key: command.key,
              attempt: s.reflectionAttempts + 1,
              startedAt: command.now,
              runnerId: command.runnerId,
            },
          },
        ];
      }
      case 'FinishReflection': {
        const s = live(state);
        if (s.reflection !== 'pending' || s.reflectionKey !== command.key)
          throw new DomainError('conflict', 'This reflection request is no longer pending');
        return [
          {
            type: 'RunReflected',
            data: {
              ...command.result,
              runId: s.runId,
              jobId: s.jobId,
              key: command.key,
              totalCost: s.reflectionCost + command.result.cost,
              totalTokens: s.reflectionTokens + command.result.tokens,
            },
          },
        ];
      }
      case 'PurgeRun': {
        const s = live(state);
        // A live run, or one whose reflection still reads its timeline, keeps it until a later pass.
        if (isLive(s.status) || s.reflection === 'pending' || s.purged) return [];
        return [
          {
            type: 'RunPurged',
            data: { runId: s.runId, jobId: s.jobId, purgedAt: command.now, retentionDays: command.retentionDays },
          },
        ];
      }
    }
  },
};

const learnable: RunStatus[] = ['succeeded', 'failed', 'timed_out'];

/** The key of the reflection a run asks for by itself when it finishes (docs/learning.md, "Reflection"). */
export const autoReflectionKey = (runId: string) => `auto-${runId}`;

export function emptyOutcome(now: number): RunOutcome {
  return {
    status: 'failed',
    error: null,
    summary: null,
    outputs: {},
    cost: 0,
    turns: 0,
    tokIn: 0,
    tokOut: 0,
    fellBack: false,
    verifyCost: 0,
    verifyTokens: 0,
    reflection: 'skipped',
    finishedAt: now,
  };
}

function finished(s: Exclude<RunState, { status: 'none' }>, outcome: RunOutcome): RunEvent {
  const msTotal = s.startedAt === null ? null : Math.max(0, outcome.finishedAt - s.startedAt);
  return { type: 'RunFinished', data: { ...outcome, runId: s.runId, jobId: s.jobId, msTotal } };
}
