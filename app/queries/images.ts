import { DomainError } from '../../domain/decider.js';
import { imagesCollection, type ImageDoc } from '../../projections/images.js';
import type { DocumentStore, Filter } from '../../store/document-store.js';
import type { JobQueries } from './jobs.js';
import type { Page, PageRequest } from './list.js';

/** A job's image builds: the job is looked up first, so an archived or foreign job has no images to show. */
export class ImageQueries {
  constructor(
    private readonly docs: DocumentStore,
    private readonly jobs: JobQueries,
    private readonly workspaceId: string,
  ) {}

  private get images() {
    return this.docs.collection<ImageDoc>(imagesCollection);
  }

  async list(jobId: string, page: PageRequest, status?: readonly string[] | null): Promise<Page<ImageDoc>> {
    await this.jobs.get(jobId);
    const filter: Filter = { workspaceId: this.workspaceId, jobId };
    if (status) filter.status = { $in: [...status] };
    const [items, total] = await Promise.all([
      this.images.find(filter, page.find),
      this.images.count(filter, { search: page.search }),
    ]);
    return { items, total };
  }

  async get(jobId: string, imageId: string): Promise<ImageDoc> {
    await this.jobs.get(jobId);
    const image = await this.images.findOne({ _id: imageId, workspaceId: this.workspaceId, jobId });
    if (!image) throw DomainError.notFound('Image');
    return image;
  }
}
