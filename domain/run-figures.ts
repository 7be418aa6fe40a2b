import type { Mode, RunStatus } from './job-types.js';

/**
 * What the statistics know of one run (docs/design.md, "Stats"): the figures a run's events set, folded into one
 * record. A deleted run's `RunDeleted` fact carries its last figures, so the statistics count it the same whether
 * they were projected live or rebuilt from a log that no longer holds the run's own stream.
 */
export interface RunFigures {
  runId: string;
  jobId: string;
  jobName: string;
  workspaceId: string;
  number: number;
  queuedAt: number;
  status: RunStatus;
  mode: Mode;
  playbookVersion: number;
  /** micro-USD of the run itself. */
  cost: number;
  /** micro-USD of every reflection of the run. */
  reflectionCost: number;
  verifyCost: number;
  /** Tokens of the verifier's verdict (0 in a `RunDeleted` written before they were counted). */
  verifyTokens: number;
  /** tokIn + tokOut of the run itself. */
  tokens: number;
  /** Tokens of the verifier's verdict and of every reflection of the run (docs/design.md, "Stats"). */
  learningTokens: number;
  msTotal: number | null;
  turns: number;
}

/** A run's events as far as its figures go (a structural subset of `RunEvent`, so this module stays a leaf). */
export type FiguresEvent =
  | {
      type: 'RunQueued' | 'RunSkipped';
      data: {
        runId: string;
        jobId: string;
        jobName: string;
        workspaceId: string;
        number: number;
        queuedAt: number;
        mode: Mode;
        playbookVersion: number;
      };
    }
  | { type: 'RunClaimed'; data: { runId: string } }
  | { type: 'RunStarted' | 'RunFellBack'; data: { runId: string } }
  | { type: 'RunVerifying'; data: { runId: string } }
  | {
      type: 'RunFinished';
      data: {
        status: RunStatus;
        cost: number;
        verifyCost: number;
        tokIn: number;
        tokOut: number;
        msTotal: number | null;
        turns: number;
        verifyTokens: number;
      };
    }
  | { type: 'RunReflected'; data: { totalCost: number; totalTokens: number } };

/** The figures after one more event; null until the run is queued or skipped. */
export function nextFigures(figures: RunFigures | null, event: FiguresEvent): RunFigures | null {
  if (event.type === 'RunQueued' || event.type === 'RunSkipped') {
    const d = event.data;
    return {
      runId: d.runId,
      jobId: d.jobId,
      jobName: d.jobName,
      workspaceId: d.workspaceId,
      number: d.number,
      queuedAt: d.queuedAt,
      status: event.type === 'RunSkipped' ? 'skipped' : 'queued',
      mode: d.mode,
      playbookVersion: d.playbookVersion,
      cost: 0,
      reflectionCost: 0,
      verifyCost: 0,
      verifyTokens: 0,
      tokens: 0,
      learningTokens: 0,
      msTotal: null,
      turns: 0,
    };
  }
  if (figures === null) return null;
  switch (event.type) {
    case 'RunClaimed':
      return { ...figures, status: 'provisioning' };
    case 'RunStarted':
    case 'RunFellBack':
      return { ...figures, status: 'running' };
    case 'RunVerifying':
      return { ...figures, status: 'verifying' };
    case 'RunFinished': {
      const o = event.data;
      return {
        ...figures,
        status: o.status,
        cost: o.cost,
        verifyCost: o.verifyCost,
        tokens: o.tokIn + o.tokOut,
        msTotal: o.msTotal,
        turns: o.turns,
        verifyTokens: o.verifyTokens,
        // Reflection comes only after the run finished, so there are no reflection tokens yet.
        learningTokens: o.verifyTokens,
      };
    }
    case 'RunReflected':
      return {
        ...figures,
        reflectionCost: event.data.totalCost,
        learningTokens: figures.verifyTokens + event.data.totalTokens,
      };
  }
}

/** Folds a run's events (other types are ignored) into its figures. */
export function foldFigures(events: ReadonlyArray<{ type: string; data: unknown }>): RunFigures | null {
  let figures: RunFigures | null = null;
  for (const e of events) if (isFiguresEvent(e)) figures = nextFigures(figures, e);
  return figures;
}

const figureTypes = new Set([
  'RunQueued',
  'RunSkipped',
  'RunClaimed',
  'RunStarted',
  'RunFellBack',
  'RunVerifying',
  'RunFinished',
  'RunReflected',
]);

export function isFiguresEvent(e: { type: string; data: unknown }): e is FiguresEvent {
  return figureTypes.has(e.type);
}
