import { DomainError, FieldErrors, type Decider, type DomainEvent } from './decider.js';
import { streamCategory } from './stream.js';

export const apiTokenStream = streamCategory<ApiTokenEvent>('apitoken');
export const apiTokenStreamId = apiTokenStream.id;
export const apiTokenPrefix = 'svc_';
const minute = 60_000;

export type ApiTokenEvent =
  | DomainEvent<
      'ApiTokenCreated',
      {
        tokenId: string;
        workspaceId: string;
        userId: string;
        name: string;
        tokenHash: string;
        expiresAt: number | null;
        createdAt: number;
      }
    >
  | DomainEvent<'ApiTokenUsed', { at: number }>
  | DomainEvent<'ApiTokenDeleted', { at: number }>;

export type ApiTokenState =
  { status: 'none' | 'deleted' } | { status: 'active'; userId: string; workspaceId: string; lastUsedAt: number | null };

export type ApiTokenCommand =
  | {
      type: 'CreateApiToken';
      tokenId: string;
      workspaceId: string;
      userId: string;
      name: string;
      tokenHash: string;
      expiresAt: number | null;
      now: number;
    }
  | { type: 'RecordUse'; now: number }
  | { type: 'DeleteApiToken'; now: number };

/** `lastUsedAt` is kept to the minute, so a busy token writes at most one event a minute. */
export const floorToMinute = (ms: number) => Math.floor(ms / minute) * minute;

export const apiTokenDecider: Decider<ApiTokenCommand, ApiTokenEvent, ApiTokenState> = {
  initialState: { status: 'none' },
  evolve(state, event) {
    switch (event.type) {
      case 'ApiTokenCreated':
        return { status: 'active', userId: event.data.userId, workspaceId: event.data.workspaceId, lastUsedAt: null };
      case 'ApiTokenUsed':
        return state.status === 'active' ? { ...state, lastUsedAt: event.data.at } : state;
      case 'ApiTokenDeleted':
        return { status: 'deleted' };
    }
  },
  decide(command, state) {
    switch (command.type) {
      case 'CreateApiToken': {
        if (state.status !== 'none') throw new DomainError('conflict', 'The token already exists');
        const errors = new FieldErrors();
        const name = command.name.trim();
        if (name.length === 0) errors.add('name', 'blank', 'must not be blank');
        else if (name.length > 100) errors.add('name', 'too_long', 'must be at most 100 characters');
        if (command.expiresAt !== null && command.expiresAt <= command.now)
          errors.add('expiresAt', 'invalid', 'must be in the future');
        errors.throwIfAny();
        return [
          {
            type: 'ApiTokenCreated',
            data: {
              tokenId: command.tokenId,
              workspaceId: command.workspaceId,
              userId: command.userId,
              name,
              tokenHash: command.tokenHash,
              expiresAt: command.expiresAt,
              createdAt: command.now,
            },
          },
        ];
      }
      case 'RecordUse': {
        if (state.status !== 'active') return [];
        const at = floorToMinute(command.now);
        return state.lastUsedAt !== null && state.lastUsedAt >= at ? [] : [{ type: 'ApiTokenUsed', data: { at } }];
      }
      case 'DeleteApiToken':
        if (state.status !== 'active') throw DomainError.notFound('API token');
        return [{ type: 'ApiTokenDeleted', data: { at: command.now } }];
    }
  },
};
