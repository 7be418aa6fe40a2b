import { createHash } from 'node:crypto';
import { DomainError } from '../domain/decider.js';
import { apiTokenDecider, apiTokenPrefix, apiTokenStreamId, floorToMinute } from '../domain/api-token.js';
import { membershipDecider, membershipStreamId, type Role } from '../domain/membership.js';
import { signInLinkDecider, signInLinkStreamId } from '../domain/sign-in-link.js';
import { identityDecider, identityStreamId, userDecider, userStreamId, type Profile } from '../domain/user.js';
import { defaultWorkspaceId, workspaceDecider, workspaceStreamId } from '../domain/workspace.js';
import type { Principal } from './principal.js';
import {
  apiTokensCollection,
  memberId,
  membersCollection,
  usersCollection,
  type ApiTokenDoc,
  type MemberDoc,
  type UserDoc,
} from '../projections/identity.js';
import type { ProjectionEngine } from '../projections/engine.js';
import type { ReadCache } from '../projections/read-cache.js';
import type { DocumentStore } from '../store/document-store.js';
import type { Position } from '../store/event-store.js';
import { CommandBus, systemContext, type CommandContext } from './commands.js';
import { newId, newSecret } from './ids.js';
import { hashToken, type Keys } from '../adapters/keys.js';

export const sessionCookieName = 'svc_session';
export const sessionTtlMs = 7 * 24 * 60 * 60 * 1000;

export interface SessionClaims {
  sid: string;
  uid: string;
  wid: string;
  exp: number;
}

export interface ExternalIdentity {
  issuer: string;
  subject: string;
  provider: string;
  isAdmin: boolean;
  profile: Profile;
  /** Whether the provider vouches for `profile.email` (OIDC `email_verified`, GitHub's verified flag). */
  emailVerified?: boolean;
}

export interface SignInOptions {
  /** The invite the sign-in started from (a redirect to `/invite/<token>`), for invite acceptance. */
  inviteToken?: string;
}

/** Admins and owners see and delete every token of their workspace; members only their own. */
export const seesEveryToken = (p: Principal) => p.role === 'admin' || p.role === 'owner';

/** Sessions, sign-in links and API tokens: everything that turns a credential into a Principal. */
export class Identity {
  /** Session cookies seen lately, by value: their signature is checked once. */
  private readonly recentSessions = new Map<string, SessionClaims>();

  private readonly lastUse = new Map<string, number>();

  constructor(
    private readonly bus: CommandBus,
    private readonly docs: DocumentStore,
    private readonly keys: Keys,
    private readonly projections: ProjectionEngine,
    private readonly cache: ReadCache,
    private readonly clock: () => number = Date.now,
  ) {}

  // --- sessions -------------------------------------------------------------------------------------------

  /** Cookie value: base64url(JSON claims) + "." + HMAC over the kind and the claims, so no other signed value passes. */
  encodeSession(claims: SessionClaims): string {
    const payload = Buffer.from(JSON.stringify(claims)).toString('base64url');
    return `${payload}.${this.keys.sign('cookie', `session.${payload}`)}`;
  }

  decodeSession(value: string): SessionClaims | null {
    const [payload, signature] = value.split('.');
    if (!payload || !signature || !this.keys.verify('cookie', `session.${payload}`, signature)) return null;
    try {
      const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as SessionClaims;
      return typeof claims.exp === 'number' && claims.exp > this.clock() ? claims : null;
    } catch {
      return null;
    }
  }

  /**
   * The hot path of a browser's requests, without waiting: a session cookie seen lately (its signature checked then)
   * whose user and role are cached. Undefined whenever the full path has something to check or refuse.
   */
  cachedSessionPrincipal(cookie: string): Principal | undefined {
    let claims = this.recentSessions.get(cookie);
    if (!claims) {
      const decoded = this.decodeSession(cookie);
      if (!decoded) return undefined;
      if (this.recentSessions.size >= 500) this.recentSessions.delete(this.recentSessions.keys().next().value!);
      this.recentSessions.set(cookie, decoded);
      claims = decoded;
    }
    if (claims.exp <= this.clock()) return undefined;
    const hit = this.cache.peek<{ user: UserDoc | null; role: Role | null }>(`session:${claims.uid}:${claims.wid}`);
    if (!hit?.user || hit.user.deactivated) return undefined;
    const effective: Role | null = hit.user.isAdmin ? 'owner' : hit.role;
    if (!effective) return undefined;
    return {
      kind: 'session',
      userId: hit.user._id,
      workspaceId: claims.wid,
      role: effective,
      isAdmin: hit.user.isAdmin,
      tokenId: null,
    };
  }

  async principalFromSession(claims: SessionClaims): Promise<Principal | null> {
    const { user, role } = await this.cache.get(
      [usersCollection, membersCollection],
      `session:${claims.uid}:${claims.wid}`,
      async () => ({
        user: await this.docs.collection<UserDoc>(usersCollection).findOne({ _id: claims.uid }),
        role: await this.roleIn(claims.wid, claims.uid),
      }),
    );
    if (!user || user.deactivated) return null;
    const effective: Role | null = user.isAdmin ? 'owner' : role;
    if (!effective) return null;
    return {
      kind: 'session',
      userId: user._id,
      workspaceId: claims.wid,
      role: effective,
      isAdmin: user.isAdmin,
      tokenId: null,
    };
  }

  private async roleIn(workspaceId: string, userId: string): Promise<Role | null> {
    const m = await this.docs.collection<MemberDoc>(membersCollection).findOne({ _id: memberId(workspaceId, userId) });
    return m?.role ?? null;
  }

  // --- sign-in links --------------------------------------------------------------------------------------

  /**
   * Appends a single-use link for the user with this email and answers its path (`/api/auth/link/...`). The CLI's
   * links make an instance admin; an admin's links from the API make an ordinary user unless asked otherwise.
   */
  async issueSignInLink(email: string, isAdmin = true, ctx: CommandContext = systemContext): Promise<string> {
    const linkId = newId(this.clock());
    const secret = newSecret();
    await this.bus.execute(
      signInLinkStreamId(linkId),
      signInLinkDecider,
      {
        type: 'IssueLink',
        linkId,
        secretHash: hashToken(secret),
        email: email.trim().toLowerCase(),
        isAdmin,
        now: this.clock(),
      },
      ctx,
    );
    return `/api/auth/link/${linkId}.${secret}`;
  }

  async useSignInLink(token: string, ctx: CommandContext): Promise<SessionClaims> {
    const [linkId, secret] = token.split('.');
    if (!linkId || !secret || !/^[0-9a-f-]{36}$/.test(linkId)) {
      throw new DomainError('invalid_token', 'This sign-in link is invalid, expired or already used');
    }
    const used = await this.bus.execute(
      signInLinkStreamId(linkId),
      signInLinkDecider,
      { type: 'UseLink', secretHash: hashToken(secret), now: this.clock() },
      ctx,
    );
    if (used.state.status === 'none')
      throw new DomainError('invalid_token', 'This sign-in link is invalid, expired or already used');
    const { email, isAdmin } = used.state;
    return this.signIn(
      { issuer: 'local', subject: email, provider: 'link', isAdmin, profile: { email, name: null, picture: null } },
      ctx,
    );
  }

  /** Finds or registers the user of an identity, records the sign-in, joins the landing workspace. */
  async signIn(identity: ExternalIdentity, ctx: CommandContext, _opts?: SignInOptions): Promise<SessionClaims> {
    const now = this.clock();
    const key = createHash('sha256').update(`${identity.issuer}\n${identity.subject}`).digest('hex').slice(0, 40);
    const claimed = await this.bus.execute(
      identityStreamId(key),
      identityDecider,
      { type: 'ClaimIdentity', userId: newId(now), issuer: identity.issuer, subject: identity.subject },
      ctx,
    );
    const userId = claimed.state.userId!;
    const userCtx: CommandContext = { ...ctx, actor: { type: 'user', id: userId } };
    const user = await this.bus.load(userStreamId(userId), userDecider);
    // A link never takes admin rights away: only an identity provider's admin lists can (checked at each sign-in).
    const isAdmin =
      identity.provider === 'link' && user.state.exists ? identity.isAdmin || user.state.isAdmin : identity.isAdmin;
    const result = user.state.exists
      ? await this.bus.execute(
          userStreamId(userId),
          userDecider,
          { type: 'RecordSignIn', provider: identity.provider, isAdmin, profile: identity.profile, now },
          userCtx,
        )
      : await this.bus.execute(
          userStreamId(userId),
          userDecider,
          {
            type: 'RegisterUser',
            userId,
            issuer: identity.issuer,
            subject: identity.subject,
            provider: identity.provider,
            isAdmin: identity.isAdmin,
            profile: identity.profile,
            now,
          },
          userCtx,
        );
    const joined = await this.join(defaultWorkspaceId, userId, { ...userCtx, workspaceId: defaultWorkspaceId });
    await this.projections.waitFor(joined ?? result.position, 2000);
    return { sid: newId(now), uid: userId, wid: defaultWorkspaceId, exp: now + sessionTtlMs };
  }

  /**
   * The first member of an ownerless workspace becomes its owner; later ones join as members (docs/design.md,
   * "Identity").
   */
  private async join(workspaceId: string, userId: string, ctx: CommandContext): Promise<Position | null> {
    const existing = await this.bus.load(membershipStreamId(workspaceId, userId), membershipDecider);
    if (existing.state.status === 'member') return null;
    const claim = await this.bus.execute(
      workspaceStreamId(workspaceId),
      workspaceDecider,
      { type: 'ClaimOwnership', userId, now: this.clock() },
      ctx,
    );
    const role: Role = claim.state.exists && claim.state.ownerId === userId ? 'owner' : 'member';
    const r = await this.bus.execute(
      membershipStreamId(workspaceId, userId),
      membershipDecider,
      { type: 'Join', workspaceId, userId, role, now: this.clock() },
      ctx,
    );
    return r.position ?? claim.position;
  }

  // --- API tokens -----------------------------------------------------------------------------------------

  async createApiToken(
    p: Principal,
    name: string,
    expiresAt: number | null,
    ctx: CommandContext,
  ): Promise<{ token: string; tokenId: string; position: Position | null }> {
    const tokenId = newId(this.clock());
    const token = `${apiTokenPrefix}${newSecret()}`;
    const r = await this.bus.execute(
      apiTokenStreamId(tokenId),
      apiTokenDecider,
      {
        type: 'CreateApiToken',
        tokenId,
        workspaceId: p.workspaceId,
        userId: p.userId,
        name,
        tokenHash: hashToken(token),
        expiresAt,
        now: this.clock(),
      },
      ctx,
    );
    return { token, tokenId, position: r.position };
  }

  /**
   * Deletes a token of the caller's workspace. A member may delete only their own; anyone else's answers the same
   * `not_found` as a missing one, so a member cannot learn that it exists.
   */
  async deleteApiToken(p: Principal, tokenId: string, ctx: CommandContext): Promise<Position | null> {
    const doc = await this.docs
      .collection<ApiTokenDoc>(apiTokensCollection)
      .findOne({ _id: tokenId, workspaceId: p.workspaceId });
    if (!doc || (!seesEveryToken(p) && doc.userId !== p.userId)) throw DomainError.notFound('API token');
    const r = await this.bus.execute(
      apiTokenStreamId(doc._id),
      apiTokenDecider,
      { type: 'DeleteApiToken', now: this.clock() },
      ctx,
    );
    return r.position;
  }

  // --- members --------------------------------------------------------------------------------------------

  /** Changes a member's role; the owner's changes only through an ownership transfer. */
  async changeRole(workspaceId: string, userId: string, role: Role, ctx: CommandContext): Promise<Position | null> {
    const target = await this.docs
      .collection<MemberDoc>(membersCollection)
      .findOne({ _id: memberId(workspaceId, userId) });
    if (!target) throw DomainError.notFound('Member');
    if (target.role === 'owner')
      throw new DomainError('forbidden', "The owner's role can only change through an ownership transfer");
    const r = await this.bus.execute(
      membershipStreamId(workspaceId, target.userId),
      membershipDecider,
      { type: 'ChangeRole', role, now: this.clock() },
      ctx,
    );
    return r.position;
  }

  /**
   * The hot path of `principalFromToken`, without waiting: a token whose record is cached, valid, and already
   * recorded as used this minute. Undefined whenever the full path has something to check, refuse or write.
   */
  cachedTokenPrincipal(token: string): Principal | undefined {
    if (!token.startsWith(apiTokenPrefix)) return undefined;
    const hit = this.cache.peek<{ doc: ApiTokenDoc | null; user: UserDoc | null; role: Role | null }>(
      `token:${hashToken(token)}`,
    );
    if (!hit?.doc || !hit.user || hit.user.deactivated || !hit.role) return undefined;
    const { doc, role } = hit;
    const now = this.clock();
    if (doc.expiresAt !== null && doc.expiresAt <= now) return undefined;
    const minute = floorToMinute(now);
    if ((doc.lastUsedAt ?? -1) < minute && (this.lastUse.get(doc._id) ?? -1) < minute) return undefined;
    return { kind: 'token', userId: doc.userId, workspaceId: doc.workspaceId, role, isAdmin: false, tokenId: doc._id };
  }

  /**
   * A token acts with its creator's current role in the token's workspace, and dies with the creator's access.
   * Every refusal is the same 401 so a caller learns nothing about why.
   */
  async principalFromToken(token: string, ctx: CommandContext): Promise<Principal> {
    // Built only when refusing: constructing an Error captures a stack, which showed up in request profiles.
    const invalid = () => new DomainError('invalid_token', 'Token is invalid or expired');
    if (!token.startsWith(apiTokenPrefix)) throw invalid();
    const hash = hashToken(token);
    const { doc, user, role } = await this.cache.get(
      [apiTokensCollection, usersCollection, membersCollection],
      `token:${hash}`,
      async () => {
        const doc = await this.docs.collection<ApiTokenDoc>(apiTokensCollection).findOne({ tokenHash: hash });
        if (!doc) return { doc, user: null, role: null };
        const user = await this.docs.collection<UserDoc>(usersCollection).findOne({ _id: doc.userId });
        return { doc, user, role: await this.roleIn(doc.workspaceId, doc.userId) };
      },
    );
    const now = this.clock();
    if (!doc || (doc.expiresAt !== null && doc.expiresAt <= now)) throw invalid();
    if (!user || user.deactivated || !role) throw invalid();
    await this.recordUse(doc, now, { ...ctx, workspaceId: doc.workspaceId, actor: { type: 'token', id: doc._id } });
    return { kind: 'token', userId: doc.userId, workspaceId: doc.workspaceId, role, isAdmin: false, tokenId: doc._id };
  }

  private async recordUse(doc: ApiTokenDoc, now: number, ctx: CommandContext): Promise<void> {
    const minute = floorToMinute(now);
    if ((doc.lastUsedAt ?? -1) >= minute || (this.lastUse.get(doc._id) ?? -1) >= minute) return;
    this.lastUse.set(doc._id, minute);
    await this.bus.execute(apiTokenStreamId(doc._id), apiTokenDecider, { type: 'RecordUse', now }, ctx);
  }
}
