import type { Decider, DomainEvent } from './decider.js';
import { streamCategory } from './stream.js';

/**
 * One stream per job records the schedule occurrences fired. Firing appends with the revision that was read, so
 * with several scheduler processes exactly one fires each occurrence.
 */
export type ScheduleEvent = DomainEvent<'ScheduleFired', { jobId: string; occurrence: number; firedAt: number }>;
export interface ScheduleState {
  lastOccurrence: number | null;
}
export type ScheduleCommand = { type: 'FireSchedule'; jobId: string; occurrence: number; firedAt: number };

export const scheduleStream = streamCategory<ScheduleEvent>('schedule');
export const scheduleStreamId = scheduleStream.id;

export const scheduleDecider: Decider<ScheduleCommand, ScheduleEvent, ScheduleState> = {
  initialState: { lastOccurrence: null },
  evolve: (_state, event) => ({ lastOccurrence: event.data.occurrence }),
  decide(command, state) {
    if (state.lastOccurrence !== null && command.occurrence <= state.lastOccurrence) return [];
    return [
      {
        type: 'ScheduleFired',
        data: { jobId: command.jobId, occurrence: command.occurrence, firedAt: command.firedAt },
      },
    ];
  },
};
