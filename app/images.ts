import { Subject } from 'rxjs';
import { DomainError } from '../domain/decider.js';
import {
  dockerfileHash,
  jobImagesDecider,
  jobImagesStreamId,
  runImageChoice,
  staleAfterMs,
  type ImageRow,
} from '../domain/image.js';
import { jobsCollection, type JobDoc } from '../projections/jobs.js';
import type { BlobStore } from '../store/blob-store.js';
import type { Doc, DocumentStore } from '../store/document-store.js';
import type { Position } from '../store/event-store.js';
import type { CommandBus, CommandContext } from './commands.js';
import { newId } from './ids.js';

/**
 * The Dockerfile of a job's playbook: at `playbookVersion` when given (a run's pinned version), else the current
 * one; null when the playbook has none. The playbook module supplies it.
 */
export type DockerfileSource = (
  workspaceId: string,
  jobId: string,
  playbookVersion: number | null,
) => Promise<string | null>;
export const noDockerfiles: DockerfileSource = async () => null;

/**
 * Build logs in the blob store at `images/<id>/build.log` (with the embedded store, that file under the data
 * directory, beside `runs/`), so any api replica shows a log another process's runner is writing.
 */
export class ImageLogs {
  constructor(private readonly blobs: BlobStore) {}

  key(imageId: string): string {
    if (!/^[0-9a-zA-Z-]{1,100}$/.test(imageId)) throw new Error(`not an image id: ${imageId}`);
    return `images/${imageId}/build.log`;
  }

  /** Replaces the whole log; a reader sees the old text or the new one, never half a write. */
  async save(imageId: string, text: string): Promise<void> {
    await this.blobs.put(this.key(imageId), text);
  }

  async read(imageId: string): Promise<string> {
    return (await this.blobs.get(this.key(imageId)))?.toString('utf8') ?? '';
  }

  /** Removes an image's log (workspace erasure). */
  async remove(imageId: string): Promise<void> {
    await this.blobs.deletePrefix(`${this.key(imageId).slice(0, -'build.log'.length)}`);
  }
}

/** A run cannot have its image: the message becomes the run's error. */
export class RunImageError extends Error {
  override name = 'RunImageError';
}

export const noBuilderMessage =
  "The job's Dockerfile needs a sandbox backend that builds images (docker); this runner's backend cannot build them";

/** What a run starts from: an image reference (null: the backend's default) and the build it came from, if any. */
export interface RunImage {
  image: string | null;
  build: ImageRow | null;
}

export interface RunImageRequest {
  workspaceId: string;
  jobId: string;
  playbookVersion: number | null;
  /** The job's `image` field, else the workspace default: used when the playbook has no Dockerfile. */
  fallback: string | null;
  /** Whether the runner asking can build (and so run) job images. */
  canBuild: boolean;
  /** Aborting stops the wait (cancel or deadline); the rejection is the signal's reason. */
  signal: AbortSignal;
  /** Told once, when the run has to wait for a build. */
  onWait?: (message: string) => void;
}

interface BuilderDoc extends Doc {
  heartbeatAt: number;
}
const buildersCollection = 'image_builders';
/** A builder that has not said so for this long is gone. */
export const builderSilenceMs = 60_000;
const pollMs = 2000;

/**
 * Job images outside the builder (docs/design.md, "Images"): EnsureBuild after playbook saves, rebuilds, reads and the
 * run's image resolution. Every decision is an expected-revision append to the job's images stream.
 */
export class Images {
  /** Nudges the local builder when an image is queued; builders elsewhere find it by polling. */
  readonly buildable = new Subject<string>();

  constructor(
    private readonly bus: CommandBus,
    private readonly docs: DocumentStore,
    readonly logs: ImageLogs,
    readonly dockerfileFor: DockerfileSource = noDockerfiles,
    private readonly clock: () => number = Date.now,
  ) {}

  /**
   * After a playbook save with a Dockerfile: queues a build when this Dockerfile has none or its latest failed, and
   * resubmits one stuck for 25 minutes. Answers the image queued or resubmitted, if any.
   */
  async ensureBuild(
    ctx: CommandContext,
    workspaceId: string,
    jobId: string,
    dockerfile: string,
    reason: 'playbook' | 'run' = 'playbook',
  ): Promise<{ imageId: string | null; position: Position | null }> {
    if (dockerfile.trim() === '') return { imageId: null, position: null };
    const result = await this.bus.execute(
      jobImagesStreamId(jobId),
      jobImagesDecider,
      { type: 'EnsureBuild', imageId: newId(this.clock()), jobId, workspaceId, dockerfile, reason, now: this.clock() },
      ctx,
    );
    const imageId = result.events[0]?.data.imageId ?? null;
    if (imageId) this.buildable.next(imageId);
    return { imageId, position: result.position };
  }

  /** `POST …/images/rebuild`: a fresh build of the current Dockerfile, base digest resolved again. */
  async rebuild(
    ctx: CommandContext,
    workspaceId: string,
    jobId: string,
  ): Promise<{ imageId: string; position: Position | null }> {
    await this.job(workspaceId, jobId);
    const dockerfile = await this.dockerfileFor(workspaceId, jobId, null);
    if (!dockerfile || dockerfile.trim() === '')
      throw new DomainError('unsupported', "The job's playbook has no Dockerfile to build");
    if (!(await this.builderAvailable()))
      throw new DomainError(
        'unsupported',
        'No sandbox backend of this service can build images (the docker backend can)',
      );
    const imageId = newId(this.clock());
    const result = await this.bus.execute(
      jobImagesStreamId(jobId),
      jobImagesDecider,
      { type: 'Rebuild', imageId, jobId, workspaceId, dockerfile, now: this.clock() },
      ctx,
    );
    this.buildable.next(imageId);
    return { imageId, position: result.position };
  }

  /** The job, when it exists in the workspace and is not archived. */
  async job(workspaceId: string, jobId: string): Promise<JobDoc> {
    const job = await this.docs
      .collection<JobDoc>(jobsCollection)
      .findOne({ _id: jobId, workspaceId, archived: false });
    if (!job) throw DomainError.notFound('Job');
    return job;
  }

  /** A builder says it is there; the rebuild route asks whether any is (builders may live in other processes). */
  async builderHeartbeat(builderId: string): Promise<void> {
    await this.docs
      .collection<BuilderDoc>(buildersCollection)
      .updateOne({ _id: builderId }, { $set: { heartbeatAt: this.clock() } }, { upsert: true });
  }

  async builderGone(builderId: string): Promise<void> {
    await this.docs.collection<BuilderDoc>(buildersCollection).deleteMany({ _id: builderId });
  }

  async builderAlive(builderId: string): Promise<boolean> {
    const doc = await this.docs.collection<BuilderDoc>(buildersCollection).findOne({ _id: builderId });
    return doc !== null && this.clock() - doc.heartbeatAt <= builderSilenceMs;
  }

  async builderAvailable(): Promise<boolean> {
    return (
      (await this.docs
        .collection<BuilderDoc>(buildersCollection)
        .count({ heartbeatAt: { $gte: this.clock() - builderSilenceMs } })) > 0
    );
  }

  /**
   * The image a run starts from (docs/design.md, "Images"). No Dockerfile: the fallback. Otherwise only a build
   * of this very Dockerfile will do: the newest ready one; else the latest build's failure is the run's error; else
   * the run waits, looking again every 2 s, until the build ends or the signal stops it.
   */
  async resolveRunImage(req: RunImageRequest): Promise<RunImage> {
    const dockerfile = await this.dockerfileFor(req.workspaceId, req.jobId, req.playbookVersion);
    if (!dockerfile || dockerfile.trim() === '') return { image: req.fallback, build: null };
    return this.imageFor(req, dockerfile);
  }

  /** The ready build of `dockerfile` for the job, queued and waited for when there is none (reflection builds a changed Dockerfile this way before saving it). */
  async imageFor(req: Omit<RunImageRequest, 'playbookVersion' | 'fallback'>, dockerfile: string): Promise<RunImage> {
    if (!req.canBuild) throw new RunImageError(noBuilderMessage);
    const hash = dockerfileHash(dockerfile);
    let told = false;
    for (;;) {
      req.signal.throwIfAborted();
      const { state } = await this.bus.load(jobImagesStreamId(req.jobId), jobImagesDecider);
      const choice = runImageChoice(state, hash);
      if (choice.kind === 'use') return { image: choice.image.ref, build: choice.image };
      if (choice.kind === 'failed')
        throw new RunImageError(`Environment build failed: ${choice.image.error ?? 'unknown error'}`);
      if (choice.kind === 'missing' || this.clock() - choice.image.progressAt > staleAfterMs) {
        // No build although the playbook has this Dockerfile (a crash between the save and its EnsureBuild), or one
        // stuck for 25 minutes: EnsureBuild queues or resubmits it.
        const ctx: CommandContext = {
          workspaceId: req.workspaceId,
          actor: { type: 'system', id: null },
          requestId: null,
        };
        await this.ensureBuild(ctx, req.workspaceId, req.jobId, dockerfile, 'run');
      }
      if (!told) {
        told = true;
        const status = choice.kind === 'wait' ? choice.image.status : 'queued';
        req.onWait?.(`Waiting for the job image to build (${status})`);
      }
      await sleep(pollMs, req.signal);
    }
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason as Error);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
