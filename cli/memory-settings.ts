/**
 * The settings `svc serve` runs with for a small, steady RSS through a long life (docs/design.md, "Memory settings
 * of svc serve"): a 4 MB semi-space for V8's young generation, and two malloc arenas for glibc. Neither can be set by a
 * process that already runs (V8 sizes its new space when the heap is set up; glibc reads the variable at its first
 * allocation), so `npm start`, the Dockerfile and compose.yaml start node with them, and the `svc` command starts
 * itself once more with them when they are missing (cli/svc.ts).
 */
export const serveNodeFlags = ['--max-semi-space-size=4'] as const;
export const serveEnv = { MALLOC_ARENA_MAX: '2' } as const;
/** Set in the process `svc` starts for itself, so that it never starts another. */
export const wrappedMarker = 'SVC_SERVE_WRAPPED';

/**
 * What a `svc serve` started with `execArgv` and `env` lacks of the settings, as the node flags and the variables to
 * add. An operator's own choice wins: a semi-space size given on the command line or in NODE_OPTIONS, any
 * MALLOC_ARENA_MAX.
 */
export function missingSettings(
  execArgv: readonly string[],
  env: NodeJS.ProcessEnv,
): { flags: string[]; env: Record<string, string> } {
  const given = [...execArgv, ...(env.NODE_OPTIONS ?? '').split(/\s+/)];
  const semiSpaceGiven = given.some((a) => /^--max[-_]semi[-_]space[-_]size(=|$)/.test(a));
  return {
    flags: semiSpaceGiven ? [] : [...serveNodeFlags],
    env: env.MALLOC_ARENA_MAX !== undefined ? {} : { ...serveEnv },
  };
}
