import type { Sandbox, SandboxUser } from '../../adapters/sandbox/types.js';

export const setupTimeoutMs = 10 * 60_000;

/** The first and last 4,000 characters of a setup script's output: what the timeline keeps. */
export function setupExcerpt(output: string): string {
  return output.length <= 8000
    ? output
    : `${output.slice(0, 4000)}\n[… ${output.length - 8000} characters left out …]\n${output.slice(-4000)}`;
}

/**
 * The playbook's setup script (docs/runs.md, "Phases": setup): `bash -lc` in /workspace as the run's user, with the
 * run's environment, at most 10 minutes (or what is left of the run). Answers its exit code, output excerpt and time.
 */
export async function runSetup(
  sandbox: Sandbox,
  setup: string,
  user: SandboxUser,
  signal: AbortSignal,
  remainingMs: number,
): Promise<{ exitCode: number; output: string; ms: number }> {
  const r = await sandbox.exec({
    cmd: ['bash', '-lc', setup],
    user,
    cwd: '/workspace',
    signal,
    timeoutMs: Math.max(1000, Math.min(setupTimeoutMs, remainingMs)),
  });
  return { exitCode: r.timedOut ? -1 : r.exitCode, output: setupExcerpt(r.output.toString('utf8')), ms: r.ms };
}
