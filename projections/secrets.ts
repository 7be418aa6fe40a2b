import type { JobSecretsEvent, SecretEvent } from '../domain/secret.js';
import type { Doc, DocValue } from '../store/document-store.js';
import type { RecordedEvent } from '../store/event-store.js';
import type { DocOp, Projector } from './projector.js';

export interface SecretDoc extends Doc {
  workspaceId: string;
  name: string;
  /** Sealed value; only the host's run start opens it. */
  sealed: string;
  createdAt: number;
  updatedAt: number;
}

export interface JobSecretsDoc extends Doc {
  mappings: Array<{ secretId: string; envName: string }>;
}

export const secretsCollection = 'secrets';
export const jobSecretsCollection = 'job_secrets';

export const secretsProjector: Projector = {
  name: 'secrets',
  version: 1,
  collections: [secretsCollection, jobSecretsCollection],
  indexes: [
    {
      collection: secretsCollection,
      keys: [
        ['workspaceId', 1],
        ['name', 1],
      ],
    },
  ],
  project(recorded: RecordedEvent): DocOp[] {
    if (recorded.type === 'JobSecretsSet') {
      const d = (recorded as unknown as JobSecretsEvent).data;
      return [
        {
          kind: 'update',
          collection: jobSecretsCollection,
          filter: { _id: d.jobId },
          update: { $set: { mappings: d.mappings as unknown as DocValue } },
          upsert: true,
        },
      ];
    }
    if (!recorded.streamId.startsWith('secret-')) return [];
    const _id = recorded.streamId.slice('secret-'.length);
    const e = recorded as unknown as SecretEvent;
    switch (e.type) {
      case 'SecretCreated':
        return [
          {
            kind: 'update',
            collection: secretsCollection,
            filter: { _id },
            update: {
              $set: {
                workspaceId: e.data.workspaceId,
                name: e.data.name,
                sealed: e.data.sealed,
                createdAt: e.data.createdAt,
                updatedAt: e.data.createdAt,
              },
            },
            upsert: true,
          },
        ];
      case 'SecretValueChanged':
        return [
          {
            kind: 'update',
            collection: secretsCollection,
            filter: { _id },
            update: { $set: { sealed: e.data.sealed, updatedAt: e.data.updatedAt } },
          },
        ];
      case 'SecretDeleted':
        return [{ kind: 'delete', collection: secretsCollection, filter: { _id } }];
    }
  },
};
