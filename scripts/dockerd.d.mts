/** Starts a private Docker engine for tests and benchmarks (see dockerd.mjs). */
export function startDockerd(): Promise<{ host: string | null; reason?: string; stop(): Promise<void> }>;
