import type { Role } from '../domain/membership.js';
import { streams } from '../domain/streams.js';
import type { Doc } from '../store/document-store.js';
import type { RecordedEvent } from '../store/event-store.js';
import type { DocOp, Projector } from './projector.js';

export const usersCollection = 'users';
export const workspacesCollection = 'workspaces';
export const membersCollection = 'members';
export const apiTokensCollection = 'api_tokens';
export const sessionsCollection = 'sessions';
export const invitesCollection = 'invites';

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
  /** The workspace the user's latest session started in or switched to: where the next sign-in lands. */
  lastWorkspaceId?: string;
}

export interface WorkspaceDoc extends Doc {
  name: string;
  createdAt: number;
  ownerId: string | null;
  /**
   * Set when the workspace is deleted: nothing of it is readable any more and its streams are being erased; the
   * document goes when the erasure is recorded (docs/design.md, "Workspace erasure").
   */
  deleted?: boolean;
}

export interface MemberDoc extends Doc {
  workspaceId: string;
  userId: string;
  role: Role;
  joinedAt: number;
}

/** A browser session, keyed by the hash of its sid: the cookie is honoured only while this row stands. */
export interface SessionDoc extends Doc {
  userId: string;
  /** The workspace the session acts in now (the cookie's `wid`), so a removal ends the sessions it strands. */
  workspaceId: string;
  provider: string;
  startedAt: number;
  expiresAt: number;
}

/** A pending invite; accepted and revoked ones leave the read model. */
export interface InviteDoc extends Doc {
  workspaceId: string;
  email: string | null;
  role: 'admin' | 'member';
  tokenHash: string;
  createdBy: string;
  createdAt: number;
  expiresAt: number;
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
  version: 2,
  collections: [usersCollection],
  indexes: [{ collection: usersCollection, keys: [['email', 1]] }],
  categories: [streams.user, streams.session],
  project(recorded: RecordedEvent): DocOp[] {
    const session = streams.session.decode(recorded);
    if (session?.event.type === 'SessionStarted' || session?.event.type === 'SessionSwitched') {
      const { userId, workspaceId } = session.event.data;
      return [update(usersCollection, userId, { lastWorkspaceId: workspaceId })];
    }
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
            // A user is registered by their first sign-in.
            lastLoginAt: d.createdAt,
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
      case 'UserAdminChanged':
        return [update(usersCollection, id, { isAdmin: e.data.isAdmin })];
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
  categories: [streams.workspace, streams.workspaceErasure],
  project(recorded: RecordedEvent): DocOp[] {
    // Erased: the workspace's own stream is gone too, and its name with it (docs/design.md, "Workspace erasure").
    const erased = streams.workspaceErasure.decode(recorded);
    if (erased) return [{ kind: 'delete', collection: workspacesCollection, filter: { _id: erased.key } }];
    const decoded = streams.workspace.decode(recorded);
    if (!decoded) return [];
    const { key: id, event: e } = decoded;
    switch (e.type) {
      case 'WorkspaceCreated':
        return [upsert(workspacesCollection, id, { name: e.data.name, createdAt: e.data.createdAt, ownerId: null })];
      case 'WorkspaceOwnerClaimed':
        return [update(workspacesCollection, id, { ownerId: e.data.userId })];
      case 'WorkspaceRenamed':
        return [update(workspacesCollection, id, { name: e.data.name })];
      case 'WorkspaceOwnershipTransferred':
        return [update(workspacesCollection, id, { ownerId: e.data.toUserId })];
      case 'WorkspaceDeleted':
        return [update(workspacesCollection, id, { deleted: true })];
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
  categories: [streams.workspace, streams.membership],
  project(recorded: RecordedEvent): DocOp[] {
    const workspace = streams.workspace.decode(recorded);
    if (workspace?.event.type === 'WorkspaceDeleted')
      return [{ kind: 'delete', collection: membersCollection, filter: { workspaceId: workspace.key } }];
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
  categories: [streams.apiToken],
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

/**
 * Sessions that still stand (docs/design.md, "Identity"). Logging out ends one; a deactivation ends every session of
 * the user, a removal those acting in the workspace left behind; each new session purges the expired rows.
 */
export const sessionsProjector: Projector = {
  name: 'sessions',
  version: 1,
  collections: [sessionsCollection],
  indexes: [
    { collection: sessionsCollection, keys: [['userId', 1]] },
    { collection: sessionsCollection, keys: [['expiresAt', 1]] },
  ],
  categories: [streams.session, streams.workspace, streams.user, streams.membership],
  project(recorded: RecordedEvent): DocOp[] {
    const session = streams.session.decode(recorded);
    if (session) {
      const { key: id, event: e } = session;
      switch (e.type) {
        case 'SessionStarted':
          return [
            { kind: 'delete', collection: sessionsCollection, filter: { expiresAt: { $lte: e.data.startedAt } } },
            upsert(sessionsCollection, id, {
              userId: e.data.userId,
              workspaceId: e.data.workspaceId,
              provider: e.data.provider,
              startedAt: e.data.startedAt,
              expiresAt: e.data.expiresAt,
            }),
          ];
        case 'SessionSwitched':
          return [update(sessionsCollection, id, { workspaceId: e.data.workspaceId })];
        case 'SessionEnded':
          return [{ kind: 'delete', collection: sessionsCollection, filter: { _id: id } }];
        default:
          return [];
      }
    }
    const workspace = streams.workspace.decode(recorded);
    if (workspace?.event.type === 'WorkspaceDeleted')
      return [{ kind: 'delete', collection: sessionsCollection, filter: { workspaceId: workspace.key } }];
    const user = streams.user.decode(recorded);
    if (user?.event.type === 'UserDeactivated')
      return [{ kind: 'delete', collection: sessionsCollection, filter: { userId: user.key } }];
    const member = streams.membership.decode(recorded);
    if (member?.event.type === 'MemberRemoved') {
      const [workspaceId, userId] = member.key;
      return [{ kind: 'delete', collection: sessionsCollection, filter: { userId, workspaceId } }];
    }
    return [];
  },
};

/** Pending invites; a deleted workspace takes its invites with it. */
export const invitesProjector: Projector = {
  name: 'invites',
  version: 1,
  collections: [invitesCollection],
  indexes: [
    { collection: invitesCollection, keys: [['tokenHash', 1]], unique: true },
    {
      collection: invitesCollection,
      keys: [
        ['workspaceId', 1],
        ['createdAt', 1],
      ],
    },
    { collection: invitesCollection, keys: [['email', 1]] },
  ],
  categories: [streams.workspace, streams.invite],
  project(recorded: RecordedEvent): DocOp[] {
    const workspace = streams.workspace.decode(recorded);
    if (workspace?.event.type === 'WorkspaceDeleted')
      return [{ kind: 'delete', collection: invitesCollection, filter: { workspaceId: workspace.key } }];
    const decoded = streams.invite.decode(recorded);
    if (!decoded) return [];
    const {
      key: [, id],
      event: e,
    } = decoded;
    switch (e.type) {
      case 'InviteCreated': {
        const d = e.data;
        return [
          upsert(invitesCollection, id, {
            workspaceId: d.workspaceId,
            email: d.email,
            role: d.role,
            tokenHash: d.tokenHash,
            createdBy: d.createdBy,
            createdAt: d.createdAt,
            expiresAt: d.expiresAt,
          }),
        ];
      }
      case 'InviteAccepted':
      case 'InviteRevoked':
        return [{ kind: 'delete', collection: invitesCollection, filter: { _id: id } }];
      default:
        return [];
    }
  },
};
