import type { Subscription } from 'rxjs';
import { DomainError } from '../domain/decider.js';
import {
  firstExternalBase,
  imageTag,
  jobImagesDecider,
  jobImagesStreamId,
  pinnedDockerfile,
  type ImageRow,
} from '../domain/image.js';
import { imagesCollection, type ImageDoc } from '../projections/images.js';
import type { CommandBus, CommandContext } from '../app/commands.js';
import type { ImageLogs, Images } from '../app/images.js';
import type { DocumentStore } from '../store/document-store.js';
import type { ImageBuilds } from '../adapters/sandbox/types.js';
import { errorMessage } from '../domain/error-message.js';
import { ignoreFailure, type DebugLog } from '../domain/ignore-failure.js';

export const buildTimeoutMs = 15 * 60_000;
const maxImageBytes = 5 * 1024 ** 3;
const logSaveMs = 2000;
const logCapBytes = 4 * 1024 * 1024;
const logKeepBytes = 2 * 1024 * 1024;
const pollMs = 2000;
const heartbeatMs = 15_000;
const reconcileMs = 60_000;
const maxErrorChars = 4000;

export interface BuilderLogger extends DebugLog {
  error(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

/** Why a build was stopped from outside; a shutdown is retried, a timeout is the build's failure. */
class Shutdown extends Error {
  constructor() {
    super('the build was interrupted by a shutdown');
  }
}
class BuildTimeout extends Error {
  constructor() {
    super('the build took longer than 15 minutes');
  }
}

/**
 * A build log in memory, saved every 2 s while the build runs so the detail route shows its progress. Beyond 4 MiB
 * only the last 2 MiB are kept: the end of a log is where a build's failure is.
 */
export class BuildLog {
  private bytes: number;
  private dirty = false;
  private timer: NodeJS.Timeout | null = null;
  private saving: Promise<void> = Promise.resolve();

  constructor(
    private readonly logs: ImageLogs,
    private readonly imageId: string,
    private text = '',
    private readonly log?: DebugLog,
  ) {
    this.bytes = Buffer.byteLength(text);
  }

  get content(): string {
    return this.text;
  }

  append(chunk: string): void {
    this.text += chunk;
    this.bytes += Buffer.byteLength(chunk);
    this.dirty = true;
    if (this.bytes <= logCapBytes) return;
    const kept = Buffer.from(this.text).subarray(-logKeepBytes).toString('utf8');
    this.text = `[earlier output dropped: the log keeps its last 2 MiB]\n${kept.slice(kept.indexOf('\n') + 1)}`;
    this.bytes = Buffer.byteLength(this.text);
  }

  line(text: string): void {
    this.append(`${text}\n`);
  }

  start(): void {
    this.timer = setInterval(() => this.save(), logSaveMs);
  }

  /** Saves what is new; saves never overlap, so an older text never lands after a newer one. Never rejects. */
  flush(): Promise<void> {
    this.save();
    return this.saving;
  }

  private save(): void {
    if (!this.dirty) return;
    this.dirty = false;
    const text = this.text;
    this.saving = this.saving
      .then(() => this.logs.save(this.imageId, text))
      .catch(
        ignoreFailure(
          "the log only shows progress: a later save writes it all again, and the build's result is kept apart",
          this.log,
        ),
      );
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.flush();
  }
}

/**
 * The build pool of one runner (docs/design.md, "Images"): one build at a time, claimed by an expected-revision append so two
 * runners never build the same image; 15 minutes at most; an interrupted build is retried once, any other error
 * fails the image with its message. Base images are pinned to a digest when the engine can tell one.
 */
export class ImageBuilder {
  private timers: NodeJS.Timeout[] = [];
  private nudges: Subscription | null = null;
  private polling: Promise<void> | null = null;
  private current: { abort: AbortController; done: Promise<void> } | null = null;
  private readonly local = new Map<string, Promise<void>>();
  private stopped = false;

  constructor(
    private readonly bus: CommandBus,
    private readonly docs: DocumentStore,
    private readonly images: Images,
    private readonly builds: ImageBuilds,
    readonly builderId: string,
    private readonly log: BuilderLogger,
    private readonly clock: () => number = Date.now,
  ) {}

  async start(): Promise<void> {
    await this.images.builderHeartbeat(this.builderId);
    this.nudges = this.images.buildable.subscribe(() => this.poll());
    const guard = (what: string, fn: () => Promise<unknown>) => () =>
      void fn().catch((err: unknown) => this.log.error({ err }, what));
    this.timers.push(setInterval(() => this.poll(), pollMs));
    this.timers.push(
      setInterval(
        guard('image builder heartbeat failed', () => this.images.builderHeartbeat(this.builderId)),
        heartbeatMs,
      ),
    );
    this.timers.push(
      setInterval(
        guard('image build reconcile failed', () => this.reconcile()),
        reconcileMs,
      ),
    );
    guard('image build reconcile failed', () => this.reconcile())();
    this.poll();
  }

  /** Stops claiming; a build in progress is interrupted and goes back to the queue for another runner. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.nudges?.unsubscribe();
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    this.current?.abort.abort(new Shutdown());
    await this.current?.done;
    await this.polling;
    await this.images
      .builderGone(this.builderId)
      .catch(ignoreFailure('a builder whose heartbeat stops counts as gone after builderSilenceMs anyway', this.log));
  }

  /** A nudge: its promise never rejects and is kept in `polling` for stop() to wait on. */
  poll(): void {
    this.polling ??= this.claimAndBuild()
      .catch((err: unknown) => this.log.error({ err }, 'image build dispatch failed'))
      .finally(() => {
        this.polling = null;
      });
  }

  private async claimAndBuild(): Promise<void> {
    while (!this.stopped) {
      const queued = await this.docs
        .collection<ImageDoc>(imagesCollection)
        .find({ status: 'queued' }, { sort: [['createdAt', 1]], limit: 5 });
      let claimed: { row: ImageRow; doc: ImageDoc } | null = null;
      for (const doc of queued) {
        if (this.stopped) return;
        const row = await this.claim(doc);
        if (row) {
          claimed = { row, doc };
          break;
        }
      }
      if (!claimed) return;
      const abort = new AbortController();
      const done = this.build(claimed.row, claimed.doc, abort);
      this.current = { abort, done };
      await done;
      this.current = null;
    }
  }

  private ctx(workspaceId: string, imageId: string): CommandContext {
    return { workspaceId, actor: { type: 'system', id: this.builderId }, requestId: null, correlationId: imageId };
  }

  private async claim(doc: ImageDoc): Promise<ImageRow | null> {
    try {
      const result = await this.bus.execute(
        jobImagesStreamId(doc.jobId),
        jobImagesDecider,
        { type: 'ClaimBuild', imageId: doc._id, builderId: this.builderId, now: this.clock() },
        this.ctx(doc.workspaceId, doc._id),
      );
      return result.state.images.find((i) => i.imageId === doc._id) ?? null;
    } catch (err) {
      // Another runner took it, or the read model was behind the stream.
      if (err instanceof DomainError && (err.code === 'conflict' || err.code === 'not_found')) return null;
      throw err;
    }
  }

  private async build(row: ImageRow, doc: ImageDoc, abort: AbortController): Promise<void> {
    const timer = setTimeout(() => abort.abort(new BuildTimeout()), buildTimeoutMs);
    // A second attempt continues the first one's log.
    const log = new BuildLog(
      this.images.logs,
      row.imageId,
      row.attempts > 1 ? await this.images.logs.read(row.imageId) : '',
      this.log,
    );
    if (row.attempts > 1) log.line(`Attempt ${row.attempts} of the build`);
    log.start();
    let baseDigest: string | null = null;
    const ref = imageTag(doc.jobId, row.dockerfileHash, row.imageId);
    try {
      const pinned = await this.pinBase(row.dockerfile, log, abort.signal);
      baseDigest = pinned.baseDigest;
      const dockerfile = pinned.dockerfile;
      const built = await this.builds.build({
        dockerfile,
        tag: ref,
        labels: { 'svc.job': doc.jobId, 'svc.image': row.imageId },
        signal: abort.signal,
        onLog: (t) => log.append(t),
      });
      if (built.sizeBytes > maxImageBytes) {
        await this.builds.remove(ref).catch(ignoreFailure('image GC removes a job tag no image refers to', this.log));
        throw new Error(`the image is ${(built.sizeBytes / 1024 ** 3).toFixed(1)} GiB, more than the 5 GiB limit`);
      }
      log.line(`Built ${ref} (${Math.round(built.sizeBytes / 1e6)} MB)`);
      await log.close();
      await this.settle(doc, {
        type: 'CompleteBuild',
        imageId: row.imageId,
        builderId: this.builderId,
        ref,
        digest: built.id,
        baseDigest,
        sizeBytes: built.sizeBytes,
        now: this.clock(),
      });
    } catch (err) {
      const reason = abort.signal.aborted ? (abort.signal.reason as Error) : (err as Error);
      const interrupted = reason instanceof Shutdown;
      const message = (reason.message || String(reason)).trim().slice(0, maxErrorChars);
      log.line(interrupted ? `Build interrupted: ${message}` : `Build failed: ${message}`);
      await log.close();
      await this.settle(doc, {
        type: 'FailBuild',
        imageId: row.imageId,
        builderId: this.builderId,
        error: message,
        baseDigest,
        interrupted,
        now: this.clock(),
      });
    } finally {
      clearTimeout(timer);
    }
  }

  /** The Dockerfile with its first external base pinned to a digest, when the digest can be found. */
  private async pinBase(
    dockerfile: string,
    log: BuildLog,
    signal: AbortSignal,
  ): Promise<{ dockerfile: string; baseDigest: string | null }> {
    const base = firstExternalBase(dockerfile);
    if (!base) return { dockerfile, baseDigest: null };
    log.line(`Resolving ${base.image}`);
    try {
      const baseDigest = await this.builds.resolveDigest(base.image, signal);
      const pinned = pinnedDockerfile(dockerfile, baseDigest);
      log.line(`Pinned ${base.image} to ${baseDigest}`);
      return { dockerfile: pinned, baseDigest };
    } catch (err) {
      if (signal.aborted) throw signal.reason;
      log.line(`Could not pin ${base.image} to a digest (${errorMessage(err)}); building from the tag`);
      return { dockerfile, baseDigest: null };
    }
  }

  /** The build's last word; a conflict means the image was resubmitted meanwhile and another attempt owns it. */
  private async settle(doc: ImageDoc, command: Parameters<typeof jobImagesDecider.decide>[0]): Promise<void> {
    try {
      await this.bus.execute(
        jobImagesStreamId(doc.jobId),
        jobImagesDecider,
        command,
        this.ctx(doc.workspaceId, doc._id),
      );
    } catch (err) {
      if (err instanceof DomainError && err.code === 'conflict')
        return this.log.info({ imageId: doc._id }, 'the image build was taken over; its result is dropped');
      this.log.error({ err, imageId: doc._id }, 'could not record the end of an image build');
    }
  }

  /** Builds whose runner stopped heartbeating go back to the queue (once) or fail: never `building` forever. */
  async reconcile(): Promise<number> {
    const building = await this.docs.collection<ImageDoc>(imagesCollection).find({ status: 'building' });
    let ended = 0;
    for (const doc of building) {
      if (!doc.builderId || doc.builderId === this.builderId) continue;
      if (await this.images.builderAlive(doc.builderId)) continue;
      await this.settle(doc, {
        type: 'FailBuild',
        imageId: doc._id,
        builderId: doc.builderId,
        error: 'the runner building the image stopped',
        baseDigest: doc.baseDigest,
        interrupted: true,
        now: this.clock(),
      });
      ended++;
    }
    if (ended > 0) this.poll();
    return ended;
  }

  /**
   * A ready image this engine lacks (another replica built it, or it was removed) is built here again from its
   * pinned Dockerfile under the same tag; runs that need it at once share one build.
   */
  async ensureLocal(row: ImageRow, jobId: string): Promise<void> {
    const ref = row.ref;
    if (!ref || (await this.builds.exists(ref))) return;
    let pending = this.local.get(ref);
    if (!pending) {
      const dockerfile = pinnedDockerfile(row.dockerfile, row.baseDigest);
      pending = this.builds
        .build({
          dockerfile,
          tag: ref,
          labels: { 'svc.job': jobId, 'svc.image': row.imageId },
          signal: AbortSignal.timeout(buildTimeoutMs),
          onLog: () => undefined,
        })
        .then(() => undefined)
        .finally(() => this.local.delete(ref));
      this.local.set(ref, pending);
    }
    await pending;
  }
}
