import { createHash } from 'node:crypto';
import { DomainError, type Decider, type DomainEvent } from './decider.js';
import { streamCategory } from './stream.js';

/**
 * Job images (docs/design.md, "Images"): builds of a job's playbook Dockerfile. One aggregate per job holds every build
 * of it, because the decisions that matter compare builds with each other ("is there a build of this Dockerfile yet?",
 * "did the latest one fail?"); one stream makes them race-free under expected-revision appends.
 */

export type ImageStatus = 'queued' | 'building' | 'ready' | 'failed';
export const imageStatuses: readonly ImageStatus[] = ['queued', 'building', 'ready', 'failed'];

/** A build pool task runs at most twice; only an interruption (shutdown, lost runner) earns the second attempt. */
export const maxBuildAttempts = 2;
/** A queued or building image with no event for this long is resubmitted by EnsureBuild. */
export const staleAfterMs = 25 * 60_000;

export interface ImageRow {
  imageId: string;
  dockerfileHash: string;
  dockerfile: string;
  status: ImageStatus;
  ref: string | null;
  digest: string | null;
  baseDigest: string | null;
  sizeBytes: number | null;
  error: string | null;
  createdAt: number;
  startedAt: number | null;
  finishedAt: number | null;
  attempts: number;
  builderId: string | null;
  /** Time of the row's last event: what "without progress" is measured from. */
  progressAt: number;
}

export interface JobImagesState {
  jobId: string | null;
  workspaceId: string | null;
  /** In creation order: the last row of a hash is its latest build. */
  images: ImageRow[];
}

export type ImageEvent =
  | DomainEvent<
      'ImageQueued',
      {
        imageId: string;
        jobId: string;
        workspaceId: string;
        dockerfile: string;
        dockerfileHash: string;
        reason: 'playbook' | 'rebuild' | 'run';
        queuedAt: number;
      }
    >
  | DomainEvent<
      'ImageBuildStarted',
      { imageId: string; jobId: string; builderId: string; attempt: number; startedAt: number }
    >
  | DomainEvent<
      'ImageBuilt',
      {
        imageId: string;
        jobId: string;
        ref: string;
        digest: string;
        baseDigest: string | null;
        sizeBytes: number;
        finishedAt: number;
      }
    >
  | DomainEvent<
      'ImageBuildFailed',
      { imageId: string; jobId: string; error: string; baseDigest: string | null; finishedAt: number }
    >
  /** Back to the queue: an interrupted attempt, or a build that made no progress for 25 minutes. */
  | DomainEvent<'ImageRequeued', { imageId: string; jobId: string; reason: string; at: number }>
  /** ImageGC removed the build (its engine image first). */
  | DomainEvent<'ImageDeleted', { imageId: string; jobId: string; at: number }>;

export type ImageCommand =
  | {
      type: 'EnsureBuild';
      imageId: string;
      jobId: string;
      workspaceId: string;
      dockerfile: string;
      reason: 'playbook' | 'run';
      now: number;
    }
  | { type: 'Rebuild'; imageId: string; jobId: string; workspaceId: string; dockerfile: string; now: number }
  | { type: 'ClaimBuild'; imageId: string; builderId: string; now: number }
  | {
      type: 'CompleteBuild';
      imageId: string;
      builderId: string;
      ref: string;
      digest: string;
      baseDigest: string | null;
      sizeBytes: number;
      now: number;
    }
  /** `interrupted`: the attempt was cut short (shutdown, runner gone), not refused by the engine; it may be retried. */
  | {
      type: 'FailBuild';
      imageId: string;
      builderId: string;
      error: string;
      baseDigest: string | null;
      interrupted: boolean;
      now: number;
    }
  | { type: 'DeleteImage'; imageId: string; now: number };

export const jobImagesStream = streamCategory<ImageEvent>('jobimages');
export const jobImagesStreamId = jobImagesStream.id;

/** sha256 hex of the trimmed Dockerfile text: whitespace around it does not make a new image. */
export function dockerfileHash(dockerfile: string): string {
  return createHash('sha256').update(dockerfile.trim()).digest('hex');
}

/** `svc/job-<jobId>:<hash[:16]>-<last 12 hex of the image id>`: every build gets its own tag. */
export function imageTag(jobId: string, hash: string, imageId: string): string {
  const hex = imageId.replace(/[^0-9a-f]/gi, '').toLowerCase();
  return `svc/job-${jobId.toLowerCase()}:${hash.slice(0, 16)}-${hex.slice(-12)}`;
}

/** The latest row of a hash, and the newest ready one (which may be the same). */
export function buildsOf(state: JobImagesState, hash: string): { latest: ImageRow | null; ready: ImageRow | null } {
  const rows = state.images.filter((i) => i.dockerfileHash === hash);
  const ready = [...rows].reverse().find((i) => i.status === 'ready') ?? null;
  return { latest: rows[rows.length - 1] ?? null, ready };
}

export type RunImageChoice =
  | { kind: 'use'; image: ImageRow }
  | { kind: 'failed'; image: ImageRow }
  | { kind: 'wait'; image: ImageRow }
  | { kind: 'missing' };

/**
 * What a run of `hash` starts from: the newest ready build of that very Dockerfile; failing that, the latest build's
 * error; else it waits. Never a build of another Dockerfile, never the base image.
 */
export function runImageChoice(state: JobImagesState, hash: string): RunImageChoice {
  const { latest, ready } = buildsOf(state, hash);
  if (ready) return { kind: 'use', image: ready };
  if (!latest) return { kind: 'missing' };
  if (latest.status === 'failed') return { kind: 'failed', image: latest };
  return { kind: 'wait', image: latest };
}

/**
 * The first external `FROM` image (after an optional `--platform=…`), with its line, so a build can pin it to a
 * digest. Stages named by an earlier `AS` are not external; an image that already has a digest needs no pin.
 */
export function firstExternalBase(dockerfile: string): { image: string; line: number } | null {
  const lines = dockerfile.split('\n');
  const stages = new Set<string>();
  for (let i = 0; i < lines.length; i++) {
    const m = /^\s*FROM\s+(.*)$/i.exec(lines[i]!);
    if (!m) continue;
    const words = m[1]!
      .trim()
      .split(/\s+/)
      .filter((w) => !w.startsWith('--'));
    const image = words[0];
    if (!image) continue;
    const internal = stages.has(image.toLowerCase()) || image.toLowerCase() === 'scratch';
    if (words[1]?.toLowerCase() === 'as' && words[2]) stages.add(words[2].toLowerCase());
    if (internal) continue;
    // A base named by a build argument is only known to the engine.
    if (image.includes('$')) return null;
    return image.includes('@') ? null : { image, line: i };
  }
  return null;
}

/** `repo[:tag]` → `repo` (a registry port is not a tag). */
export function repositoryOf(image: string): string {
  const slash = image.lastIndexOf('/');
  const colon = image.lastIndexOf(':');
  return colon > slash ? image.slice(0, colon) : image;
}

/** The Dockerfile with its first external base replaced by `repo@digest`. */
export function pinnedDockerfile(dockerfile: string, baseDigest: string | null): string {
  const base = baseDigest ? firstExternalBase(dockerfile) : null;
  if (!base || !baseDigest) return dockerfile;
  const lines = dockerfile.split('\n');
  const pinned = `${repositoryOf(base.image)}@${baseDigest}`;
  lines[base.line] = lines[base.line]!.replace(base.image, pinned);
  return lines.join('\n');
}

function row(state: JobImagesState, imageId: string): ImageRow {
  const found = state.images.find((i) => i.imageId === imageId);
  if (!found) throw DomainError.notFound('Image');
  return found;
}

const update = (state: JobImagesState, imageId: string, change: (r: ImageRow) => ImageRow): JobImagesState => ({
  ...state,
  images: state.images.map((r) => (r.imageId === imageId ? change(r) : r)),
});

function queued(
  cmd: { imageId: string; jobId: string; workspaceId: string; dockerfile: string; now: number },
  reason: 'playbook' | 'rebuild' | 'run',
): ImageEvent {
  return {
    type: 'ImageQueued',
    data: {
      imageId: cmd.imageId,
      jobId: cmd.jobId,
      workspaceId: cmd.workspaceId,
      dockerfile: cmd.dockerfile,
      dockerfileHash: dockerfileHash(cmd.dockerfile),
      reason,
      queuedAt: cmd.now,
    },
  };
}

export const jobImagesDecider: Decider<ImageCommand, ImageEvent, JobImagesState> = {
  initialState: { jobId: null, workspaceId: null, images: [] },

  evolve(state, event) {
    const d = event.data;
    switch (event.type) {
      case 'ImageQueued': {
        const q = event.data;
        const fresh: ImageRow = {
          imageId: q.imageId,
          dockerfileHash: q.dockerfileHash,
          dockerfile: q.dockerfile,
          status: 'queued',
          ref: null,
          digest: null,
          baseDigest: null,
          sizeBytes: null,
          error: null,
          createdAt: q.queuedAt,
          startedAt: null,
          finishedAt: null,
          attempts: 0,
          builderId: null,
          progressAt: q.queuedAt,
        };
        return { jobId: q.jobId, workspaceId: q.workspaceId, images: [...state.images, fresh] };
      }
      case 'ImageBuildStarted':
        return update(state, d.imageId, (r) => ({
          ...r,
          status: 'building',
          builderId: event.data.builderId,
          attempts: event.data.attempt,
          startedAt: event.data.startedAt,
          progressAt: event.data.startedAt,
        }));
      case 'ImageBuilt': {
        const b = event.data;
        return update(state, d.imageId, (r) => ({
          ...r,
          status: 'ready',
          ref: b.ref,
          digest: b.digest,
          baseDigest: b.baseDigest,
          sizeBytes: b.sizeBytes,
          error: null,
          finishedAt: b.finishedAt,
          progressAt: b.finishedAt,
        }));
      }
      case 'ImageBuildFailed': {
        const f = event.data;
        return update(state, d.imageId, (r) => ({
          ...r,
          status: 'failed',
          error: f.error,
          baseDigest: f.baseDigest,
          finishedAt: f.finishedAt,
          progressAt: f.finishedAt,
        }));
      }
      case 'ImageRequeued':
        return update(state, d.imageId, (r) => ({
          ...r,
          status: 'queued',
          builderId: null,
          startedAt: null,
          progressAt: event.data.at,
        }));
      case 'ImageDeleted':
        return { ...state, images: state.images.filter((r) => r.imageId !== d.imageId) };
      default:
        return state;
    }
  },

  decide(command, state) {
    switch (command.type) {
      case 'EnsureBuild': {
        if (command.dockerfile.trim() === '') return [];
        const { latest } = buildsOf(state, dockerfileHash(command.dockerfile));
        // No build of this Dockerfile yet, or its latest failed: a new row (the failed one keeps its log).
        if (!latest || latest.status === 'failed') return [queued(command, command.reason)];
        const stuck =
          (latest.status === 'queued' || latest.status === 'building') &&
          command.now - latest.progressAt > staleAfterMs;
        if (stuck)
          return [
            {
              type: 'ImageRequeued',
              data: {
                imageId: latest.imageId,
                jobId: command.jobId,
                reason: 'no progress for 25 minutes',
                at: command.now,
              },
            },
          ];
        return [];
      }
      case 'Rebuild':
        if (command.dockerfile.trim() === '')
          throw new DomainError('unsupported', "The job's playbook has no Dockerfile to build");
        return [queued(command, 'rebuild')];
      case 'ClaimBuild': {
        const r = row(state, command.imageId);
        if (r.status !== 'queued') throw new DomainError('conflict', 'The image is not waiting to be built');
        return [
          {
            type: 'ImageBuildStarted',
            data: {
              imageId: r.imageId,
              jobId: state.jobId!,
              builderId: command.builderId,
              attempt: r.attempts + 1,
              startedAt: command.now,
            },
          },
        ];
      }
      case 'CompleteBuild': {
        const r = row(state, command.imageId);
        if (r.status !== 'building' || r.builderId !== command.builderId)
          throw new DomainError('conflict', 'The build was taken over or ended');
        const { ref, digest, baseDigest, sizeBytes } = command;
        return [
          {
            type: 'ImageBuilt',
            data: {
              imageId: r.imageId,
              jobId: state.jobId!,
              ref,
              digest,
              baseDigest,
              sizeBytes,
              finishedAt: command.now,
            },
          },
        ];
      }
      case 'DeleteImage': {
        const row = state.images.find((r) => r.imageId === command.imageId);
        if (!row) return [];
        if (row.status === 'queued' || row.status === 'building')
          throw new DomainError('conflict', 'A build that is queued or running is not removed');
        return [{ type: 'ImageDeleted', data: { imageId: row.imageId, jobId: state.jobId!, at: command.now } }];
      }
      case 'FailBuild': {
        const r = row(state, command.imageId);
        if (r.status !== 'building' || r.builderId !== command.builderId)
          throw new DomainError('conflict', 'The build was taken over or ended');
        if (command.interrupted && r.attempts < maxBuildAttempts) {
          return [
            {
              type: 'ImageRequeued',
              data: { imageId: r.imageId, jobId: state.jobId!, reason: command.error, at: command.now },
            },
          ];
        }
        return [
          {
            type: 'ImageBuildFailed',
            data: {
              imageId: r.imageId,
              jobId: state.jobId!,
              error: command.error,
              baseDigest: command.baseDigest,
              finishedAt: command.now,
            },
          },
        ];
      }
    }
  },
};

/**
 * ImageGC's choice: builds of a Dockerfile the job's last five versions do not use go; of the ones they use, the newest
 * ready build stays, and so does the latest build (a failed latest is what tells runs why). Queued and running builds
 * always stay.
 */
export function imagesToCollect(rows: readonly ImageRow[], recentHashes: ReadonlySet<string>): ImageRow[] {
  const keep = new Set<string>();
  for (const hash of recentHashes) {
    const ofHash = rows.filter((r) => r.dockerfileHash === hash);
    const latest = ofHash[ofHash.length - 1];
    const newestReady = [...ofHash].reverse().find((r) => r.status === 'ready');
    if (latest) keep.add(latest.imageId);
    if (newestReady) keep.add(newestReady.imageId);
  }
  return rows.filter((r) => !keep.has(r.imageId) && r.status !== 'queued' && r.status !== 'building');
}
