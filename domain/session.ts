import type { Decider, DomainEvent } from './decider.js';
import { streamCategory } from './stream.js';

/**
 * One stream per browser session, keyed by the hash of its sid: the cookie names the session, the read model decides
 * whether it still stands (docs/design.md, "Identity").
 */
export const sessionStream = streamCategory<SessionEvent>('session');
export const sessionStreamId = sessionStream.id;

export type SessionEvent =
  | DomainEvent<
      'SessionStarted',
      { userId: string; workspaceId: string; provider: string; startedAt: number; expiresAt: number }
    >
  /** The session now acts in another workspace: the same sid and expiry, a new cookie. */
  | DomainEvent<'SessionSwitched', { userId: string; workspaceId: string; at: number }>
  | DomainEvent<'SessionEnded', { userId: string; at: number }>;

export type SessionState =
  { status: 'none' | 'ended' } | { status: 'active'; userId: string; workspaceId: string; expiresAt: number };

export type SessionCommand =
  | { type: 'StartSession'; userId: string; workspaceId: string; provider: string; now: number; expiresAt: number }
  | { type: 'SwitchSession'; workspaceId: string; now: number }
  | { type: 'EndSession'; now: number };

export const sessionDecider: Decider<SessionCommand, SessionEvent, SessionState> = {
  initialState: { status: 'none' },
  evolve(state, event) {
    switch (event.type) {
      case 'SessionStarted':
        return {
          status: 'active',
          userId: event.data.userId,
          workspaceId: event.data.workspaceId,
          expiresAt: event.data.expiresAt,
        };
      case 'SessionSwitched':
        return state.status === 'active' ? { ...state, workspaceId: event.data.workspaceId } : state;
      case 'SessionEnded':
        return { status: 'ended' };
    }
  },
  decide(command, state) {
    switch (command.type) {
      case 'StartSession':
        // A sid is fresh randomness: a second start of the same one changes nothing.
        if (state.status !== 'none') return [];
        return [
          {
            type: 'SessionStarted',
            data: {
              userId: command.userId,
              workspaceId: command.workspaceId,
              provider: command.provider,
              startedAt: command.now,
              expiresAt: command.expiresAt,
            },
          },
        ];
      case 'SwitchSession':
        if (state.status !== 'active' || state.workspaceId === command.workspaceId) return [];
        return [
          {
            type: 'SessionSwitched',
            data: { userId: state.userId, workspaceId: command.workspaceId, at: command.now },
          },
        ];
      case 'EndSession':
        // Logging out twice, or after the session was revoked, is not an error.
        if (state.status !== 'active') return [];
        return [{ type: 'SessionEnded', data: { userId: state.userId, at: command.now } }];
    }
  },
};
