import { parseScriptHeader } from './playbook-header.js';
import type { PlaybookContent } from './playbook.js';
import { canonicalJson, sameValue } from './verify-run.js';

/**
 * Shadow runs (docs/learning.md, "Shadow runs"): when a reflection's new or changed main is tried before it is saved,
 * when that is skipped, and how its outputs compare with the reflected run's. Pure.
 */

/** Main-related ops: the ones a failed shadow run rejects, in the order that picks the op showing the result. */
export const mainRelatedOps = [
  'propose_main',
  'update_main',
  'set_verify',
  'upsert_script',
  'delete_script',
  'set_setup',
  'set_dockerfile',
] as const;

const scriptsKey = (c: PlaybookContent) => JSON.stringify(c.toolkit.map((s) => [s.name, s.content]).sort());

/** A shadow run is due when the proposed content has main and main, verify, setup, the Dockerfile or a script changed. */
export function shadowDue(current: PlaybookContent, proposed: PlaybookContent): boolean {
  if (proposed.main === null) return false;
  return (
    proposed.main !== current.main ||
    canonicalJson(proposed.verify) !== canonicalJson(current.verify) ||
    proposed.setup !== current.setup ||
    proposed.dockerfile !== current.dockerfile ||
    scriptsKey(proposed) !== scriptsKey(current)
  );
}

export interface SkipFacts {
  backendUsable: boolean;
  /** The job's spec lists side effects. */
  specSideEffects: readonly string[];
  /** The reflected run wrote job state (a state_set call or a broker PUT of /v1/state). */
  runWroteState: boolean;
}

/** Why the shadow run is skipped, or null when it may run. */
export function shadowSkipReason(proposed: PlaybookContent, f: SkipFacts): string | null {
  if (!f.backendUsable) return 'no sandbox backend is available to run it';
  if (f.specSideEffects.length > 0) return "the job's spec lists side effects, so its main script is not run twice";
  try {
    if (proposed.main !== null && parseScriptHeader(proposed.main).sideEffects === 'external')
      return 'main declares external side effects';
  } catch {
    // a header that does not parse was rejected with its op
  }
  const external = proposed.toolkit.find((s) => s.sideEffects === 'external');
  if (external) return `the toolkit script ${external.name} has external side effects`;
  if (f.runWroteState) return 'the reflected run wrote job state, which a second run would not see the same way';
  return null;
}

/** Main's time in a shadow run: half the job's timeout, at most 10 minutes. */
export const shadowMainCapMs = 10 * 60_000;
export function shadowMainTimeoutMs(jobTimeoutSeconds: number): { ms: number; capped: boolean } {
  const half = (jobTimeoutSeconds * 1000) / 2;
  return half > shadowMainCapMs ? { ms: shadowMainCapMs, capped: true } : { ms: half, capped: false };
}

const clip = (v: unknown) => {
  const s = typeof v === 'string' ? v : canonicalJson(v);
  return s.length > 200 ? `${s.slice(0, 200)}…` : s;
};

/**
 * After a pass: every declared output the reflected run reported (not null, not listed in `varies`) must come out the
 * same. Answers the mismatch, or null.
 */
export function outputMismatch(
  declared: readonly string[],
  varies: readonly string[],
  run: { number: number; outputs: Record<string, unknown> },
  shadow: Record<string, unknown>,
): string | null {
  for (const name of declared) {
    if (varies.includes(name)) continue;
    const expected = run.outputs[name];
    if (expected === undefined || expected === null) continue;
    const got = shadow[name];
    if (got === undefined || got === null || !sameValue(got, expected)) {
      return `main reported the output ${name} as ${got === undefined || got === null ? 'nothing' : clip(got)}, but run #${run.number} reported ${clip(expected)}`;
    }
  }
  return null;
}
