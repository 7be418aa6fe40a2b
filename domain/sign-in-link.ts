import { DomainError, type Decider, type DomainEvent } from './decider.js';
import { streamCategory } from './stream.js';

export const signInLinkStream = streamCategory<SignInLinkEvent>('signinlink');
export const signInLinkStreamId = signInLinkStream.id;
/** A link is for the person at the terminal right now; an hour is plenty and limits a leaked copy. */
export const signInLinkTtlMs = 60 * 60 * 1000;

export type SignInLinkEvent =
  | DomainEvent<
      'SignInLinkIssued',
      { linkId: string; secretHash: string; email: string; isAdmin: boolean; expiresAt: number; createdAt: number }
    >
  | DomainEvent<'SignInLinkUsed', { at: number }>;

export type SignInLinkState =
  | { status: 'none' }
  | { status: 'issued' | 'used'; secretHash: string; email: string; isAdmin: boolean; expiresAt: number };

export type SignInLinkCommand =
  | { type: 'IssueLink'; linkId: string; secretHash: string; email: string; isAdmin: boolean; now: number }
  | { type: 'UseLink'; secretHash: string; now: number };

export const signInLinkDecider: Decider<SignInLinkCommand, SignInLinkEvent, SignInLinkState> = {
  initialState: { status: 'none' },
  evolve(state, event) {
    switch (event.type) {
      case 'SignInLinkIssued':
        return {
          status: 'issued',
          secretHash: event.data.secretHash,
          email: event.data.email,
          isAdmin: event.data.isAdmin,
          expiresAt: event.data.expiresAt,
        };
      case 'SignInLinkUsed':
        return state.status === 'none' ? state : { ...state, status: 'used' };
    }
  },
  decide(command, state) {
    switch (command.type) {
      case 'IssueLink':
        if (state.status !== 'none') throw new DomainError('conflict', 'The link already exists');
        return [
          {
            type: 'SignInLinkIssued',
            data: {
              linkId: command.linkId,
              secretHash: command.secretHash,
              email: command.email,
              isAdmin: command.isAdmin,
              expiresAt: command.now + signInLinkTtlMs,
              createdAt: command.now,
            },
          },
        ];
      case 'UseLink':
        // One message for every refusal: a caller probing links learns nothing about which ones exist.
        if (state.status !== 'issued' || state.secretHash !== command.secretHash || state.expiresAt <= command.now) {
          throw new DomainError('invalid_token', 'This sign-in link is invalid, expired or already used');
        }
        return [{ type: 'SignInLinkUsed', data: { at: command.now } }];
    }
  },
};
