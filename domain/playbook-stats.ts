import type { Decider, DomainEvent } from './decider.js';
import type { PlaybookContent } from './playbook.js';
import { streamCategory } from './stream.js';

/**
 * Statistics of a playbook (docs/playbooks.md, "Statistics"): how often reflection said a learning was used, and how
 * often each toolkit script was called and failed. They change with every run, versions never do, so they live in a
 * stream of their own per job and are merged into the content on read. Events carry the totals after them, so
 * projecting one twice changes nothing.
 */

export const playbookStatsStream = streamCategory<PlaybookStatsEvent>('playbookstats');
export const playbookStatsStreamId = playbookStatsStream.id;

export interface LearningHits {
  id: string;
  hits: number;
}
export interface ScriptCalls {
  name: string;
  calls: number;
  failures: number;
}

export interface PlaybookStats {
  learnings: LearningHits[];
  scripts: ScriptCalls[];
}

export type PlaybookStatsEvent =
  | DomainEvent<
      'PlaybookLearningsUsed',
      { jobId: string; workspaceId: string; runId: string | null; ids: string[]; learnings: LearningHits[] }
    >
  | DomainEvent<
      'PlaybookScriptsCalled',
      { jobId: string; workspaceId: string; runId: string | null; counts: ScriptCalls[]; scripts: ScriptCalls[] }
    >;

export type PlaybookStatsCommand =
  /** One hit for each named learning (deduplicated, case-insensitive). */
  | { type: 'CountLearningHits'; jobId: string; workspaceId: string; runId: string | null; ids: string[] }
  /** Calls and failures of toolkit scripts in one finished run, added to the totals. */
  | { type: 'CountScriptCalls'; jobId: string; workspaceId: string; runId: string | null; counts: ScriptCalls[] };

export const emptyStats = (): PlaybookStats => ({ learnings: [], scripts: [] });

export const playbookStatsDecider: Decider<PlaybookStatsCommand, PlaybookStatsEvent, PlaybookStats> = {
  initialState: emptyStats(),
  evolve(state, event) {
    return event.type === 'PlaybookLearningsUsed'
      ? { ...state, learnings: event.data.learnings }
      : { ...state, scripts: event.data.scripts };
  },
  decide(command, state) {
    if (command.type === 'CountLearningHits') {
      // The first spelling of each id wins.
      const ids = command.ids.filter(
        (id, i) => command.ids.findIndex((other) => other.toLowerCase() === id.toLowerCase()) === i,
      );
      if (ids.length === 0) return [];
      const learnings = state.learnings.map((l) => ({ ...l }));
      for (const id of ids) {
        const entry = learnings.find((l) => l.id.toLowerCase() === id.toLowerCase());
        if (entry) entry.hits += 1;
        else learnings.push({ id, hits: 1 });
      }
      return [
        {
          type: 'PlaybookLearningsUsed',
          data: { jobId: command.jobId, workspaceId: command.workspaceId, runId: command.runId, ids, learnings },
        },
      ];
    }
    const counts = command.counts.filter((c) => c.calls > 0 || c.failures > 0);
    if (counts.length === 0) return [];
    const scripts = state.scripts.map((s) => ({ ...s }));
    for (const c of counts) {
      const entry = scripts.find((s) => s.name === c.name);
      if (entry) {
        entry.calls += c.calls;
        entry.failures += c.failures;
      } else scripts.push({ name: c.name, calls: c.calls, failures: c.failures });
    }
    return [
      {
        type: 'PlaybookScriptsCalled',
        data: { jobId: command.jobId, workspaceId: command.workspaceId, runId: command.runId, counts, scripts },
      },
    ];
  },
};

/** The content with its statistics merged in: learning hits by id (case-insensitive), script calls by name. */
export function withStats(c: PlaybookContent, stats: PlaybookStats): PlaybookContent {
  const hits = new Map(stats.learnings.map((l) => [l.id.toLowerCase(), l.hits]));
  const calls = new Map(stats.scripts.map((s) => [s.name, s]));
  return {
    ...c,
    learnings: c.learnings.map((l) => ({ ...l, hits: hits.get(l.id.toLowerCase()) ?? 0 })),
    toolkit: c.toolkit.map((s) => ({
      ...s,
      calls: calls.get(s.name)?.calls ?? 0,
      failures: calls.get(s.name)?.failures ?? 0,
    })),
  };
}
