/**
 * The settings `svc serve` runs with for a small, steady RSS through a long life (docs/design.md, "Memory settings
 * of svc serve"): a 4 MB semi-space for V8's young generation, an old generation let grow by 25% of what survived
 * the last full collection before the next, and two malloc arenas for glibc. Neither can be set by a
 * process that already runs (V8 sizes its new space when the heap is set up; glibc reads the variable at its first
 * allocation), so `npm start`, the Dockerfile and compose.yaml start node with them, and the `svc` command starts
 * itself once more with them when they are missing (cli/svc.ts).
 */
export const serveNodeFlags = ['--max-semi-space-size=4', '--heap-growing-percent=25'] as const;
export const serveEnv = { MALLOC_ARENA_MAX: '2' } as const;
/** Set in the process `svc` starts for itself, so that it never starts another. */
export const wrappedMarker = 'SVC_SERVE_WRAPPED';

/** A V8 flag's name as node spells it on the command line: dashes, without `--`, `--no-` or a value. */
const flagName = (arg: string) =>
  arg
    .replace(/^--(no-)?/, '')
    .split('=')[0]!
    .replace(/_/g, '-');

/**
 * What a `svc serve` started with `execArgv` and `env` lacks of the settings, as the node flags and the variables to
 * add. An operator's own choice wins: a flag of the same name given on the command line or in NODE_OPTIONS (its
 * `--no-` form too), any MALLOC_ARENA_MAX.
 */
export function missingSettings(
  execArgv: readonly string[],
  env: NodeJS.ProcessEnv,
): { flags: string[]; env: Record<string, string> } {
  const given = new Set(
    [...execArgv, ...(env.NODE_OPTIONS ?? '').split(/\s+/)].filter((a) => a.startsWith('--')).map(flagName),
  );
  return {
    flags: serveNodeFlags.filter((f) => !given.has(flagName(f))),
    env: Object.fromEntries(Object.entries(serveEnv).filter(([k]) => env[k] === undefined)),
  };
}
