import type { Decider, DomainEvent } from './decider.js';
import type { Concurrency } from './job-types.js';
import type { RunFigures } from './run-figures.js';
import { streamCategory } from './stream.js';

/**
 * The per-job admission actor (docs/jobs.md, "Triggers and overlap"): numbers runs and applies the overlap policy.
 * Every trigger of a job goes through this one stream with an expected revision, so two triggers never both see the
 * job idle.
 */
export type JobRunsEvent =
  | DomainEvent<'RunAdmitted', { runId: string; number: number; outcome: 'start' | 'wait' | 'skip' }>
  /** A run ended (or never existed); `next` is the queued run that may start now. */
  | DomainEvent<'RunReleased', { runId: string; next: string | null }>
  /**
   * An admin deleted a finished run: its streams and files are gone, this fact stays in the job's history with who
   * and when (the event's metadata), and the run's last figures so statistics keep counting it (docs/design.md,
   * "Run deletion").
   */
  | DomainEvent<'RunDeleted', { runId: string; deletedAt: number; figures: RunFigures }>;

export interface JobRunsState {
  counter: number;
  active: string[];
  waiting: string[];
}

export type JobRunsCommand =
  | { type: 'AdmitRun'; runId: string; concurrency: Concurrency }
  | { type: 'ReleaseRun'; runId: string }
  | { type: 'RecordRunDeleted'; runId: string; figures: RunFigures; now: number };

export const jobRunsStream = streamCategory<JobRunsEvent>('jobruns');
export const jobRunsStreamId = jobRunsStream.id;
export const skippedBecauseBusy = 'Skipped because another run of this job was still active';

export const jobRunsDecider: Decider<JobRunsCommand, JobRunsEvent, JobRunsState> = {
  initialState: { counter: 0, active: [], waiting: [] },

  evolve(state, event) {
    switch (event.type) {
      case 'RunAdmitted': {
        const { runId, number, outcome } = event.data;
        return {
          counter: Math.max(state.counter, number),
          active: outcome === 'start' ? [...state.active, runId] : state.active,
          waiting: outcome === 'wait' ? [...state.waiting, runId] : state.waiting,
        };
      }
      case 'RunReleased': {
        const { runId, next } = event.data;
        const active = state.active.filter((id) => id !== runId);
        const waiting = state.waiting.filter((id) => id !== runId && id !== next);
        return { ...state, active: next ? [...active, next] : active, waiting };
      }
      case 'RunDeleted':
        return state;
    }
  },

  decide(command, state) {
    switch (command.type) {
      case 'AdmitRun': {
        const busy = state.active.length > 0 || (command.concurrency === 'queue' && state.waiting.length > 0);
        const outcome =
          !busy || command.concurrency === 'parallel' ? 'start' : command.concurrency === 'queue' ? 'wait' : 'skip';
        return [{ type: 'RunAdmitted', data: { runId: command.runId, number: state.counter + 1, outcome } }];
      }
      case 'ReleaseRun': {
        const known = state.active.includes(command.runId) || state.waiting.includes(command.runId);
        if (!known) return [];
        const active = state.active.filter((id) => id !== command.runId);
        // Queued runs start one at a time, in trigger order, whatever the previous run's outcome.
        const next = active.length === 0 ? (state.waiting.find((id) => id !== command.runId) ?? null) : null;
        return [{ type: 'RunReleased', data: { runId: command.runId, next } }];
      }
      case 'RecordRunDeleted':
        // Only finished runs are deleted, and those were released already: the actor's state does not change.
        return [
          { type: 'RunDeleted', data: { runId: command.runId, deletedAt: command.now, figures: command.figures } },
        ];
    }
  },
};
