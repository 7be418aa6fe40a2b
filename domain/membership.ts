import { DomainError, type Decider, type DomainEvent } from './decider.js';
import { workspaceScopedCategory } from './stream.js';

export type Role = 'owner' | 'admin' | 'member';
export const roleRank: Record<Role, number> = { member: 1, admin: 2, owner: 3 };

export const membershipStream = workspaceScopedCategory<MembershipEvent>('membership');
export const membershipStreamId = (workspaceId: string, userId: string) => membershipStream.id([workspaceId, userId]);

export type MembershipEvent =
  | DomainEvent<'MemberJoined', { workspaceId: string; userId: string; role: Role; joinedAt: number }>
  | DomainEvent<'MemberRoleChanged', { role: Role; at: number }>
  | DomainEvent<'MemberRemoved', { at: number }>;

export type MembershipState = { status: 'none' | 'removed' } | { status: 'member'; role: Role; joinedAt: number };

export type MembershipCommand =
  | { type: 'Join'; workspaceId: string; userId: string; role: Role; now: number }
  | { type: 'ChangeRole'; role: Role; now: number }
  | { type: 'Remove'; now: number };

export const membershipDecider: Decider<MembershipCommand, MembershipEvent, MembershipState> = {
  initialState: { status: 'none' },
  evolve(state, event) {
    switch (event.type) {
      case 'MemberJoined':
        return { status: 'member', role: event.data.role, joinedAt: event.data.joinedAt };
      case 'MemberRoleChanged':
        return state.status === 'member' ? { ...state, role: event.data.role } : state;
      case 'MemberRemoved':
        return { status: 'removed' };
    }
  },
  decide(command, state) {
    switch (command.type) {
      case 'Join':
        // Joining twice is harmless: concurrent sign-ins of one user both end up members.
        if (state.status === 'member') return [];
        return [
          {
            type: 'MemberJoined',
            data: {
              workspaceId: command.workspaceId,
              userId: command.userId,
              role: command.role,
              joinedAt: command.now,
            },
          },
        ];
      case 'ChangeRole':
        if (state.status !== 'member') throw DomainError.notFound('Member');
        if (state.role === command.role) return [];
        return [{ type: 'MemberRoleChanged', data: { role: command.role, at: command.now } }];
      case 'Remove':
        if (state.status !== 'member') throw DomainError.notFound('Member');
        return [{ type: 'MemberRemoved', data: { at: command.now } }];
    }
  },
};
