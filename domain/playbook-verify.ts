/**
 * The playbook's `verify` field (docs/playbooks.md, "Verify"): the checks a scripted run must pass, whether a model
 * also judges the result, and which outputs may vary between runs. Parsed strictly here, once, so a saved playbook
 * never holds a check the verifier would have to guess at. Pure.
 */

export interface Verify {
  checks: string[];
  llm: boolean;
  varies: string[];
}

export type CompareOp = '==' | '!=' | '>' | '>=' | '<' | '<=';

/** A check in parsed form, ready for the verifier of a scripted run. */
export type Check =
  | { kind: 'exit_code'; op: '==' | '!='; value: number }
  | { kind: 'output_exists'; name: string }
  | { kind: 'output'; name: string; op: CompareOp; value: unknown }
  | { kind: 'file_exists'; path: string }
  | { kind: 'stdout_contains'; text: string };

export const verifyLimits = { checks: 20, varies: 20, checkChars: 1000 };

/** One problem, with the dotted path below `verify` it concerns (`checks[2]`), or '' for the whole value. */
export interface VerifyProblem {
  path: string;
  message: string;
}

const outputName = '[A-Za-z0-9_.-]+';
const exitCode = /^exit_code\s*(==|!=)\s*(-?\d+)$/;
const outputExists = new RegExp(`^output\\.(${outputName})\\s+exists$`);
const outputCompare = new RegExp(`^output\\.(${outputName})\\s*(==|!=|>=|<=|>|<)\\s*(.+)$`);
const fileExists = /^file\s+(\S+)\s+exists$/;
const stdoutContains = /^stdout\s+contains\s+(".*")$/;

/** Parses one check; answers an error message instead when it does not follow the syntax. */
export function parseCheck(source: string): Check | { error: string } {
  const src = source.trim();
  let m = exitCode.exec(src);
  if (m) return { kind: 'exit_code', op: m[1] as '==' | '!=', value: Number(m[2]) };
  m = outputExists.exec(src);
  if (m) return { kind: 'output_exists', name: m[1]! };
  m = outputCompare.exec(src);
  if (m) {
    let value: unknown;
    try {
      value = JSON.parse(m[3]!);
    } catch {
      return { error: `the value after ${m[2]} must be JSON (a string needs quotes)` };
    }
    const op = m[2] as CompareOp;
    if (op !== '==' && op !== '!=' && typeof value !== 'number') return { error: `${op} compares numbers only` };
    return { kind: 'output', name: m[1]!, op, value };
  }
  m = fileExists.exec(src);
  if (m) {
    const path = m[1]!;
    if (!path.startsWith('/svc/outputs/') && !path.startsWith('/workspace/'))
      return { error: 'a file check must name a path under /svc/outputs/ or /workspace/' };
    if (path.split('/').includes('..')) return { error: 'a file check must not use ..' };
    return { kind: 'file_exists', path };
  }
  m = stdoutContains.exec(src);
  if (m) {
    try {
      const text = JSON.parse(m[1]!) as unknown;
      if (typeof text === 'string' && text !== '') return { kind: 'stdout_contains', text };
    } catch {
      // reported below
    }
    return { error: 'stdout contains takes a non-empty JSON string, such as stdout contains "done"' };
  }
  return {
    error:
      'is not a check; use exit_code == N, output.<name> exists, output.<name> <op> <JSON>, file <path> exists or stdout contains "<text>"',
  };
}

/**
 * The strict parse of a `verify` value: null (or an empty value) clears it; otherwise an object with only `checks`,
 * `llm` and `varies`, each optional. Answers the normalized value or every problem found.
 */
export function parseVerify(value: unknown): { verify: Verify | null; problems: VerifyProblem[] } {
  const problems: VerifyProblem[] = [];
  if (value === null || value === undefined || value === '') return { verify: null, problems };
  if (typeof value !== 'object' || Array.isArray(value))
    return {
      verify: null,
      problems: [{ path: '', message: 'must be an object with checks, llm and varies, or null' }],
    };
  const raw = value as Record<string, unknown>;
  for (const key of Object.keys(raw))
    if (!['checks', 'llm', 'varies'].includes(key))
      problems.push({ path: key, message: 'is not a known field (checks, llm, varies)' });
  const strings = (key: 'checks' | 'varies', max: number): string[] => {
    const list = raw[key];
    if (list === undefined || list === null) return [];
    if (!Array.isArray(list)) {
      problems.push({ path: key, message: 'must be an array of strings' });
      return [];
    }
    if (list.length > max) problems.push({ path: key, message: `must have at most ${max} items` });
    const out: string[] = [];
    list.forEach((item, i) => {
      if (typeof item !== 'string' || item.trim() === '')
        problems.push({ path: `${key}[${i}]`, message: 'must be a non-empty string' });
      else out.push(item.trim());
    });
    return out;
  };
  const checks = strings('checks', verifyLimits.checks);
  checks.forEach((c, i) => {
    if (c.length > verifyLimits.checkChars)
      problems.push({ path: `checks[${i}]`, message: `must be at most ${verifyLimits.checkChars} characters` });
    const parsed = parseCheck(c);
    if ('error' in parsed) problems.push({ path: `checks[${i}]`, message: parsed.error });
  });
  const varies = strings('varies', verifyLimits.varies);
  const llm = raw.llm;
  if (llm !== undefined && llm !== null && typeof llm !== 'boolean')
    problems.push({ path: 'llm', message: 'must be true or false' });
  return { verify: problems.length > 0 ? null : { checks, llm: llm === true, varies }, problems };
}
