import { createHash } from 'node:crypto';
import { DomainError } from '../domain/decider.js';
import { ignoreFailure } from '../domain/ignore-failure.js';
import { apiTokenDecider, apiTokenPrefix, apiTokenStreamId, floorToMinute } from '../domain/api-token.js';
import { membershipDecider, membershipStreamId, type Role } from '../domain/membership.js';
import { signInLinkDecider, signInLinkStreamId } from '../domain/sign-in-link.js';
import { sessionDecider, sessionStreamId } from '../domain/session.js';
import { inviteDecider, inviteStreamId } from '../domain/invite.js';
import { identityDecider, identityStreamId, userDecider, userStreamId, type Profile } from '../domain/user.js';
import { defaultWorkspaceId, workspaceDecider, workspaceStreamId } from '../domain/workspace.js';
import type { Principal } from './principal.js';
import {
  apiTokensCollection,
  invitesCollection,
  memberId,
  membersCollection,
  sessionsCollection,
  usersCollection,
  workspacesCollection,
  type ApiTokenDoc,
  type InviteDoc,
  type MemberDoc,
  type SessionDoc,
  type UserDoc,
  type WorkspaceDoc,
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
  /** The provider of the sign-in (`link` for sign-in links), shown as the last one used on the login page. */
  pid: string;
  exp: number;
}

/** What a session cookie is checked against: its row, its user, the role in its workspace and that workspace. */
interface SessionCheck {
  session: SessionDoc | null;
  user: UserDoc | null;
  role: Role | null;
  workspace: WorkspaceDoc | null;
}

export interface ExternalIdentity {
  issuer: string;
  subject: string;
  provider: string;
  isAdmin: boolean;
  profile: Profile;
  /** Whether the provider vouches for `profile.email` (OIDC `email_verified`, GitHub's verified flag): only then are
   * invites to it accepted at sign-in. */
  emailVerified?: boolean;
}

/** How the sign-in started: from an invite link (`/invite/<token>`) or not. */
export interface SignInOptions {
  inviteToken?: string;
}

/** Workspaces are named after their people: "<Name>'s workspace", at most 100 characters. */
export function personalWorkspaceName(profile: Profile): string {
  const who = profile.name?.trim() || profile.email?.split('@')[0]?.trim() || '';
  if (!who) return 'Personal workspace';
  const suffix = "'s workspace";
  return `${who.slice(0, 100 - suffix.length)}${suffix}`;
}

const sessionCheckKey = (c: SessionClaims) => `session:${hashToken(c.sid)}:${c.uid}:${c.wid}`;

/** Admins and owners see and delete every token of their workspace; members only their own. */
export const seesEveryToken = (p: Principal) => p.role === 'admin' || p.role === 'owner';

/** Sessions, sign-in links and API tokens: everything that turns a credential into a Principal. */
export class Identity {
  /** Session cookies seen lately, by value: their signature is checked once. */
  private readonly recentSessions = new Map<string, { claims: SessionClaims; key: string }>();

  private readonly lastUse = new Map<string, number>();

  constructor(
    private readonly bus: CommandBus,
    private readonly docs: DocumentStore,
    private readonly keys: Keys,
    private readonly projections: ProjectionEngine,
    private readonly cache: ReadCache,
    private readonly options: { workspacesEnabled: boolean },
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
   * whose check is cached. The cached check depends on the sessions collection, so a logout, a deactivation or a
   * removal drops it before the request that caused it is answered (docs/design.md, "Identity"). Undefined whenever
   * the full path has something to check or refuse.
   */
  cachedSessionPrincipal(cookie: string): Principal | undefined {
    let seen = this.recentSessions.get(cookie);
    if (!seen) {
      const claims = this.decodeSession(cookie);
      if (!claims) return undefined;
      if (this.recentSessions.size >= 500) this.recentSessions.delete(this.recentSessions.keys().next().value!);
      seen = { claims, key: sessionCheckKey(claims) };
      this.recentSessions.set(cookie, seen);
    }
    const hit = this.cache.peek<SessionCheck>(seen.key);
    return hit ? (this.admitSession(seen.claims, hit) ?? undefined) : undefined;
  }

  async principalFromSession(claims: SessionClaims): Promise<Principal | null> {
    const check = await this.cache.get<SessionCheck>(
      [sessionsCollection, usersCollection, membersCollection, workspacesCollection],
      sessionCheckKey(claims),
      async () => {
        const [session, user, role, workspace] = await Promise.all([
          this.docs.collection<SessionDoc>(sessionsCollection).findOne({ _id: hashToken(claims.sid) }),
          this.docs.collection<UserDoc>(usersCollection).findOne({ _id: claims.uid }),
          this.roleIn(claims.wid, claims.uid),
          this.docs.collection<WorkspaceDoc>(workspacesCollection).findOne({ _id: claims.wid }),
        ]);
        return { session, user, role, workspace };
      },
    );
    return this.admitSession(claims, check);
  }

  /** A session stands while its row does, unexpired and for the cookie's user, in a workspace that still exists. */
  private admitSession(claims: SessionClaims, check: SessionCheck): Principal | null {
    const { session, user, role, workspace } = check;
    const now = this.clock();
    if (claims.exp <= now || !session || session.userId !== claims.uid || session.expiresAt <= now) return null;
    if (!user || user.deactivated || !workspace || workspace.deleted) return null;
    const effective: Role | null = user.isAdmin ? 'owner' : role;
    if (!effective) return null;
    return {
      kind: 'session',
      userId: user._id,
      workspaceId: claims.wid,
      role: effective,
      isAdmin: user.isAdmin,
      tokenId: null,
      loginProvider: claims.pid,
    };
  }

  /** Starts a session of the user in the workspace and answers its claims once the read model holds it. */
  async startSession(
    userId: string,
    workspaceId: string,
    provider: string,
    ctx: CommandContext,
  ): Promise<SessionClaims> {
    const now = this.clock();
    const claims: SessionClaims = {
      sid: newSecret(),
      uid: userId,
      wid: workspaceId,
      pid: provider,
      exp: now + sessionTtlMs,
    };
    const r = await this.bus.execute(
      sessionStreamId(hashToken(claims.sid)),
      sessionDecider,
      { type: 'StartSession', userId, workspaceId, provider, now, expiresAt: claims.exp },
      { ...ctx, workspaceId, actor: { type: 'user', id: userId } },
    );
    await this.projections.waitFor(r.position, 2000);
    return claims;
  }

  /** Ends the session of a cookie (its row goes, so every copy of the cookie stops working). */
  async endSession(claims: SessionClaims, ctx: CommandContext): Promise<Position | null> {
    const r = await this.bus.execute(
      sessionStreamId(hashToken(claims.sid)),
      sessionDecider,
      { type: 'EndSession', now: this.clock() },
      ctx,
    );
    return r.position;
  }

  /** The claims of a signed cookie whose signature holds, expired or not: what logging out needs. */
  sessionOfCookie(value: string): SessionClaims | null {
    const [payload, signature] = value.split('.');
    if (!payload || !signature || !this.keys.verify('cookie', `session.${payload}`, signature)) return null;
    try {
      const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as SessionClaims;
      return typeof claims.sid === 'string' && typeof claims.uid === 'string' ? claims : null;
    } catch {
      return null;
    }
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
      // The link was issued by an instance admin to this address, so the address counts as verified.
      {
        issuer: 'local',
        subject: email,
        provider: 'link',
        isAdmin,
        profile: { email, name: null, picture: null },
        emailVerified: true,
      },
      ctx,
    );
  }

  /**
   * Finds or registers the user of an identity, records the sign-in, resolves the landing workspace and starts a
   * session there (docs/design.md, "Identity"). Sign-ins of one identity run one at a time, so two tabs signing in
   * together cannot both create a personal workspace. Both sign-in kinds (providers and links) come through here.
   */
  async signIn(identity: ExternalIdentity, ctx: CommandContext, opts: SignInOptions = {}): Promise<SessionClaims> {
    const key = createHash('sha256').update(`${identity.issuer}\n${identity.subject}`).digest('hex').slice(0, 40);
    return this.serialized(key, () => this.signInNow(key, identity, ctx, opts));
  }

  private readonly signInQueue = new Map<string, Promise<unknown>>();

  private serialized<T>(key: string, work: () => Promise<T>): Promise<T> {
    const previous = this.signInQueue.get(key) ?? Promise.resolve();
    const next = previous.then(work, work);
    const tail: Promise<void> = next
      .then(() => undefined, ignoreFailure('the sign-in that failed answers its caller; the next one runs anyway'))
      .finally(() => {
        if (this.signInQueue.get(key) === tail) this.signInQueue.delete(key);
      });
    this.signInQueue.set(key, tail);
    return next;
  }

  private async signInNow(
    key: string,
    identity: ExternalIdentity,
    ctx: CommandContext,
    opts: SignInOptions,
  ): Promise<SessionClaims> {
    const now = this.clock();
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
    await this.projections.waitFor(result.position, 2000);
    if (!this.options.workspacesEnabled) {
      const joined = await this.join(defaultWorkspaceId, userId, { ...userCtx, workspaceId: defaultWorkspaceId });
      await this.projections.waitFor(joined, 2000);
      return this.startSession(userId, defaultWorkspaceId, identity.provider, userCtx);
    }
    const landing = await this.landingWorkspace(userId, identity, opts, userCtx);
    return this.startSession(userId, landing, identity.provider, userCtx);
  }

  /**
   * Where a sign-in lands with workspaces enabled: invites to the verified email are accepted first; a newcomer
   * from an invite link accepts it; someone still without a workspace claims the ownerless Default or gets a
   * personal one. The landing is the workspace just joined, else the last used, else the oldest membership.
   */
  private async landingWorkspace(
    userId: string,
    identity: ExternalIdentity,
    opts: SignInOptions,
    ctx: CommandContext,
  ): Promise<string> {
    const memberships = () =>
      this.docs.collection<MemberDoc>(membersCollection).find({ userId }, { sort: [['joinedAt', 1]] });
    const before = await memberships();
    let joined: string | null = null;
    const email = identity.profile.email?.trim().toLowerCase();
    if (identity.emailVerified && email) {
      const invites = await this.docs.collection<InviteDoc>(invitesCollection).find({ email });
      for (const invite of invites) {
        if (
          await this.acceptInvite(invite, userId, ctx).then(
            () => true,
            () => false,
          )
        )
          joined = invite.workspaceId;
      }
    }
    if (opts.inviteToken && before.length === 0) {
      const invite = await this.inviteByToken(opts.inviteToken);
      if (
        invite &&
        invite.email === null &&
        (await this.acceptInvite(invite, userId, ctx).then(
          () => true,
          () => false,
        ))
      )
        joined = invite.workspaceId;
    }
    if (joined) return joined;
    const now = await memberships();
    if (now.length === 0) return this.firstWorkspace(userId, identity.profile, ctx);
    const last = (await this.docs.collection<UserDoc>(usersCollection).findOne({ _id: userId }))?.lastWorkspaceId;
    return now.find((m) => m.workspaceId === last)?.workspaceId ?? now[0]!.workspaceId;
  }

  /** The ownerless Default if nobody owns it yet, else a new personal workspace; the user owns either. */
  private async firstWorkspace(userId: string, profile: Profile, ctx: CommandContext): Promise<string> {
    const claim = await this.bus.execute(
      workspaceStreamId(defaultWorkspaceId),
      workspaceDecider,
      { type: 'ClaimOwnership', userId, now: this.clock() },
      { ...ctx, workspaceId: defaultWorkspaceId },
    );
    if (claim.state.exists && claim.state.ownerId === userId) {
      await this.projections.waitFor(await this.join(defaultWorkspaceId, userId, ctx), 2000);
      return defaultWorkspaceId;
    }
    return this.createWorkspace(personalWorkspaceName(profile), userId, ctx);
  }

  /** A new workspace owned by `userId`, answered once the read models hold its membership. */
  async createWorkspace(name: string, userId: string, ctx: CommandContext): Promise<string> {
    const now = this.clock();
    const workspaceId = newId(now);
    const wsCtx = { ...ctx, workspaceId };
    await this.bus.execute(
      workspaceStreamId(workspaceId),
      workspaceDecider,
      { type: 'CreateWorkspace', workspaceId, name, now },
      wsCtx,
    );
    await this.projections.waitFor(await this.join(workspaceId, userId, wsCtx), 2000);
    return workspaceId;
  }

  /** A pending invite by its token, or null. */
  async inviteByToken(token: string): Promise<InviteDoc | null> {
    if (token.length > 200) return null;
    return this.docs.collection<InviteDoc>(invitesCollection).findOne({ tokenHash: hashToken(token) });
  }

  /**
   * Consumes an invite and makes the user a member with its role (an existing member keeps their role). An invite
   * whose creator no longer may invite (gone, demoted, deactivated) is refused like a used one, even before its
   * revocation is recorded.
   */
  async acceptInvite(invite: InviteDoc, userId: string, ctx: CommandContext): Promise<Position | null> {
    const invalid = () => new DomainError('invalid_token', 'This invite is invalid, expired or already used');
    if (invite.expiresAt <= this.clock()) throw invalid();
    const [creator, creatorRole] = await Promise.all([
      this.docs.collection<UserDoc>(usersCollection).findOne({ _id: invite.createdBy }),
      this.roleIn(invite.workspaceId, invite.createdBy),
    ]);
    const mayInvite = creator && !creator.deactivated && (creator.isAdmin || (creatorRole && creatorRole !== 'member'));
    if (!mayInvite) throw invalid();
    const wsCtx = { ...ctx, workspaceId: invite.workspaceId };
    const existing = await this.bus.load(membershipStreamId(invite.workspaceId, userId), membershipDecider);
    const member = existing.state.status === 'member';
    // A member opening a link (its creator checking it, say) leaves it for the person it was for; an invite to the
    // member's own address is theirs, and used up.
    if (member && invite.email === null) return null;
    await this.bus.execute(
      inviteStreamId(invite.workspaceId, invite._id),
      inviteDecider,
      { type: 'AcceptInvite', userId, now: this.clock() },
      wsCtx,
    );
    if (member) return null;
    const r = await this.bus.execute(
      membershipStreamId(invite.workspaceId, userId),
      membershipDecider,
      { type: 'Join', workspaceId: invite.workspaceId, userId, role: invite.role, now: this.clock() },
      wsCtx,
    );
    await this.projections.waitFor(r.position, 2000);
    return r.position;
  }

  /**
   * The first member of an ownerless workspace becomes its owner; later ones join as members (docs/design.md,
   * "Identity").
   */
  async join(workspaceId: string, userId: string, ctx: CommandContext): Promise<Position | null> {
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
    // A token of a deleted workspace keeps no role: its members are gone from the read model with it.
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
