import { DomainError, type Decider, type DomainEvent } from './decider.js';
import { streamCategory } from './stream.js';

/** Fixed id of the workspace every instance starts with: `Default`, created at start, without an owner. */
export const defaultWorkspaceId = '00000000-0000-7000-8000-000000000001';
export const workspaceStream = streamCategory<WorkspaceEvent>('workspace');
export const workspaceStreamId = workspaceStream.id;

export type WorkspaceEvent =
  | DomainEvent<'WorkspaceCreated', { workspaceId: string; name: string; createdAt: number }>
  | DomainEvent<'WorkspaceOwnerClaimed', { userId: string; at: number }>
  | DomainEvent<'WorkspaceRenamed', { name: string; at: number }>
  | DomainEvent<'WorkspaceOwnershipTransferred', { fromUserId: string | null; toUserId: string; at: number }>
  /**
   * Nothing of the workspace is readable from here on; its read-model records go at once, and its streams are
   * erased in the background (docs/design.md, "Workspace erasure").
   */
  | DomainEvent<'WorkspaceDeleted', { at: number }>;

export type WorkspaceState =
  | { exists: false }
  | { exists: true; workspaceId: string; name: string; ownerId: string | null; createdAt: number; deleted: boolean };

export type WorkspaceCommand =
  | { type: 'CreateWorkspace'; workspaceId: string; name: string; now: number; ifMissing?: boolean }
  /** The first member of an ownerless workspace becomes its owner. Answers with no event when it has one. */
  | { type: 'ClaimOwnership'; userId: string; now: number }
  | { type: 'RenameWorkspace'; name: string; now: number }
  | { type: 'TransferOwnership'; toUserId: string; now: number }
  | { type: 'DeleteWorkspace'; now: number };

function validName(raw: string): string {
  const name = raw.trim();
  if (name.length < 1 || name.length > 100) {
    throw DomainError.validation([{ field: 'name', code: 'invalid', message: 'must be 1 to 100 characters' }]);
  }
  return name;
}

export const workspaceDecider: Decider<WorkspaceCommand, WorkspaceEvent, WorkspaceState> = {
  initialState: { exists: false },
  evolve(state, event) {
    switch (event.type) {
      case 'WorkspaceCreated':
        return {
          exists: true,
          workspaceId: event.data.workspaceId,
          name: event.data.name,
          ownerId: null,
          createdAt: event.data.createdAt,
          deleted: false,
        };
      case 'WorkspaceOwnerClaimed':
        return state.exists ? { ...state, ownerId: event.data.userId } : state;
      case 'WorkspaceRenamed':
        return state.exists ? { ...state, name: event.data.name } : state;
      case 'WorkspaceOwnershipTransferred':
        return state.exists ? { ...state, ownerId: event.data.toUserId } : state;
      case 'WorkspaceDeleted':
        return state.exists ? { ...state, deleted: true } : state;
    }
  },
  decide(command, state) {
    switch (command.type) {
      case 'CreateWorkspace': {
        if (state.exists) {
          if (command.ifMissing) return [];
          throw new DomainError('conflict', 'The workspace already exists');
        }
        const name = validName(command.name);
        return [{ type: 'WorkspaceCreated', data: { workspaceId: command.workspaceId, name, createdAt: command.now } }];
      }
      case 'ClaimOwnership':
        if (!state.exists || state.deleted) throw DomainError.notFound('Workspace');
        if (state.ownerId !== null) return [];
        return [{ type: 'WorkspaceOwnerClaimed', data: { userId: command.userId, at: command.now } }];
      case 'RenameWorkspace': {
        if (!state.exists || state.deleted) throw DomainError.notFound('Workspace');
        const name = validName(command.name);
        return name === state.name ? [] : [{ type: 'WorkspaceRenamed', data: { name, at: command.now } }];
      }
      case 'TransferOwnership':
        if (!state.exists || state.deleted) throw DomainError.notFound('Workspace');
        if (state.ownerId === command.toUserId) return [];
        return [
          {
            type: 'WorkspaceOwnershipTransferred',
            data: { fromUserId: state.ownerId, toUserId: command.toUserId, at: command.now },
          },
        ];
      case 'DeleteWorkspace':
        if (!state.exists || state.deleted) throw DomainError.notFound('Workspace');
        return [{ type: 'WorkspaceDeleted', data: { at: command.now } }];
    }
  },
};

/**
 * The record that stays when a deleted workspace's streams, its own included, are gone (docs/design.md, "Workspace
 * erasure"): which workspace, when it was deleted and how many streams went. Its metadata carries the actor of the
 * deletion. One stream per workspace, so recording it twice (a resumed erasure) appends nothing.
 */
export type WorkspaceErasureEvent = DomainEvent<
  'WorkspaceErased',
  { workspaceId: string; deletedAt: number; streams: number; at: number }
>;
export const workspaceErasureStream = streamCategory<WorkspaceErasureEvent>('erasure');
export const workspaceErasureStreamId = workspaceErasureStream.id;

export type WorkspaceErasureCommand = {
  type: 'RecordErasure';
  workspaceId: string;
  deletedAt: number;
  streams: number;
  now: number;
};

export const workspaceErasureDecider: Decider<WorkspaceErasureCommand, WorkspaceErasureEvent, { recorded: boolean }> = {
  initialState: { recorded: false },
  evolve: () => ({ recorded: true }),
  decide(command, state) {
    if (state.recorded) return [];
    const { workspaceId, deletedAt, streams, now } = command;
    return [{ type: 'WorkspaceErased', data: { workspaceId, deletedAt, streams, at: now } }];
  },
};
