import { DomainError } from '../domain/decider.js';
import { imagesToCollect, jobImagesDecider, jobImagesStreamId } from '../domain/image.js';
import { imagesCollection, type ImageDoc } from '../projections/images.js';
import type { CommandBus } from '../app/commands.js';
import type { DocumentStore } from '../store/document-store.js';
import type { ImageBuilds } from '../adapters/sandbox/types.js';

export interface ImageGcPorts {
  bus: CommandBus;
  docs: DocumentStore;
  images: ImageBuilds;
  /** Dockerfile hashes of the job's last five playbook versions. */
  recentHashes(jobId: string): Promise<Set<string>>;
  log: { error(obj: object, msg: string): void; info(obj: object, msg: string): void };
  clock?: () => number;
  random?: () => number;
}

/** 04:43 UTC on the day after `now` (or today, if still ahead), plus up to 10 minutes of jitter. */
export function nextGcAt(now: number, random: () => number = Math.random): number {
  const d = new Date(now);
  let at = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate(), 4, 43);
  if (at <= now) at += 24 * 3_600_000;
  return at + Math.floor(random() * 10 * 60_000);
}

/**
 * ImageGC (docs/design.md, "Images"), daily: removes builds no recent playbook version uses (the engine image first; a row
 * stays when its image cannot be removed), then local job image tags no row refers to.
 */
export class ImageGc {
  private timer: NodeJS.Timeout | null = null;
  private readonly clock: () => number;

  constructor(private readonly ports: ImageGcPorts) {
    this.clock = ports.clock ?? Date.now;
  }

  start(): void {
    const schedule = () => {
      const delay = nextGcAt(this.clock(), this.ports.random) - this.clock();
      this.timer = setTimeout(() => {
        void this.collect()
          .catch((err: unknown) => this.ports.log.error({ err }, 'image GC failed'))
          .finally(schedule);
      }, delay);
      this.timer.unref();
    };
    schedule();
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
  }

  /** One pass over every job with builds. Answers how many builds and stray tags it removed. */
  async collect(): Promise<{ builds: number; tags: number }> {
    const rows = await this.ports.docs.collection<ImageDoc>(imagesCollection).find({});
    const jobs = [...new Set(rows.map((r) => r.jobId))];
    let builds = 0;
    for (const jobId of jobs) {
      const { state } = await this.ports.bus.load(jobImagesStreamId(jobId), jobImagesDecider);
      const doomed = imagesToCollect(state.images, await this.ports.recentHashes(jobId));
      for (const row of doomed) {
        try {
          if (row.ref) await this.ports.images.remove(row.ref);
        } catch (err) {
          this.ports.log.error({ err, imageId: row.imageId }, 'could not remove a job image; its build is kept');
          continue;
        }
        const ctx = {
          workspaceId: state.workspaceId,
          actor: { type: 'system' as const, id: 'image-gc' },
          requestId: null,
        };
        try {
          await this.ports.bus.execute(
            jobImagesStreamId(jobId),
            jobImagesDecider,
            { type: 'DeleteImage', imageId: row.imageId, now: this.clock() },
            ctx,
          );
          builds++;
        } catch (err) {
          if (!(err instanceof DomainError && err.code === 'conflict')) throw err; // rebuilt meanwhile: kept
        }
      }
    }
    const referenced = new Set(
      (await this.ports.docs.collection<ImageDoc>(imagesCollection).find({})).flatMap((r) => (r.ref ? [r.ref] : [])),
    );
    let tags = 0;
    for (const tag of await this.ports.images.tags()) {
      if (referenced.has(tag) || !tag.includes('/job-')) continue;
      await this.ports.images.remove(tag).then(
        () => tags++,
        (err: unknown) => this.ports.log.error({ err, tag }, 'could not remove a stray job image tag'),
      );
    }
    if (builds + tags > 0) this.ports.log.info({ builds, tags }, 'image GC removed old job images');
    return { builds, tags };
  }
}
