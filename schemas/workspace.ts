import Type, { type Static } from 'typebox';
import { Envelope, Nullable, listQueryProperties } from './common.js';
import { Role } from './user.js';

const WorkspaceName = Type.String({ minLength: 1, maxLength: 100 });

export const WorkspaceDto = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    role: Role,
    ownerId: Nullable(Type.String()),
    createdAt: Type.Integer(),
    current: Type.Boolean({ description: 'The workspace this session or token acts in' }),
  },
  { $id: 'WorkspaceDto', additionalProperties: false },
);
export type WorkspaceDto = Static<typeof WorkspaceDto>;

export const WorkspaceListOutputBody = Type.Object(
  { items: Type.Array(WorkspaceDto) },
  { $id: 'WorkspaceListOutputBody', additionalProperties: false },
);

export const CurrentWorkspaceDto = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    role: Role,
    ownerId: Nullable(Type.String()),
    createdAt: Type.Integer(),
    members: Type.Integer({ minimum: 0 }),
  },
  { $id: 'CurrentWorkspaceDto', additionalProperties: false },
);

export const CreateWorkspaceInputBody = Type.Object(
  { name: WorkspaceName },
  { $id: 'CreateWorkspaceInputBody', additionalProperties: false },
);
export const RenameWorkspaceInputBody = Type.Object(
  { name: WorkspaceName },
  { $id: 'RenameWorkspaceInputBody', additionalProperties: false },
);
export const TransferWorkspaceInputBody = Type.Object(
  { userId: Type.String({ minLength: 1, maxLength: 100 }) },
  { $id: 'TransferWorkspaceInputBody', additionalProperties: false },
);

export const InviteDto = Type.Object(
  {
    id: Type.String(),
    email: Nullable(Type.String({ description: 'null for a link invite' })),
    role: Type.Union([Type.Literal('admin'), Type.Literal('member')]),
    invitedBy: Nullable(Type.String()),
    createdAt: Type.Integer(),
    expiresAt: Type.Integer(),
    expired: Type.Boolean(),
  },
  { $id: 'InviteDto', additionalProperties: false },
);
export type InviteDto = Static<typeof InviteDto>;
export const InviteListEnvelope = Envelope(InviteDto, 'InviteListEnvelope');
export const InviteListQuery = Type.Object({ ...listQueryProperties }, { additionalProperties: false });

export const CreateInviteInputBody = Type.Object(
  {
    email: Type.Optional(
      Type.String({
        minLength: 3,
        maxLength: 320,
        pattern: '^[^\\s@]+@[^\\s@]+$',
        description: 'Invite this verified address; without it the invite is a link',
      }),
    ),
    role: Type.Union([Type.Literal('admin'), Type.Literal('member')]),
    // The range bounds the number; the decider accepts only 1, 7 or 30 (validation_failed otherwise).
    expiresInDays: Type.Optional(Type.Integer({ minimum: 1, maximum: 30, description: '1, 7 or 30; default 7' })),
  },
  { $id: 'CreateInviteInputBody', additionalProperties: false },
);

export const CreateInviteOutputBody = Type.Object(
  {
    invite: InviteDto,
    url: Type.Optional(Type.String({ description: 'A link invite only: `/invite/<token>`, shown this once' })),
  },
  { $id: 'CreateInviteOutputBody', additionalProperties: false },
);

export const InviteTokenInputBody = Type.Object(
  { token: Type.String({ minLength: 1, maxLength: 200 }) },
  { $id: 'InviteTokenInputBody', additionalProperties: false },
);

export const InviteLookupOutputBody = Type.Object(
  {
    workspaceName: Type.String(),
    role: Type.Union([Type.Literal('admin'), Type.Literal('member')]),
    invitedBy: Nullable(Type.String()),
    expiresAt: Type.Integer(),
    expired: Type.Boolean(),
    alreadyMember: Type.Boolean(),
  },
  { $id: 'InviteLookupOutputBody', additionalProperties: false },
);

export const SwitchedOutputBody = Type.Object(
  { workspaceId: Type.String() },
  { $id: 'SwitchedOutputBody', additionalProperties: false },
);

export const AdminUserDto = Type.Object(
  {
    id: Type.String(),
    email: Nullable(Type.String()),
    name: Nullable(Type.String()),
    picture: Nullable(Type.String()),
    provider: Type.String(),
    isAdmin: Type.Boolean(),
    deactivated: Type.Boolean(),
    createdAt: Type.Integer(),
    lastLoginAt: Nullable(Type.Integer()),
  },
  { $id: 'AdminUserDto', additionalProperties: false },
);
export type AdminUserDto = Static<typeof AdminUserDto>;
export const AdminUserListEnvelope = Envelope(AdminUserDto, 'AdminUserListEnvelope');
export const AdminListQuery = Type.Object({ ...listQueryProperties }, { additionalProperties: false });

export const UpdateAdminUserInputBody = Type.Object(
  { deactivated: Type.Optional(Type.Boolean()), isAdmin: Type.Optional(Type.Boolean()) },
  { $id: 'UpdateAdminUserInputBody', additionalProperties: false, minProperties: 1 },
);

export const AdminWorkspaceDto = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    ownerId: Nullable(Type.String()),
    owner: Nullable(Type.String({ description: "The owner's name or email" })),
    members: Type.Integer({ minimum: 0 }),
    createdAt: Type.Integer(),
  },
  { $id: 'AdminWorkspaceDto', additionalProperties: false },
);
export const AdminWorkspaceListEnvelope = Envelope(AdminWorkspaceDto, 'AdminWorkspaceListEnvelope');
