import { DomainError, type Decider, type DomainEvent } from './decider.js';
import { streamCategory } from './stream.js';

/** Fixed id of the workspace every instance starts with: `Default`, created at start, without an owner. */
export const defaultWorkspaceId = '00000000-0000-7000-8000-000000000001';
export const workspaceStream = streamCategory<WorkspaceEvent>('workspace');
export const workspaceStreamId = workspaceStream.id;

export type WorkspaceEvent =
  | DomainEvent<'WorkspaceCreated', { workspaceId: string; name: string; createdAt: number }>
  | DomainEvent<'WorkspaceOwnerClaimed', { userId: string; at: number }>;

export type WorkspaceState =
  { exists: false } | { exists: true; workspaceId: string; name: string; ownerId: string | null; createdAt: number };

export type WorkspaceCommand =
  | { type: 'CreateWorkspace'; workspaceId: string; name: string; now: number; ifMissing?: boolean }
  /** The first member of an ownerless workspace becomes its owner. Answers with no event when it has one. */
  | { type: 'ClaimOwnership'; userId: string; now: number };

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
        };
      case 'WorkspaceOwnerClaimed':
        return state.exists ? { ...state, ownerId: event.data.userId } : state;
    }
  },
  decide(command, state) {
    switch (command.type) {
      case 'CreateWorkspace': {
        if (state.exists) {
          if (command.ifMissing) return [];
          throw new DomainError('conflict', 'The workspace already exists');
        }
        const name = command.name.trim();
        if (name.length < 1 || name.length > 100) {
          throw DomainError.validation([{ field: 'name', code: 'invalid', message: 'must be 1 to 100 characters' }]);
        }
        return [{ type: 'WorkspaceCreated', data: { workspaceId: command.workspaceId, name, createdAt: command.now } }];
      }
      case 'ClaimOwnership':
        if (!state.exists) throw DomainError.notFound('Workspace');
        if (state.ownerId !== null) return [];
        return [{ type: 'WorkspaceOwnerClaimed', data: { userId: command.userId, at: command.now } }];
    }
  },
};
