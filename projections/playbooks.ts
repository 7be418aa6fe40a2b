import type { PlaybookEvent } from '../domain/playbook.js';
import type { PlaybookStatsEvent } from '../domain/playbook-stats.js';
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
  project(recorded: RecordedEvent): DocOp[] {
    if (recorded.streamId.startsWith('playbook-')) {
      const { data } = recorded as unknown as PlaybookEvent;
      if (recorded.type !== 'PlaybookVersionSaved') return [];
      const doc: Record<string, DocValue> = {
        workspaceId: data.workspaceId,
        jobId: data.jobId,
        version: data.version,
        content: data.content as unknown as DocValue,
        summary: data.summary,
        author: data.author,
        authorId: data.authorId,
        sourceRunId: data.sourceRunId,
        ops: data.ops as unknown as DocValue,
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
    if (recorded.streamId.startsWith('playbookstats-')) {
      const event = recorded as unknown as PlaybookStatsEvent;
      const { jobId, workspaceId } = event.data;
      const fields: Record<string, DocValue> = { workspaceId };
      if (event.type === 'PlaybookLearningsUsed') fields.learnings = event.data.learnings as unknown as DocValue;
      else fields.scripts = event.data.scripts as unknown as DocValue;
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
