/**
 * When a job may graduate to its main script and when it falls back to the agent for good (docs/learning.md,
 * "Graduation" and "Demotion"). The server decides both from the run records, never the model. Pure.
 */

export interface RunRecord {
  number: number;
  status: string;
  mode: string;
  fellBack: boolean;
  playbookVersion: number;
}

/**
 * Demoted: the latest two scripted runs at or after the graduation that ended (succeeded, failed or timed out) both
 * fell back. A repair of main does not reset the count; only a new graduation (a higher graduatedVersion) does.
 */
export function isDemoted(runs: readonly RunRecord[], graduatedVersion: number | null): boolean {
  const since = graduatedVersion ?? 0;
  const ended = runs
    .filter(
      (r) =>
        r.mode === 'scripted' && r.playbookVersion >= since && ['succeeded', 'failed', 'timed_out'].includes(r.status),
    )
    .sort((a, b) => b.number - a.number)
    .slice(0, 2);
  return ended.length === 2 && ended.every((r) => r.fellBack);
}

const readOnlyCommands = new Set([
  'cat',
  'head',
  'tail',
  'ls',
  'grep',
  'rg',
  'jq',
  'wc',
  'find',
  'file',
  'stat',
  'echo',
  'printf',
  'pwd',
  'tree',
  'du',
  'diff',
]);

/** Read-only bash: no `>` anywhere, and every segment (split on &&, ||, ; and |) starts with a reading command. */
export function isReadOnlyBash(command: string): boolean {
  if (command.includes('>')) return false;
  return command
    .split(/&&|\|\||;|\|/)
    .map((s) => s.trim())
    .every((segment) => readOnlyCommands.has(segment.split(/\s+/)[0] ?? ''));
}

export interface ToolCallRecord {
  name: string;
  /** The bash command, for bash calls. */
  command?: string;
}

export interface GraduationRun {
  number: number;
  status: string;
  mode: string;
  toolCalls: readonly ToolCallRecord[];
}

export interface GraduationInput {
  hasMain: boolean;
  demoted: boolean;
  /** The run being reflected on. */
  run: GraduationRun;
  /** The job's latest run number. */
  latestNumber: number;
  /** The two runs before `run`, newest first (fewer when the job has fewer). */
  previous: readonly GraduationRun[];
}

export const maxAdHocBash = 2;

const adHocBash = (r: GraduationRun) =>
  r.toolCalls.filter((c) => c.name === 'bash' && !isReadOnlyBash(c.command ?? '')).length;
const toolSequence = (r: GraduationRun) =>
  r.toolCalls
    .filter((c) => c.name.includes('__'))
    .map((c) => c.name)
    .join('\n');

/** Null when the job may graduate on this run; otherwise the worded reason, which reflection passes to the model. */
export function graduationBlocker(input: GraduationInput): string | null {
  if (input.hasMain && !input.demoted) return 'the job already runs its main script';
  if (input.run.number !== input.latestNumber)
    return `run #${input.latestNumber} is newer than run #${input.run.number}; graduation is judged on the latest run`;
  const runs = [input.run, ...input.previous.slice(0, 2)];
  if (runs.length < 3) return `it takes 3 successful assisted runs in a row, and the job has ${runs.length} to judge`;
  for (const r of runs) {
    if (r.status !== 'succeeded') return `run #${r.number} did not succeed`;
    if (r.mode !== 'assisted') return `run #${r.number} ran in ${r.mode} mode, not assisted`;
    const adHoc = adHocBash(r);
    if (adHoc > maxAdHocBash) return `run #${r.number} made ${adHoc} ad-hoc bash calls (at most ${maxAdHocBash})`;
  }
  const sequence = toolSequence(input.run);
  const differing = runs.find((r) => toolSequence(r) !== sequence);
  if (differing)
    return `run #${differing.number} called a different sequence of toolkit and MCP tools than run #${input.run.number}`;
  return null;
}
