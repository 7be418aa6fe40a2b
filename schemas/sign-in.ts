import Type, { type Static } from 'typebox';

export const SignInProviderDto = Type.Object(
  {
    id: Type.String({
      description: 'Lowercase letters, digits and single hyphens; names the login and callback routes',
    }),
    name: Type.String(),
    type: Type.Union([Type.Literal('oidc'), Type.Literal('github')]),
    primary: Type.Boolean({ description: 'Shown first on the login page' }),
    icon: Type.Optional(Type.String({ description: 'An icon URL or name set by the operator' })),
  },
  { $id: 'SignInProviderDto', additionalProperties: false },
);
export type SignInProviderDto = Static<typeof SignInProviderDto>;

export const SignInProviderList = Type.Array(SignInProviderDto, { $id: 'SignInProviderList' });

export const SetupOutputBody = Type.Object(
  {
    hasUsers: Type.Boolean({ description: 'Whether anyone has signed in yet; false on a first start' }),
    providers: SignInProviderList,
    workspacesEnabled: Type.Boolean(),
  },
  { $id: 'SetupOutputBody', additionalProperties: false },
);
export type SetupOutputBody = Static<typeof SetupOutputBody>;

export const LoginParams = Type.Object(
  { provider: Type.String({ minLength: 1, maxLength: 64 }) },
  { additionalProperties: false },
);

export const LoginQuery = Type.Object(
  {
    redirect: Type.Optional(
      Type.String({
        maxLength: 2000,
        description: 'A same-origin path to land on after signing in; anything else lands on /',
      }),
    ),
  },
  { additionalProperties: false },
);

export const CallbackQuery = Type.Object(
  {
    code: Type.Optional(Type.String({ maxLength: 4096 })),
    state: Type.Optional(Type.String({ maxLength: 1024 })),
    error: Type.Optional(Type.String({ maxLength: 1024 })),
    error_description: Type.Optional(Type.String({ maxLength: 4096 })),
    iss: Type.Optional(Type.String({ maxLength: 2000 })),
  },
  { additionalProperties: true },
);
