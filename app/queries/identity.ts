import { DomainError } from '../../domain/decider.js';
import {
  apiTokensCollection,
  invitesCollection,
  memberId,
  membersCollection,
  usersCollection,
  workspacesCollection,
  type ApiTokenDoc,
  type InviteDoc,
  type MemberDoc,
  type UserDoc,
  type WorkspaceDoc,
} from '../../projections/identity.js';
import { hashToken } from '../../adapters/keys.js';
import type { DocumentStore, Filter } from '../../store/document-store.js';
import { seesEveryToken } from '../identity.js';
import type { Principal } from '../principal.js';
import type { Page, PageRequest } from './list.js';

/** A member with the user record it belongs to (null when the user record is missing). */
export interface MemberView {
  member: MemberDoc;
  user: UserDoc | null;
}

/** A token with the display name of the user who created it. */
export interface TokenView {
  token: ApiTokenDoc;
  createdBy: string | null;
}

/** Members, API tokens and the caller's own records, as one principal may see them. */
export class IdentityQueries {
  constructor(
    private readonly docs: DocumentStore,
    private readonly principal: Principal,
  ) {}

  private get workspaceId() {
    return this.principal.workspaceId;
  }

  private async users(ids: string[]): Promise<Map<string, UserDoc>> {
    const unique = [...new Set(ids)];
    const found =
      unique.length === 0 ? [] : await this.docs.collection<UserDoc>(usersCollection).find({ _id: { $in: unique } });
    return new Map(found.map((u) => [u._id, u]));
  }

  async members(page: PageRequest): Promise<Page<MemberView>> {
    const members = this.docs.collection<MemberDoc>(membersCollection);
    const filter = { workspaceId: this.workspaceId };
    const [docs, total] = await Promise.all([members.find(filter, page.find), members.count(filter)]);
    const users = await this.users(docs.map((m) => m.userId));
    return { items: docs.map((member) => ({ member, user: users.get(member.userId) ?? null })), total };
  }

  async member(userId: string): Promise<MemberView> {
    const member = await this.docs
      .collection<MemberDoc>(membersCollection)
      .findOne({ _id: memberId(this.workspaceId, userId) });
    if (!member) throw DomainError.notFound('Member');
    const users = await this.users([member.userId]);
    return { member, user: users.get(member.userId) ?? null };
  }

  /** Members see their own tokens; admins and owners every token of the workspace. */
  async tokens(page: PageRequest): Promise<Page<TokenView>> {
    const tokens = this.docs.collection<ApiTokenDoc>(apiTokensCollection);
    const filter: Filter = { workspaceId: this.workspaceId };
    if (!seesEveryToken(this.principal)) filter.userId = this.principal.userId;
    const [docs, total] = await Promise.all([
      tokens.find(filter, page.find),
      tokens.count(filter, { search: page.search }),
    ]);
    return { items: await this.withCreators(docs), total };
  }

  /** A token the caller may see, or `not_found` ("API token not found"). */
  async token(tokenId: string): Promise<TokenView> {
    const filter: Filter = { _id: tokenId, workspaceId: this.workspaceId };
    if (!seesEveryToken(this.principal)) filter.userId = this.principal.userId;
    const doc = await this.docs.collection<ApiTokenDoc>(apiTokensCollection).findOne(filter);
    if (!doc) throw DomainError.notFound('API token');
    const [view] = await this.withCreators([doc]);
    return view!;
  }

  private async withCreators(docs: ApiTokenDoc[]): Promise<TokenView[]> {
    const users = await this.users(docs.map((d) => d.userId));
    return docs.map((token) => {
      const u = users.get(token.userId);
      return { token, createdBy: u ? (u.name ?? u.email) : null };
    });
  }

  /** The caller's user record and current workspace, or `not_found` ("User not found") when either is gone. */
  async me(): Promise<{ user: UserDoc; workspace: WorkspaceDoc }> {
    const [user, workspace] = await Promise.all([
      this.docs.collection<UserDoc>(usersCollection).findOne({ _id: this.principal.userId }),
      this.docs.collection<WorkspaceDoc>(workspacesCollection).findOne({ _id: this.workspaceId }),
    ]);
    if (!user || !workspace) throw DomainError.notFound('User');
    return { user, workspace };
  }

  private async workspacesById(ids: string[]): Promise<Map<string, WorkspaceDoc>> {
    const unique = [...new Set(ids)];
    const found =
      unique.length === 0
        ? []
        : await this.docs.collection<WorkspaceDoc>(workspacesCollection).find({ _id: { $in: unique } });
    return new Map(found.filter((w) => !w.deleted).map((w) => [w._id, w]));
  }

  /** The caller's workspaces with their role in each, oldest membership first. */
  async myWorkspaces(): Promise<Array<{ workspace: WorkspaceDoc; role: MemberDoc['role'] }>> {
    const members = await this.docs
      .collection<MemberDoc>(membersCollection)
      .find({ userId: this.principal.userId }, { sort: [['joinedAt', 1]], limit: 1000 });
    const workspaces = await this.workspacesById(members.map((m) => m.workspaceId));
    return members.flatMap((m) => {
      const workspace = workspaces.get(m.workspaceId);
      return workspace ? [{ workspace, role: m.role }] : [];
    });
  }

  /** The current workspace with its member count. */
  async workspace(): Promise<{ workspace: WorkspaceDoc; members: number }> {
    const workspace = (await this.workspacesById([this.workspaceId])).get(this.workspaceId);
    if (!workspace) throw DomainError.notFound('Workspace');
    const members = await this.docs.collection<MemberDoc>(membersCollection).count({ workspaceId: this.workspaceId });
    return { workspace, members };
  }

  /** Pending invites of the current workspace, with the name of whoever created each. */
  async invites(page: PageRequest): Promise<Page<{ invite: InviteDoc; invitedBy: string | null }>> {
    const invites = this.docs.collection<InviteDoc>(invitesCollection);
    const filter = { workspaceId: this.workspaceId };
    const [docs, total] = await Promise.all([invites.find(filter, page.find), invites.count(filter)]);
    const users = await this.users(docs.map((d) => d.createdBy));
    return {
      items: docs.map((invite) => {
        const u = users.get(invite.createdBy);
        return { invite, invitedBy: u ? (u.name ?? u.email) : null };
      }),
      total,
    };
  }

  /** One pending invite of the current workspace, or `not_found` ("Invite not found"). */
  async invite(inviteId: string): Promise<{ invite: InviteDoc; invitedBy: string | null }> {
    const invite = await this.docs
      .collection<InviteDoc>(invitesCollection)
      .findOne({ _id: inviteId, workspaceId: this.workspaceId });
    if (!invite) throw DomainError.notFound('Invite');
    const u = (await this.users([invite.createdBy])).get(invite.createdBy);
    return { invite, invitedBy: u ? (u.name ?? u.email) : null };
  }

  /** What an invite link leads to, for the page that asks to confirm it; `not_found` for any unusable token. */
  async inviteLookup(token: string): Promise<{
    workspaceName: string;
    role: InviteDoc['role'];
    invitedBy: string | null;
    expiresAt: number;
    expired: boolean;
    alreadyMember: boolean;
  }> {
    const invite =
      token.length > 200
        ? null
        : await this.docs.collection<InviteDoc>(invitesCollection).findOne({ tokenHash: hashToken(token) });
    const workspace = invite && (await this.workspacesById([invite.workspaceId])).get(invite.workspaceId);
    if (!invite || !workspace) throw DomainError.notFound('Invite');
    const [creator, member] = await Promise.all([
      this.users([invite.createdBy]),
      this.docs
        .collection<MemberDoc>(membersCollection)
        .findOne({ _id: memberId(invite.workspaceId, this.principal.userId) }),
    ]);
    const u = creator.get(invite.createdBy);
    return {
      workspaceName: workspace.name,
      role: invite.role,
      invitedBy: u ? (u.name ?? u.email) : null,
      expiresAt: invite.expiresAt,
      expired: invite.expiresAt <= Date.now(),
      alreadyMember: member !== null,
    };
  }

  /** A user of the instance by id, or `not_found` ("User not found"). */
  async user(userId: string): Promise<UserDoc> {
    const user = await this.docs.collection<UserDoc>(usersCollection).findOne({ _id: userId });
    if (!user) throw DomainError.notFound('User');
    return user;
  }

  /** Every user of the instance (instance admins only, by the route table). */
  async allUsers(page: PageRequest): Promise<Page<UserDoc>> {
    const users = this.docs.collection<UserDoc>(usersCollection);
    const [items, total] = await Promise.all([users.find({}, page.find), users.count({}, { search: page.search })]);
    return { items, total };
  }

  /** Every live workspace of the instance with its owner and member count (instance admins only). */
  async allWorkspaces(
    page: PageRequest,
  ): Promise<Page<{ workspace: WorkspaceDoc; owner: UserDoc | null; members: number }>> {
    const workspaces = this.docs.collection<WorkspaceDoc>(workspacesCollection);
    const filter: Filter = { deleted: { $ne: true } };
    const [docs, total] = await Promise.all([
      workspaces.find(filter, page.find),
      workspaces.count(filter, { search: page.search }),
    ]);
    const owners = await this.users(docs.flatMap((w) => (w.ownerId ? [w.ownerId] : [])));
    const members = this.docs.collection<MemberDoc>(membersCollection);
    const counts = await Promise.all(docs.map((w) => members.count({ workspaceId: w._id })));
    return {
      items: docs.map((workspace, i) => ({
        workspace,
        owner: workspace.ownerId ? (owners.get(workspace.ownerId) ?? null) : null,
        members: counts[i]!,
      })),
      total,
    };
  }
}
