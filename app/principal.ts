import type { Role } from '../domain/membership.js';

/** The caller of a request, resolved once by the auth hook. */
export interface Principal {
  kind: 'session' | 'token';
  userId: string;
  workspaceId: string;
  /** Effective role in the workspace: instance admins with a session act as owners everywhere. */
  role: Role;
  isAdmin: boolean;
  tokenId: string | null;
  /** The provider the session signed in with (the cookie's `pid`); absent for API tokens. */
  loginProvider?: string;
}
