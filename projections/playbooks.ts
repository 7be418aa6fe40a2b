import { streams } from '../domain/streams.js';
import { stored } from './doc-value.js';
import type { Doc, DocValue } from '../store/document-store.js';
import type { RecordedEvent } from '../store/event-store.js';
import type { DocOp, Projector } from './projector.js';

export const playbookVersionsCollection = 'playbook_versions';
export const playbookStatsCollection = 'playbook_stats';

/** One document per saved version (`<jobId>:<version>`), immutable like the event it comes from. */
export interface PlaybookVersionDoc extends Doc {
  workspaceId: string;
  jobId: string;
  version: number;
  content: DocValue;
  summary: string;
  author: string;
  authorId: string | null;
  sourceRunId: string | null;
  ops: DocValue;
  opCount: number;
  dockerfileHash: string | null;
  graduated: boolean;
  rolledBackFrom: number | null;
  createdAt: number;
}

/** One document per job: the statistics merged into the content on read. */
export interface PlaybookStatsDoc extends Doc {
  workspaceId: string;
  learnings: DocValue;
  scripts: DocValue;
}

export const versionDocId = (jobId: string, version: number) => `${jobId}:${version}`;

export const playbooksProjector: Projector = {
  name: 'playbooks',
  version: 1,
  collections: [playbookVersionsCollection, playbookStatsCollection],
  indexes: [
    {
      collection: playbookVersionsCollection,
      keys: [
        ['jobId', 1],
        ['version', 1],
      ],
    },
    {
      collection: playbookVersionsCollection,
      keys: [
        ['jobId', 1],
        ['createdAt', 1],
      ],
    },
  ],
  categories: [streams.playbook, streams.playbookStats],
  project(recorded: RecordedEvent): DocOp[] {
    const saved = streams.playbook.decode(recorded);
    if (saved) {
      const { data } = saved.event;
      const doc: Record<string, DocValue> = {
        workspaceId: data.workspaceId,
        jobId: data.jobId,
        version: data.version,
        content: stored(data.content),
        summary: data.summary,
        author: data.author,
        authorId: data.authorId,
        sourceRunId: data.sourceRunId,
        ops: stored(data.ops),
        opCount: data.ops?.length ?? 0,
        dockerfileHash: data.dockerfileHash,
        graduated: data.graduated,
        rolledBackFrom: data.rolledBackFrom,
        createdAt: data.createdAt,
      };
      return [
        {
          kind: 'update',
          collection: playbookVersionsCollection,
          filter: { _id: versionDocId(data.jobId, data.version) },
          update: { $set: doc },
          upsert: true,
        },
      ];
    }
    const stats = streams.playbookStats.decode(recorded);
    if (stats) {
      const { event } = stats;
      const { jobId, workspaceId } = event.data;
      const fields: Record<string, DocValue> = { workspaceId };
      if (event.type === 'PlaybookLearningsUsed') fields.learnings = stored(event.data.learnings);
      else fields.scripts = stored(event.data.scripts);
      return [
        {
          kind: 'update',
          collection: playbookStatsCollection,
          filter: { _id: jobId },
          update: {
            $set: fields,
            $setOnInsert: event.type === 'PlaybookLearningsUsed' ? { scripts: [] } : { learnings: [] },
          },
          upsert: true,
        },
      ];
    }
    return [];
  },
};
