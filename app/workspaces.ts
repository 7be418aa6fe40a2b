import { DomainError } from '../domain/decider.js';
import { inviteDecider, inviteStreamId, type InviteRole } from '../domain/invite.js';
import { membershipDecider, membershipStreamId, type Role } from '../domain/membership.js';
import { sessionDecider, sessionStreamId } from '../domain/session.js';
import { userDecider, userStreamId } from '../domain/user.js';
import { defaultWorkspaceId, workspaceDecider, workspaceStreamId } from '../domain/workspace.js';
import { liveStatuses } from '../domain/run.js';
import {
  invitesCollection,
  memberId,
  membersCollection,
  usersCollection,
  workspacesCollection,
  type InviteDoc,
  type MemberDoc,
  type UserDoc,
  type WorkspaceDoc,
} from '../projections/identity.js';
import { runsCollection } from '../projections/runs.js';
import type { ProjectionEngine } from '../projections/engine.js';
import type { DocumentStore } from '../store/document-store.js';
import type { Position } from '../store/event-store.js';
import { hashToken } from '../adapters/keys.js';
import type { CommandBus, CommandContext } from './commands.js';
import { newId, newSecret } from './ids.js';
import { personalWorkspaceName, type Identity, type SessionClaims } from './identity.js';
import type { Principal } from './principal.js';

/**
 * Workspaces, their members and invites, and the instance admin's user management (docs/design.md, "Identity").
 * Access by role is the route table's; the rules here are those of the records (the owner's role, the last owner,
 * active runs).
 */
export class Workspaces {
  constructor(
    private readonly bus: CommandBus,
    private readonly docs: DocumentStore,
    private readonly engine: ProjectionEngine,
    private readonly identity: Identity,
    private readonly options: { workspacesEnabled: boolean },
    private readonly clock: () => number = Date.now,
  ) {}

  private requireEnabled(what: string): void {
    if (!this.options.workspacesEnabled)
      throw new DomainError('forbidden', `${what} needs workspaces, which are not enabled on this instance`);
  }

  private async waited(position: Position | null): Promise<void> {
    await this.engine.waitFor(position, 2000);
  }

  private async workspace(workspaceId: string): Promise<WorkspaceDoc> {
    const ws = await this.docs.collection<WorkspaceDoc>(workspacesCollection).findOne({ _id: workspaceId });
    if (!ws || ws.deleted) throw DomainError.notFound('Workspace');
    return ws;
  }

  private async memberOf(workspaceId: string, userId: string): Promise<MemberDoc | null> {
    return this.docs.collection<MemberDoc>(membersCollection).findOne({ _id: memberId(workspaceId, userId) });
  }

  // --- the caller's workspaces ----------------------------------------------------------------------------

  async create(p: Principal, name: string, ctx: CommandContext): Promise<string> {
    this.requireEnabled('Creating a workspace');
    return this.identity.createWorkspace(name, p.userId, ctx);
  }

  /**
   * Re-issues the session for another workspace: the same sid and expiry, a new `wid`. Members switch to their
   * workspaces, instance admins to any; anything else answers `not_found`.
   */
  async switchTo(
    p: Principal,
    claims: SessionClaims,
    workspaceId: string,
    ctx: CommandContext,
  ): Promise<SessionClaims> {
    await this.workspace(workspaceId);
    if (!p.isAdmin && !(await this.memberOf(workspaceId, p.userId))) throw DomainError.notFound('Workspace');
    const r = await this.bus.execute(
      sessionStreamId(hashToken(claims.sid)),
      sessionDecider,
      { type: 'SwitchSession', workspaceId, now: this.clock() },
      { ...ctx, workspaceId },
    );
    await this.waited(r.position);
    return { ...claims, wid: workspaceId };
  }

  /** Where the caller goes when the current workspace is no longer theirs: the latest used, else the oldest, else a new one. */
  async elsewhere(userId: string, leaving: string, ctx: CommandContext): Promise<string> {
    const rest = (
      await this.docs.collection<MemberDoc>(membersCollection).find({ userId }, { sort: [['joinedAt', 1]] })
    ).filter((m) => m.workspaceId !== leaving);
    if (rest.length === 0) {
      const user = await this.docs.collection<UserDoc>(usersCollection).findOne({ _id: userId });
      return this.identity.createWorkspace(
        personalWorkspaceName({ email: user?.email ?? null, name: user?.name ?? null, picture: null }),
        userId,
        ctx,
      );
    }
    return rest[rest.length - 1]!.workspaceId;
  }

  async rename(p: Principal, name: string, ctx: CommandContext): Promise<void> {
    const r = await this.bus.execute(
      workspaceStreamId(p.workspaceId),
      workspaceDecider,
      { type: 'RenameWorkspace', name, now: this.clock() },
      ctx,
    );
    await this.waited(r.position);
  }

  /**
   * Deletes a workspace: refused while runs are active; then marked deleted, which empties its read-model records
   * at once (nothing of it is readable from here on), and the projector's process erases its streams and run files
   * in the background (docs/design.md, "Workspace erasure"). Default stays: it is the instance's.
   */
  async deleteWorkspace(workspaceId: string, ctx: CommandContext): Promise<void> {
    await this.assertDeletable(workspaceId);
    const r = await this.bus.execute(
      workspaceStreamId(workspaceId),
      workspaceDecider,
      { type: 'DeleteWorkspace', now: this.clock() },
      { ...ctx, workspaceId },
    );
    await this.waited(r.position);
  }

  private async assertDeletable(workspaceId: string): Promise<void> {
    await this.workspace(workspaceId);
    if (workspaceId === defaultWorkspaceId)
      throw new DomainError('conflict', 'The default workspace cannot be deleted');
    const live = await this.docs.collection(runsCollection).count({ workspaceId, status: { $in: [...liveStatuses] } });
    if (live > 0)
      throw new DomainError('conflict', 'The workspace has active runs: cancel them or wait until they end');
  }

  /**
   * Deletes the caller's current workspace and answers the session moved to another of theirs (a new personal one
   * when none is left). The session moves first: the deletion ends the sessions still acting in the workspace.
   */
  async deleteCurrent(p: Principal, claims: SessionClaims, ctx: CommandContext): Promise<SessionClaims> {
    await this.assertDeletable(p.workspaceId);
    const target = await this.elsewhere(p.userId, p.workspaceId, ctx);
    const moved = await this.switchTo({ ...p, isAdmin: true }, claims, target, ctx);
    await this.deleteWorkspace(p.workspaceId, ctx);
    return moved;
  }

  /** The target becomes the owner, the old owner an admin. */
  async transfer(p: Principal, toUserId: string, ctx: CommandContext): Promise<void> {
    const ws = await this.workspace(p.workspaceId);
    const target = await this.memberOf(p.workspaceId, toUserId);
    if (!target) throw DomainError.notFound('Member');
    if (ws.ownerId === toUserId) return;
    await this.bus.execute(
      workspaceStreamId(p.workspaceId),
      workspaceDecider,
      { type: 'TransferOwnership', toUserId, now: this.clock() },
      ctx,
    );
    let position = await this.setRole(p.workspaceId, toUserId, 'owner', ctx);
    if (ws.ownerId && (await this.memberOf(p.workspaceId, ws.ownerId)))
      position = (await this.setRole(p.workspaceId, ws.ownerId, 'admin', ctx)) ?? position;
    await this.waited(position);
  }

  private async setRole(
    workspaceId: string,
    userId: string,
    role: Role,
    ctx: CommandContext,
  ): Promise<Position | null> {
    const r = await this.bus.execute(
      membershipStreamId(workspaceId, userId),
      membershipDecider,
      { type: 'ChangeRole', role, now: this.clock() },
      ctx,
    );
    return r.position;
  }

  /** Leaves the current workspace (not its owner) and answers the session for the workspace the caller lands in. */
  async leave(p: Principal, claims: SessionClaims, ctx: CommandContext): Promise<SessionClaims> {
    this.requireEnabled('Leaving a workspace');
    const member = await this.memberOf(p.workspaceId, p.userId);
    if (!member) throw DomainError.notFound('Member');
    if (member.role === 'owner')
      throw new DomainError('conflict', 'The owner cannot leave: transfer the ownership to another member first');
    const target = await this.elsewhere(p.userId, p.workspaceId, ctx);
    // The session moves first: the removal ends the sessions still acting in the workspace.
    const moved = await this.switchTo({ ...p, isAdmin: true }, claims, target, ctx);
    await this.removeMembership(p.workspaceId, p.userId, ctx);
    return moved;
  }

  // --- members --------------------------------------------------------------------------------------------

  /** Changes a member's role; a demotion to member revokes the invites they created. */
  async changeRole(p: Principal, userId: string, role: InviteRole, ctx: CommandContext): Promise<void> {
    await this.waited(await this.identity.changeRole(p.workspaceId, userId, role, ctx));
    if (role === 'member') await this.revokeInvitesBy(userId, p.workspaceId, ctx);
  }

  async removeMember(p: Principal, userId: string, ctx: CommandContext): Promise<void> {
    if (!this.options.workspacesEnabled)
      throw new DomainError(
        'forbidden',
        "Members can't be removed while workspaces are disabled: deactivate the user instead",
      );
    const member = await this.memberOf(p.workspaceId, userId);
    if (!member) throw DomainError.notFound('Member');
    if (member.role === 'owner') throw new DomainError('forbidden', 'The owner cannot be removed');
    if (userId === p.userId) throw new DomainError('conflict', 'Leave the workspace instead of removing yourself');
    await this.removeMembership(p.workspaceId, userId, ctx);
  }

  private async removeMembership(workspaceId: string, userId: string, ctx: CommandContext): Promise<void> {
    const r = await this.bus.execute(
      membershipStreamId(workspaceId, userId),
      membershipDecider,
      { type: 'Remove', now: this.clock() },
      { ...ctx, workspaceId },
    );
    await this.waited(r.position);
    await this.revokeInvitesBy(userId, workspaceId, ctx);
  }

  /** Revokes the pending invites a user created (in one workspace, or everywhere). */
  private async revokeInvitesBy(userId: string, workspaceId: string | null, ctx: CommandContext): Promise<void> {
    const invites = await this.docs
      .collection<InviteDoc>(invitesCollection)
      .find(workspaceId ? { createdBy: userId, workspaceId } : { createdBy: userId });
    let position: Position | null = null;
    for (const invite of invites) {
      const r = await this.bus.execute(
        inviteStreamId(invite.workspaceId, invite._id),
        inviteDecider,
        { type: 'RevokeInvite', reason: 'creator_lost_access', now: this.clock() },
        { ...ctx, workspaceId: invite.workspaceId },
      );
      position = r.position ?? position;
    }
    await this.waited(position);
  }

  // --- invites --------------------------------------------------------------------------------------------

  /** Creates an invite; answers the token, which only a link invite shows (once). */
  async createInvite(
    p: Principal,
    input: { email?: string; role: InviteRole; expiresInDays?: number },
    ctx: CommandContext,
  ): Promise<{ inviteId: string; token: string }> {
    this.requireEnabled('Inviting');
    const inviteId = newId(this.clock());
    const token = newSecret();
    const r = await this.bus.execute(
      inviteStreamId(p.workspaceId, inviteId),
      inviteDecider,
      {
        type: 'CreateInvite',
        inviteId,
        workspaceId: p.workspaceId,
        email: input.email?.trim().toLowerCase() ?? null,
        role: input.role,
        tokenHash: hashToken(token),
        createdBy: p.userId,
        expiresInDays: input.expiresInDays ?? 7,
        now: this.clock(),
      },
      ctx,
    );
    await this.waited(r.position);
    return { inviteId, token };
  }

  async revokeInvite(p: Principal, inviteId: string, ctx: CommandContext): Promise<void> {
    const invite = await this.docs
      .collection<InviteDoc>(invitesCollection)
      .findOne({ _id: inviteId, workspaceId: p.workspaceId });
    if (!invite) throw DomainError.notFound('Invite');
    const r = await this.bus.execute(
      inviteStreamId(p.workspaceId, inviteId),
      inviteDecider,
      { type: 'RevokeInvite', reason: 'deleted', now: this.clock() },
      ctx,
    );
    await this.waited(r.position);
  }

  /**
   * Accepts an invite (a link invite, or an email invite to the caller's own address) and answers the session
   * for its workspace.
   */
  async acceptInvite(p: Principal, claims: SessionClaims, token: string, ctx: CommandContext): Promise<SessionClaims> {
    const invalid = new DomainError('invalid_token', 'This invite is invalid, expired or already used');
    const invite = await this.identity.inviteByToken(token);
    if (!invite) throw invalid;
    if (invite.email !== null) {
      const user = await this.docs.collection<UserDoc>(usersCollection).findOne({ _id: p.userId });
      if (user?.email?.toLowerCase() !== invite.email) throw invalid;
    }
    await this.identity.acceptInvite(invite, p.userId, ctx);
    return this.switchTo(p, claims, invite.workspaceId, ctx);
  }

  // --- instance admin -------------------------------------------------------------------------------------

  /**
   * Deactivates or reactivates a user, or sets the instance admin flag. A deactivation ends every session of the
   * user at once and revokes the invites they created. An instance admin cannot lock themselves out.
   */
  async updateUser(
    p: Principal,
    userId: string,
    change: { deactivated?: boolean; isAdmin?: boolean },
    ctx: CommandContext,
  ): Promise<void> {
    const exists = await this.docs.collection<UserDoc>(usersCollection).findOne({ _id: userId });
    if (!exists) throw DomainError.notFound('User');
    if (userId === p.userId && (change.deactivated === true || change.isAdmin === false))
      throw new DomainError('conflict', 'You cannot deactivate yourself or take your own instance admin rights');
    let position: Position | null = null;
    if (change.isAdmin !== undefined) {
      const r = await this.bus.execute(
        userStreamId(userId),
        userDecider,
        { type: 'SetAdmin', isAdmin: change.isAdmin, now: this.clock() },
        ctx,
      );
      position = r.position ?? position;
    }
    if (change.deactivated !== undefined) {
      const r = await this.bus.execute(
        userStreamId(userId),
        userDecider,
        { type: 'SetDeactivated', deactivated: change.deactivated, now: this.clock() },
        ctx,
      );
      position = r.position ?? position;
    }
    await this.waited(position);
    if (change.deactivated === true) await this.revokeInvitesBy(userId, null, ctx);
  }
}
