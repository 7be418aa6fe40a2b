import { streams } from '../domain/streams.js';
import { stored } from './doc-value.js';
import type { Doc } from '../store/document-store.js';
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
  categories: [streams.jobSecrets, streams.secret],
  project(recorded: RecordedEvent): DocOp[] {
    const mapped = streams.jobSecrets.decode(recorded);
    if (mapped) {
      const d = mapped.event.data;
      return [
        {
          kind: 'update',
          collection: jobSecretsCollection,
          filter: { _id: d.jobId },
          update: { $set: { mappings: stored(d.mappings) } },
          upsert: true,
        },
      ];
    }
    const decoded = streams.secret.decode(recorded);
    if (!decoded) return [];
    const { key: _id, event: e } = decoded;
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
