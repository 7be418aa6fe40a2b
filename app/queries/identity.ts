import { DomainError } from '../../domain/decider.js';
import {
  apiTokensCollection,
  memberId,
  membersCollection,
  usersCollection,
  workspacesCollection,
  type ApiTokenDoc,
  type MemberDoc,
  type UserDoc,
  type WorkspaceDoc,
} from '../../projections/identity.js';
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
}
