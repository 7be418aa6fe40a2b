import type { Role } from '../domain/membership.js';
import { streams } from '../domain/streams.js';
import type { Doc } from '../store/document-store.js';
import type { RecordedEvent } from '../store/event-store.js';
import type { DocOp, Projector } from './projector.js';

export const usersCollection = 'users';
export const workspacesCollection = 'workspaces';
export const membersCollection = 'members';
export const apiTokensCollection = 'api_tokens';

export interface UserDoc extends Doc {
  issuer: string;
  subject: string;
  provider: string;
  email: string | null;
  name: string | null;
  picture: string | null;
  isAdmin: boolean;
  deactivated: boolean;
  createdAt: number;
  lastLoginAt: number | null;
}

export interface WorkspaceDoc extends Doc {
  name: string;
  createdAt: number;
  ownerId: string | null;
}

export interface MemberDoc extends Doc {
  workspaceId: string;
  userId: string;
  role: Role;
  joinedAt: number;
}

export interface ApiTokenDoc extends Doc {
  workspaceId: string;
  userId: string;
  name: string;
  tokenHash: string;
  expiresAt: number | null;
  createdAt: number;
  lastUsedAt: number | null;
}

export const memberId = (workspaceId: string, userId: string) => `${workspaceId}:${userId}`;

const upsert = (collection: string, _id: string, fields: Record<string, unknown>): DocOp => ({
  kind: 'update',
  collection,
  filter: { _id },
  update: { $set: fields as Record<string, never> },
  upsert: true,
});
const update = (collection: string, _id: string, fields: Record<string, unknown>): DocOp => ({
  kind: 'update',
  collection,
  filter: { _id },
  update: { $set: fields as Record<string, never> },
});

export const usersProjector: Projector = {
  name: 'users',
  version: 1,
  collections: [usersCollection],
  indexes: [{ collection: usersCollection, keys: [['email', 1]] }],
  project(recorded: RecordedEvent): DocOp[] {
    const decoded = streams.user.decode(recorded);
    if (!decoded) return [];
    const { key: id, event: e } = decoded;
    switch (e.type) {
      case 'UserRegistered': {
        const d = e.data;
        return [
          upsert(usersCollection, id, {
            issuer: d.issuer,
            subject: d.subject,
            provider: d.provider,
            email: d.email,
            name: d.name,
            picture: d.picture,
            isAdmin: d.isAdmin,
            deactivated: false,
            createdAt: d.createdAt,
            lastLoginAt: null,
          }),
        ];
      }
      case 'UserSignedIn':
        return [
          update(usersCollection, id, {
            email: e.data.email,
            name: e.data.name,
            picture: e.data.picture,
            isAdmin: e.data.isAdmin,
            lastLoginAt: e.data.at,
          }),
        ];
      case 'UserDeactivated':
        return [update(usersCollection, id, { deactivated: true })];
      case 'UserReactivated':
        return [update(usersCollection, id, { deactivated: false })];
      default:
        return [];
    }
  },
};

export const workspacesProjector: Projector = {
  name: 'workspaces',
  version: 1,
  collections: [workspacesCollection],
  indexes: [],
  project(recorded: RecordedEvent): DocOp[] {
    const decoded = streams.workspace.decode(recorded);
    if (!decoded) return [];
    const { key: id, event: e } = decoded;
    switch (e.type) {
      case 'WorkspaceCreated':
        return [upsert(workspacesCollection, id, { name: e.data.name, createdAt: e.data.createdAt, ownerId: null })];
      case 'WorkspaceOwnerClaimed':
        return [update(workspacesCollection, id, { ownerId: e.data.userId })];
      default:
        return [];
    }
  },
};

export const membersProjector: Projector = {
  name: 'members',
  version: 1,
  collections: [membersCollection],
  indexes: [
    {
      collection: membersCollection,
      keys: [
        ['workspaceId', 1],
        ['joinedAt', 1],
      ],
    },
    { collection: membersCollection, keys: [['userId', 1]] },
  ],
  project(recorded: RecordedEvent): DocOp[] {
    const decoded = streams.membership.decode(recorded);
    if (!decoded) return [];
    const {
      key: [workspaceId, userId],
      event: e,
    } = decoded;
    switch (e.type) {
      case 'MemberJoined': {
        const d = e.data;
        return [
          upsert(membersCollection, memberId(d.workspaceId, d.userId), {
            workspaceId: d.workspaceId,
            userId: d.userId,
            role: d.role,
            joinedAt: d.joinedAt,
          }),
        ];
      }
      case 'MemberRoleChanged':
      case 'MemberRemoved': {
        const id = memberId(workspaceId, userId);
        return e.type === 'MemberRemoved'
          ? [{ kind: 'delete', collection: membersCollection, filter: { _id: id } }]
          : [update(membersCollection, id, { role: e.data.role })];
      }
      default:
        return [];
    }
  },
};

export const apiTokensProjector: Projector = {
  name: 'api_tokens',
  version: 1,
  collections: [apiTokensCollection],
  indexes: [
    { collection: apiTokensCollection, keys: [['tokenHash', 1]], unique: true },
    {
      collection: apiTokensCollection,
      keys: [
        ['workspaceId', 1],
        ['createdAt', 1],
      ],
    },
  ],
  project(recorded: RecordedEvent): DocOp[] {
    const decoded = streams.apiToken.decode(recorded);
    if (!decoded) return [];
    const { key: id, event: e } = decoded;
    switch (e.type) {
      case 'ApiTokenCreated': {
        const d = e.data;
        return [
          upsert(apiTokensCollection, id, {
            workspaceId: d.workspaceId,
            userId: d.userId,
            name: d.name,
            tokenHash: d.tokenHash,
            expiresAt: d.expiresAt,
            createdAt: d.createdAt,
            lastUsedAt: null,
          }),
        ];
      }
      case 'ApiTokenUsed':
        return [update(apiTokensCollection, id, { lastUsedAt: e.data.at })];
      case 'ApiTokenDeleted':
        return [{ kind: 'delete', collection: apiTokensCollection, filter: { _id: id } }];
      default:
        return [];
    }
  },
};
