import { arch } from 'node:os';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { BwrapBackend } from './bwrap.js';
import type { SandboxBackend } from './types.js';

/** The static in-sandbox svc built by `npm run build` for this machine's architecture. */
export function svcBinaryPath(): string {
  // From the sources (tsx) or from dist/: the package root is the one without the trailing dist/.
  const root = fileURLToPath(new URL('../..', import.meta.url)).replace(/\/dist\/$/, '/');
  return join(root, 'dist', 'svc', `svc-${arch() === 'arm64' ? 'arm64' : 'amd64'}`);
}

/** SVC_SANDBOX picks the backend; bwrap is the default on machines without a container engine. */
export function selectBackend(env: NodeJS.ProcessEnv, sandboxRoot: string): SandboxBackend {
  const kind = env.SVC_SANDBOX ?? 'bwrap';
  if (kind === 'bwrap') return new BwrapBackend(sandboxRoot, svcBinaryPath());
  throw new Error(`SVC_SANDBOX=${kind} is not available in this build (use bwrap)`);
}
