import type { ImageRow } from '../../domain/image.js';
import { errorMessage } from '../../domain/error-message.js';
import { RunImageError, type Images } from '../images.js';
import type { ExecutorPorts } from './ports.js';
import type { ReflectorPorts } from './reflector.js';

/** This runner's engine, as far as job images go: the image builder makes a ready build present there. */
export interface LocalImages {
  ensureLocal(build: ImageRow, jobId: string): Promise<void>;
}

const reflectionBuildMs = 20 * 60_000;

/**
 * The image a run starts from on this runner (docs/design.md, "Images"): resolved by `Images`, then built here
 * again when the engine lacks it. A runner without an image builder (`local` null) cannot run a Dockerfile's image.
 */
export function runImageOnThisRunner(images: Images, local: LocalImages | null): ExecutorPorts['runImage'] {
  return async (req) => {
    const resolved = await images.resolveRunImage({ ...req, canBuild: local !== null });
    if (resolved.build && local) {
      await local.ensureLocal(resolved.build, req.jobId).catch((err: unknown) => {
        throw new RunImageError(`Could not rebuild the job image on this runner: ${errorMessage(err)}`);
      });
    }
    return resolved.image;
  };
}

/**
 * Builds a Dockerfile reflection changed before it is saved, through the same image rows runs use (so the saved
 * version's runs find it ready), 20 minutes at most. Answers the image, or the build's error for the rejected op.
 */
export function reflectionImageBuild(
  images: Images,
  local: LocalImages,
  runnerId: string,
): NonNullable<ReflectorPorts['buildImage']> {
  return async (ws, jobId, dockerfile) => {
    try {
      const ctx = { workspaceId: ws, actor: { type: 'system' as const, id: runnerId }, requestId: null };
      await images.ensureBuild(ctx, ws, jobId, dockerfile, 'playbook');
      const signal = AbortSignal.timeout(reflectionBuildMs);
      const built = await images.imageFor({ workspaceId: ws, jobId, canBuild: true, signal }, dockerfile);
      if (built.build) await local.ensureLocal(built.build, jobId);
      return { ref: built.image };
    } catch (err) {
      return { error: errorMessage(err).replace(/^Environment build failed: /, '') };
    }
  };
}
