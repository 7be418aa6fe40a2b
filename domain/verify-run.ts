import { parseCheck, type Check, type Verify } from './playbook-verify.js';

/**
 * Verification of a scripted run (docs/learning.md, "Scripted runs"): which checks run, in which order, and what each
 * says about the facts the runner gathered from the sandbox and the broker. Pure: the runner gathers, this judges.
 */

export interface VerifyFacts {
  /** The main script's exit code; −1 when it could not start. */
  exitCode: number;
  /** What the run reported with `svc output set`. */
  outputs: Record<string, unknown>;
  /** The main script's output (stdout and stderr, as the sandbox combines them). */
  stdout: string;
  /** For every `file <path> exists` check: whether the path exists in the sandbox. */
  files: Record<string, boolean>;
}

export interface CheckResult {
  check: string;
  passed: boolean;
  detail?: string;
}

/** The built-in exit check, then `output.<name> exists` for each declared output, then the playbook's checks, without repeats. */
export function checksFor(declaredOutputs: readonly string[], verify: Verify | null): string[] {
  const out: string[] = [];
  const seen = new Set<string>();
  const add = (src: string) => {
    const key = src.trim().replace(/\s+/g, ' ');
    if (!seen.has(key)) {
      seen.add(key);
      out.push(src.trim());
    }
  };
  add('exit_code == 0');
  for (const name of declaredOutputs) add(`output.${name} exists`);
  for (const c of verify?.checks ?? []) add(c);
  return out;
}

/** The paths the runner must look up in the sandbox before `runChecks`. */
export function filePaths(checks: readonly string[]): string[] {
  return checks.map(parseCheck).flatMap((c) => ('kind' in c && c.kind === 'file_exists' ? [c.path] : []));
}

/** JSON with object keys sorted, so `{"a":1,"b":2}` equals `{"b":2,"a":1}`. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** Equality of verify checks: numbers numerically (a numeric string a script reported counts), else canonical JSON. */
export function sameValue(a: unknown, b: unknown): boolean {
  const num = (v: unknown) =>
    typeof v === 'number'
      ? v
      : typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v))
        ? Number(v)
        : null;
  if (typeof a === 'number' || typeof b === 'number') {
    const x = num(a);
    const y = num(b);
    return x !== null && y !== null && x === y;
  }
  return canonicalJson(a) === canonicalJson(b);
}

const clipped = (v: unknown) => {
  const s = canonicalJson(v);
  return s.length > 200 ? `${s.slice(0, 200)}…` : s;
};

function judge(check: Check, facts: VerifyFacts): string | null {
  switch (check.kind) {
    case 'exit_code': {
      const ok = check.op === '==' ? facts.exitCode === check.value : facts.exitCode !== check.value;
      return ok ? null : `the exit code was ${facts.exitCode}`;
    }
    case 'output_exists': {
      const v = facts.outputs[check.name];
      return v === undefined || v === null ? `the output ${check.name} was not set` : null;
    }
    case 'output': {
      const v = facts.outputs[check.name];
      if (v === undefined || v === null) return `the output ${check.name} was not set`;
      if (check.op === '==' || check.op === '!=') {
        const same = sameValue(v, check.value);
        return same === (check.op === '==') ? null : `the output ${check.name} was ${clipped(v)}`;
      }
      const n = typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : Number.NaN;
      if (!Number.isFinite(n)) return `the output ${check.name} was ${clipped(v)}, not a number`;
      const limit = check.value as number;
      const ok =
        check.op === '>' ? n > limit : check.op === '>=' ? n >= limit : check.op === '<' ? n < limit : n <= limit;
      return ok ? null : `the output ${check.name} was ${n}`;
    }
    case 'file_exists':
      return facts.files[check.path] ? null : `${check.path} does not exist`;
    case 'stdout_contains':
      return facts.stdout.includes(check.text) ? null : `the output does not contain ${JSON.stringify(check.text)}`;
  }
}

/** Every check judged, and the failure reason of the first that failed (null when all passed). */
export function runChecks(
  checks: readonly string[],
  facts: VerifyFacts,
): { results: CheckResult[]; failure: string | null } {
  const results: CheckResult[] = [];
  let failure: string | null = null;
  for (const src of checks) {
    const parsed = parseCheck(src);
    const detail = 'error' in parsed ? `it is not a valid check: ${parsed.error}` : judge(parsed, facts);
    results.push(detail === null ? { check: src, passed: true } : { check: src, passed: false, detail });
    if (detail !== null && failure === null) failure = `the check "${src}" failed: ${detail}`;
  }
  return { results, failure };
}

/** The summary of a passed scripted run: `svc summary`, else the verdict's, else a fixed sentence with the end of the output. */
export function scriptedSummary(brokerSummary: string | null, verdictSummary: string | null, stdout: string): string {
  if (brokerSummary && brokerSummary.trim() !== '') return brokerSummary;
  if (verdictSummary && verdictSummary.trim() !== '') return verdictSummary;
  const tail = stdout.slice(-1500).replace(/```/g, "'''");
  return tail.trim() === ''
    ? 'The main script did the job.'
    : `The main script did the job.\n\n\`\`\`\n${tail}\n\`\`\``;
}

/** The script's output as the verifier model sees it: the first 2,000 and the last 4,000 characters. */
export function verdictExcerpt(stdout: string): string {
  if (stdout.length <= 6000) return stdout;
  return `${stdout.slice(0, 2000)}\n[… ${stdout.length - 6000} characters left out …]\n${stdout.slice(-4000)}`;
}

export interface FallbackFacts {
  reason: string;
  lastStep: string | null;
  exitCode: number;
  output: string;
  outputs: Record<string, unknown>;
  /** Non-read-only MCP calls made through the broker. */
  actions: ReadonlyArray<{ server: string; tool: string; args: string; ok: boolean }>;
}

/** What the agent is told when it takes over from a main script that fell short (docs/learning.md, "Fallback"). */
export function fallbackBrief(f: FallbackFacts): string {
  const lines = [
    `This job has a main script at /svc/main, and this time it fell short: ${f.reason}.`,
    f.lastStep ? `The last step it marked with svc step was "${f.lastStep}".` : 'It marked no step with svc step.',
    `It exited with code ${f.exitCode}. The end of its output:`,
    '```',
    f.output.slice(-3000).replace(/```/g, "'''"),
    '```',
    `Outputs it already reported: ${JSON.stringify(f.outputs)}`,
  ];
  if (f.actions.length === 0) {
    lines.push('No action with side effects went through the broker (no MCP tool call that is not read-only).');
  } else {
    lines.push('These actions with side effects already went through the broker; do not repeat them:');
    for (const a of f.actions.slice(0, 200))
      lines.push(
        `- ${a.server}.${a.tool} with ${a.args.length > 300 ? `${a.args.slice(0, 300)}…` : a.args} (${a.ok ? 'succeeded' : 'failed'})`,
      );
  }
  lines.push(
    'The script may also have changed things directly (through toolkit scripts or its own network calls), so check before you redo a step.',
    'Finish the job from where the script stopped, then call finish. Do not edit the script: it is repaired after the run.',
  );
  return lines.join('\n');
}
