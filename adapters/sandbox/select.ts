import { arch } from 'node:os';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { BwrapBackend } from './bwrap.js';
import type { SandboxBackend } from './types.js';

/** The image docker sandboxes start from when neither the job nor the workspace names one (scripts/prepare-host.sh builds it). */
export const defaultSandboxImage = 'svc-base:bookworm';

/** The static in-sandbox svc built by `npm run build` for this machine's architecture. */
export function svcBinaryPath(): string {
  // From the sources (tsx) or from dist/: the package root is the one without the trailing dist/.
  const root = fileURLToPath(new URL('../..', import.meta.url)).replace(/\/dist\/$/, '/');
  return join(root, 'dist', 'svc', `svc-${arch() === 'arm64' ? 'arm64' : 'amd64'}`);
}

/**
 * SVC_SANDBOX picks the backend (`bwrap` by default: no engine needed); `docker` talks to SVC_DOCKER_HOST (or the
 * default socket) with SVC_SANDBOX_IMAGE as the default image.
 */
export async function selectBackend(
  sandbox: { backend: string; dockerHost: string | undefined; image: string | undefined },
  sandboxRoot: string,
  instance: string,
): Promise<SandboxBackend> {
  if (sandbox.backend === 'bwrap') return new BwrapBackend(sandboxRoot, svcBinaryPath());
  if (sandbox.backend === 'docker') {
    // Loaded only for docker: the engine's client is a large module an embedded bwrap service never needs.
    const { DockerBackend, dockerClient } = await import('./docker.js');
    return new DockerBackend(
      dockerClient(sandbox.dockerHost),
      svcBinaryPath(),
      sandbox.image ?? defaultSandboxImage,
      instance,
    );
  }
  throw new Error(`SVC_SANDBOX=${sandbox.backend} is not a sandbox backend (bwrap or docker)`);
}
