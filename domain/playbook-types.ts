import type { Verify } from './playbook-verify.js';

/**
 * The parts of a playbook as the domain stores them in its events (docs/events.md), written here rather than
 * derived from the API's schemas; `schemas/playbook.ts` proves at compile time that the API carries these shapes.
 */

/** Limits of playbook parts; ops, edits and the API's schema all read them, so they agree. */
export const playbookLimits = {
  learningText: 600,
  learningKind: 32,
  learningWhen: 200,
  learnings: 200,
  scripts: 20,
  scriptBytes: 64 * 1024,
  mainBytes: 64 * 1024,
  setupBytes: 16 * 1024,
  dockerfileBytes: 16 * 1024,
  summary: 500,
  sources: 5,
} as const;

export type LearningStatus = 'active' | 'retired';

export interface Learning {
  /** L1, L2, …: unique within the playbook. */
  id: string;
  kind: string;
  text: string;
  /** How often reflection said a run used it; kept beside the versions, not in them. */
  hits: number;
  status: LearningStatus;
  /** Runs it came from, newest last. */
  sources: string[] | null;
  when?: string;
}

/** A toolkit script; description, language, args and side effects are read from its header. */
export interface Script {
  name: string;
  description: string;
  language: string;
  /** Argument name → type, from the svc:args header. */
  args: Record<string, string>;
  sideEffects: 'none' | 'external';
  content: string;
  sources: string[] | null;
  /** Calls in finished runs and those that exited non-zero; kept beside the versions. */
  calls: number;
  failures: number;
}

/** What an edit sends: what GET answered is accepted, but only names and texts count. */
export interface LearningInput {
  id?: string;
  kind?: string;
  text: string;
  hits?: number;
  status?: LearningStatus;
  sources?: string[] | null;
  when?: string | null;
}

export interface ScriptInput {
  name: string;
  content: string;
  description?: string;
  /** Used only to add a shebang to a script without one. */
  language?: string;
  args?: Record<string, string>;
  sideEffects?: string;
  sources?: string[] | null;
  calls?: number;
  failures?: number;
}

export interface ContentInput {
  learnings?: LearningInput[] | null;
  toolkit?: ScriptInput[] | null;
  dockerfile?: string | null;
  setup?: string | null;
  main?: string | null;
  /** `{checks, llm, varies}` or null; parsed by domain/playbook-verify.ts. */
  verify?: unknown;
}

export interface OpTest {
  status: 'passed' | 'failed' | 'skipped';
  detail: string;
  output?: string;
}

/** An op as the reflection model answers it: every field present, unused ones null. */
export interface PlaybookOp {
  op: string;
  rationale: string;
  id: string | null;
  kind: string | null;
  text: string | null;
  when: string | null;
  name: string | null;
  content: string | null;
}

/** One op of a reflection and what became of it. */
export interface AppliedOp extends PlaybookOp {
  status: 'applied' | 'held' | 'rejected';
  flags?: string[] | null;
  reason?: string;
  target?: string;
  test?: OpTest;
}

export type PlaybookAuthor = 'user' | 'reflection' | 'rollback' | 'compile';

/** Content as stored: lists are never null, blank texts are null, statistics are zero (they live beside it). */
export interface PlaybookContent {
  learnings: Learning[];
  toolkit: Script[];
  dockerfile: string | null;
  setup: string | null;
  main: string | null;
  verify: Verify | null;
}
