import Type, { type Static } from 'typebox';
import { Nullable } from './common.js';

export const Role = Type.Union([Type.Literal('owner'), Type.Literal('admin'), Type.Literal('member')], { $id: 'Role' });

export const MeOutputBody = Type.Object(
  {
    id: Type.String(),
    email: Nullable(Type.String()),
    name: Nullable(Type.String()),
    picture: Nullable(Type.String()),
    isAdmin: Type.Boolean(),
    viaToken: Type.Boolean(),
    workspaceId: Type.String(),
    workspace: Type.Object(
      { id: Type.String(), name: Type.String(), role: Role },
      { additionalProperties: false },
    ),
  },
  { $id: 'MeOutputBody', additionalProperties: false },
);
export type MeOutputBody = Static<typeof MeOutputBody>;
