import { streams } from '../domain/streams.js';
import type { ImageDto } from '../schemas/image.js';
import type { Doc, DocValue } from '../store/document-store.js';
import type { RecordedEvent } from '../store/event-store.js';
import type { DocOp, Projector } from './projector.js';

export const imagesCollection = 'images';

/** One document per build: the ImageDto plus what the list filters by and what the detail route adds. */
export interface ImageDoc extends Doc, Omit<ImageDto, 'id'> {
  jobId: string;
  workspaceId: string;
  dockerfile: string;
  builderId: string | null;
}

const sortKeys = ['createdAt', 'status', 'sizeBytes'];

export const imagesProjector: Projector = {
  name: 'images',
  version: 1,
  collections: [imagesCollection],
  indexes: [
    ...sortKeys.map((k) => ({
      collection: imagesCollection,
      keys: [
        ['workspaceId', 1],
        ['jobId', 1],
        [k, 1],
      ] as Array<[string, 1 | -1]>,
    })),
    // The builders' queue.
    {
      collection: imagesCollection,
      keys: [
        ['status', 1],
        ['createdAt', 1],
      ],
    },
  ],
  categories: [streams.jobImages],
  project(recorded: RecordedEvent): DocOp[] {
    const decoded = streams.jobImages.decode(recorded);
    if (!decoded) return [];
    const { event } = decoded;
    const _id = event.data.imageId;
    const set = (fields: Record<string, DocValue>): DocOp[] => [
      { kind: 'update', collection: imagesCollection, filter: { _id }, update: { $set: fields } },
    ];
    switch (event.type) {
      case 'ImageQueued': {
        const q = event.data;
        const doc: Record<string, DocValue> = {
          jobId: q.jobId,
          workspaceId: q.workspaceId,
          dockerfile: q.dockerfile,
          dockerfileHash: q.dockerfileHash,
          status: 'queued',
          ref: null,
          digest: null,
          baseDigest: null,
          sizeBytes: null,
          error: null,
          createdAt: q.queuedAt,
          startedAt: null,
          finishedAt: null,
          builderId: null,
        };
        return [{ kind: 'update', collection: imagesCollection, filter: { _id }, update: { $set: doc }, upsert: true }];
      }
      case 'ImageBuildStarted':
        return set({ status: 'building', startedAt: event.data.startedAt, builderId: event.data.builderId });
      case 'ImageBuilt': {
        const b = event.data;
        return set({
          status: 'ready',
          ref: b.ref,
          digest: b.digest,
          baseDigest: b.baseDigest,
          sizeBytes: b.sizeBytes,
          error: null,
          finishedAt: b.finishedAt,
        });
      }
      case 'ImageBuildFailed':
        return set({
          status: 'failed',
          error: event.data.error,
          baseDigest: event.data.baseDigest,
          finishedAt: event.data.finishedAt,
        });
      case 'ImageRequeued':
        return set({ status: 'queued', startedAt: null, builderId: null });
      case 'ImageDeleted':
        return [{ kind: 'delete', collection: imagesCollection, filter: { _id: event.data.imageId } }];
      default:
        return [];
    }
  },
};
