import { DomainError, type Decider, type DomainEvent } from './decider.js';
import type { Role } from './membership.js';
import { workspaceScopedCategory } from './stream.js';

/** One stream per invite, under its workspace: `invite-<workspaceId>-<inviteId>`. */
export const inviteStream = workspaceScopedCategory<InviteEvent>('invite');
export const inviteStreamId = (workspaceId: string, inviteId: string) => inviteStream.id([workspaceId, inviteId]);

export const inviteLifetimesDays = [1, 7, 30] as const;
export type InviteRole = Exclude<Role, 'owner'>;

export type InviteEvent =
  | DomainEvent<
      'InviteCreated',
      {
        inviteId: string;
        workspaceId: string;
        /** Lowercased; null for a link invite, which anyone holding the link may accept. */
        email: string | null;
        role: InviteRole;
        tokenHash: string;
        createdBy: string;
        createdAt: number;
        expiresAt: number;
      }
    >
  | DomainEvent<'InviteAccepted', { userId: string; at: number }>
  | DomainEvent<'InviteRevoked', { at: number; reason: 'deleted' | 'creator_lost_access' }>;

export type InviteState =
  | { status: 'none' }
  | { status: 'pending' | 'accepted' | 'revoked'; role: InviteRole; expiresAt: number; createdBy: string };

export type InviteCommand =
  | {
      type: 'CreateInvite';
      inviteId: string;
      workspaceId: string;
      email: string | null;
      role: InviteRole;
      tokenHash: string;
      createdBy: string;
      expiresInDays: number;
      now: number;
    }
  | { type: 'AcceptInvite'; userId: string; now: number }
  | { type: 'RevokeInvite'; reason: 'deleted' | 'creator_lost_access'; now: number };

const dayMs = 24 * 60 * 60 * 1000;

/** An invite is used once: accepting consumes it, so a forwarded link cannot bring in a second person. */
export const inviteDecider: Decider<InviteCommand, InviteEvent, InviteState> = {
  initialState: { status: 'none' },
  evolve(state, event) {
    switch (event.type) {
      case 'InviteCreated':
        return {
          status: 'pending',
          role: event.data.role,
          expiresAt: event.data.expiresAt,
          createdBy: event.data.createdBy,
        };
      case 'InviteAccepted':
        return state.status === 'none' ? state : { ...state, status: 'accepted' };
      case 'InviteRevoked':
        return state.status === 'none' ? state : { ...state, status: 'revoked' };
    }
  },
  decide(command, state) {
    switch (command.type) {
      case 'CreateInvite':
        if (state.status !== 'none') throw new DomainError('conflict', 'The invite already exists');
        if (!(inviteLifetimesDays as readonly number[]).includes(command.expiresInDays)) {
          throw DomainError.validation([{ field: 'expiresInDays', code: 'invalid', message: 'must be 1, 7 or 30' }]);
        }
        return [
          {
            type: 'InviteCreated',
            data: {
              inviteId: command.inviteId,
              workspaceId: command.workspaceId,
              email: command.email,
              role: command.role,
              tokenHash: command.tokenHash,
              createdBy: command.createdBy,
              createdAt: command.now,
              expiresAt: command.now + command.expiresInDays * dayMs,
            },
          },
        ];
      case 'AcceptInvite':
        if (state.status !== 'pending' || state.expiresAt <= command.now) {
          throw new DomainError('invalid_token', 'This invite is invalid, expired or already used');
        }
        return [{ type: 'InviteAccepted', data: { userId: command.userId, at: command.now } }];
      case 'RevokeInvite':
        if (state.status === 'none') throw DomainError.notFound('Invite');
        if (state.status !== 'pending') return [];
        return [{ type: 'InviteRevoked', data: { at: command.now, reason: command.reason } }];
    }
  },
};
