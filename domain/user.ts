import { DomainError, type Decider, type DomainEvent } from './decider.js';
import { streamCategory } from './stream.js';

export const userStream = streamCategory<UserEvent>('user');
export const userStreamId = userStream.id;
/** One stream per external identity; appending to it with `no_stream` makes (issuer, subject) unique. */
export const identityStream = streamCategory<IdentityEvent>('identity');
export const identityStreamId = identityStream.id;

export interface Profile {
  email: string | null;
  name: string | null;
  picture: string | null;
}

export type UserEvent =
  | DomainEvent<
      'UserRegistered',
      {
        userId: string;
        issuer: string;
        subject: string;
        provider: string;
        isAdmin: boolean;
        createdAt: number;
      } & Profile
    >
  | DomainEvent<'UserSignedIn', { at: number; provider: string; isAdmin: boolean } & Profile>
  | DomainEvent<'UserDeactivated', { at: number }>
  | DomainEvent<'UserReactivated', { at: number }>
  /** An instance admin granted or took the instance admin flag (an identity provider's admin lists set it at sign-in). */
  | DomainEvent<'UserAdminChanged', { isAdmin: boolean; at: number }>;

export type UserState =
  { exists: false } | { exists: true; userId: string; isAdmin: boolean; deactivated: boolean; profile: Profile };

export type UserCommand =
  | {
      type: 'RegisterUser';
      userId: string;
      issuer: string;
      subject: string;
      provider: string;
      isAdmin: boolean;
      profile: Profile;
      now: number;
    }
  | { type: 'RecordSignIn'; provider: string; isAdmin: boolean; profile: Profile; now: number }
  | { type: 'SetDeactivated'; deactivated: boolean; now: number }
  | { type: 'SetAdmin'; isAdmin: boolean; now: number };

/** Only http(s) pictures are kept: anything else could smuggle script into the UI. */
export function safePicture(url: string | null): string | null {
  return url && /^https?:\/\//i.test(url) ? url.slice(0, 2000) : null;
}

export const userDecider: Decider<UserCommand, UserEvent, UserState> = {
  initialState: { exists: false },
  evolve(state, event) {
    switch (event.type) {
      case 'UserRegistered': {
        const { email, name, picture } = event.data;
        return {
          exists: true,
          userId: event.data.userId,
          isAdmin: event.data.isAdmin,
          deactivated: false,
          profile: { email, name, picture },
        };
      }
      case 'UserSignedIn': {
        if (!state.exists) return state;
        const { email, name, picture } = event.data;
        return { ...state, isAdmin: event.data.isAdmin, profile: { email, name, picture } };
      }
      case 'UserDeactivated':
        return state.exists ? { ...state, deactivated: true } : state;
      case 'UserReactivated':
        return state.exists ? { ...state, deactivated: false } : state;
      case 'UserAdminChanged':
        return state.exists ? { ...state, isAdmin: event.data.isAdmin } : state;
    }
  },
  decide(command, state) {
    switch (command.type) {
      case 'RegisterUser': {
        if (state.exists) throw new DomainError('conflict', 'The user already exists');
        const profile = { ...command.profile, picture: safePicture(command.profile.picture) };
        return [
          {
            type: 'UserRegistered',
            data: {
              userId: command.userId,
              issuer: command.issuer,
              subject: command.subject,
              provider: command.provider,
              isAdmin: command.isAdmin,
              createdAt: command.now,
              ...profile,
            },
          },
        ];
      }
      case 'RecordSignIn': {
        if (!state.exists) throw DomainError.notFound('User');
        if (state.deactivated) throw new DomainError('forbidden', 'This account has been deactivated');
        const profile = { ...command.profile, picture: safePicture(command.profile.picture) };
        return [
          {
            type: 'UserSignedIn',
            data: { at: command.now, provider: command.provider, isAdmin: command.isAdmin, ...profile },
          },
        ];
      }
      case 'SetDeactivated': {
        if (!state.exists) throw DomainError.notFound('User');
        if (state.deactivated === command.deactivated) return [];
        return [
          command.deactivated
            ? { type: 'UserDeactivated', data: { at: command.now } }
            : { type: 'UserReactivated', data: { at: command.now } },
        ];
      }
      case 'SetAdmin':
        if (!state.exists) throw DomainError.notFound('User');
        if (state.isAdmin === command.isAdmin) return [];
        return [{ type: 'UserAdminChanged', data: { isAdmin: command.isAdmin, at: command.now } }];
    }
  },
};

export type IdentityEvent = DomainEvent<'IdentityClaimed', { userId: string; issuer: string; subject: string }>;
export type IdentityState = { userId: string | null };
export type IdentityCommand = { type: 'ClaimIdentity'; userId: string; issuer: string; subject: string };

/** The first claim of an identity wins; later claims resolve to the same user. */
export const identityDecider: Decider<IdentityCommand, IdentityEvent, IdentityState> = {
  initialState: { userId: null },
  evolve: (_state, event) => ({ userId: event.data.userId }),
  decide: (command, state) =>
    state.userId !== null
      ? []
      : [
          {
            type: 'IdentityClaimed',
            data: { userId: command.userId, issuer: command.issuer, subject: command.subject },
          },
        ],
};
