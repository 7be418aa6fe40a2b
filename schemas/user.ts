import Type, { type Static } from 'typebox';
import { Envelope, Nullable, listQueryProperties } from './common.js';

export const Role = Type.Union([Type.Literal('owner'), Type.Literal('admin'), Type.Literal('member')], { $id: 'Role' });

export const MeOutputBody = Type.Object(
  {
    id: Type.String(),
    email: Nullable(Type.String()),
    name: Nullable(Type.String()),
    picture: Nullable(Type.String()),
    isAdmin: Type.Boolean({ description: 'An instance admin: owner rights in every workspace and the Admin area' }),
    loginProvider: Type.Optional(
      Type.String({ description: 'The provider of this session (`link` for sign-in links)' }),
    ),
    viaToken: Type.Boolean(),
    workspaceId: Type.String(),
    workspace: Type.Object(
      {
        id: Type.String(),
        name: Type.String(),
        role: Role,
        usageUnit: Type.Union([Type.Literal('price'), Type.Literal('tokens')]),
      },
      { additionalProperties: false },
    ),
    workspacesEnabled: Type.Boolean(),
  },
  { $id: 'MeOutputBody', additionalProperties: false },
);
export type MeOutputBody = Static<typeof MeOutputBody>;

export const MemberDto = Type.Object(
  {
    userId: Type.String(),
    name: Nullable(Type.String()),
    email: Nullable(Type.String()),
    picture: Nullable(Type.String()),
    role: Role,
    joinedAt: Type.Integer(),
    lastLoginAt: Nullable(Type.Integer()),
    deactivated: Type.Boolean({ description: 'An instance admin deactivated the user' }),
  },
  { $id: 'MemberDto', additionalProperties: false },
);
export type MemberDto = Static<typeof MemberDto>;

export const MemberListEnvelope = Envelope(MemberDto, 'MemberListEnvelope');

export const MemberListQuery = Type.Object({ ...listQueryProperties }, { additionalProperties: false });

export const UpdateMemberInputBody = Type.Object(
  { role: Type.Union([Type.Literal('admin'), Type.Literal('member')]) },
  { $id: 'UpdateMemberInputBody', additionalProperties: false },
);

export const CreateSignInLinkInputBody = Type.Object(
  {
    email: Type.String({ minLength: 3, maxLength: 320, pattern: '^[^\\s@]+@[^\\s@]+$' }),
    admin: Type.Optional(Type.Boolean({ description: 'Make the user an instance admin (default false)' })),
  },
  { $id: 'CreateSignInLinkInputBody', additionalProperties: false },
);

export const SignInLinkOutputBody = Type.Object(
  { url: Type.String({ description: 'Single use, valid one hour' }) },
  { $id: 'SignInLinkOutputBody', additionalProperties: false },
);
