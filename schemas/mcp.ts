import Type, { type Static } from 'typebox';
import { Envelope, Nullable } from './common.js';

/** MCP servers, their tools, test answers, login status and job grants (docs/design.md, "MCP"). */

const Transport = Type.Union([Type.Literal('stdio'), Type.Literal('http')]);
const StringMap = (description: string) =>
  Type.Record(Type.String({ maxLength: 200 }), Type.String({ maxLength: 8192 }), { description, maxProperties: 100 });

export const OauthConfig = Type.Object(
  {
    clientId: Type.Optional(Type.String({ maxLength: 500 })),
    clientSecret: Type.Optional(Type.String({ maxLength: 2000, description: 'May be `{{secret:NAME}}`' })),
    scopes: Type.Optional(Type.Array(Type.String({ maxLength: 200 }), { maxItems: 50 })),
  },
  { $id: 'OauthConfig', additionalProperties: false },
);

/** Create and replace body. Fields of the other transport are accepted and dropped. */
export const McpServerInputBody = Type.Object(
  {
    name: Type.String({
      minLength: 1,
      maxLength: 50,
      description: 'Letters, digits, `-` and `_`; unique in the workspace (case-insensitive)',
    }),
    description: Type.Optional(Type.String({ maxLength: 2000 })),
    transport: Transport,
    command: Type.Optional(
      Type.String({
        maxLength: 500,
        description: 'stdio: the program, started inside the run sandbox as the `mcp` user in /tmp',
      }),
    ),
    args: Type.Optional(Type.Array(Type.String({ maxLength: 2000 }), { maxItems: 100 })),
    env: Type.Optional(StringMap('stdio: environment; values may reference `{{secret:NAME}}`')),
    url: Type.Optional(
      Type.String({
        maxLength: 2000,
        description: 'http: the Streamable HTTP (or legacy SSE) endpoint, reached from the host',
      }),
    ),
    headers: Type.Optional(StringMap('http: request headers; values may reference `{{secret:NAME}}`')),
    oauth: Type.Optional(Nullable(OauthConfig)),
    enabled: Type.Optional(Type.Boolean({ default: true })),
  },
  { $id: 'McpServerInputBody', additionalProperties: false },
);
export type McpServerInputBody = Static<typeof McpServerInputBody>;

export const McpToolDto = Type.Object(
  {
    name: Type.String(),
    description: Type.String(),
    inputSchema: Type.Record(Type.String(), Type.Unknown()),
    readOnly: Type.Boolean({ description: "The server's readOnlyHint" }),
    destructive: Type.Boolean({ description: "The server's destructiveHint; true when absent" }),
  },
  { $id: 'McpToolDto', additionalProperties: false },
);

export const AuthDto = Type.Object(
  {
    status: Type.Union([
      Type.Literal('unsupported'),
      Type.Literal('unknown'),
      Type.Literal('bearer_token'),
      Type.Literal('not_logged_in'),
      Type.Literal('oauth'),
    ]),
    loggedInAt: Nullable(Type.Integer()),
    expiresAt: Nullable(Type.Integer()),
    refreshable: Type.Boolean(),
    callbackUrl: Type.Optional(Type.String()),
  },
  { $id: 'AuthDto', additionalProperties: false },
);
export type AuthDto = Static<typeof AuthDto>;

export const McpServerDto = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    description: Type.String(),
    transport: Transport,
    command: Nullable(Type.String()),
    args: Type.Array(Type.String()),
    env: Type.Record(Type.String(), Type.String()),
    url: Nullable(Type.String()),
    headers: Type.Record(Type.String(), Type.String()),
    oauth: Nullable(OauthConfig),
    enabled: Type.Boolean(),
    tools: Nullable(Type.Array(McpToolDto, { description: 'Cached by the last successful test; null before one' })),
    toolsCachedAt: Nullable(Type.Integer()),
    auth: AuthDto,
    createdAt: Type.Integer(),
    updatedAt: Type.Integer(),
  },
  { $id: 'McpServerDto', additionalProperties: false },
);
export type McpServerDto = Static<typeof McpServerDto>;
export const McpServerListEnvelope = Envelope(McpServerDto, 'McpServerListEnvelope');
export type McpServerListEnvelope = Static<typeof McpServerListEnvelope>;

export const McpTestOutputBody = Type.Object(
  {
    ok: Type.Boolean(),
    latencyMs: Type.Integer(),
    error: Nullable(Type.String()),
    tools: Type.Array(McpToolDto),
    auth: AuthDto,
  },
  { $id: 'McpTestOutputBody', additionalProperties: false },
);

/** A job's grant of one MCP server; `serverName` is answered and ignored on PUT. */
export const JobServer = Type.Object(
  {
    serverId: Type.String({ minLength: 1, maxLength: 100 }),
    allowedTools: Nullable(
      Type.Array(Type.String({ minLength: 1, maxLength: 200 }), {
        maxItems: 500,
        description: 'null exposes every tool, including tools added later',
      }),
    ),
    serverName: Type.Optional(Type.String({ maxLength: 200, description: 'Read-only' })),
  },
  { $id: 'JobServer', additionalProperties: false },
);
export type JobServer = Static<typeof JobServer>;

/** The answer of `POST /api/mcp-servers/{id}/oauth/login`. */
export const LoginOutputBody = Type.Object(
  { authorizationUrl: Type.String({ description: 'Where to send the browser' }) },
  { $id: 'LoginOutputBody', additionalProperties: false },
);

/**
 * The authorization server's redirect to `GET /api/mcp-servers/{id}/oauth/callback` (RFC 6749 §4.1.2). The one
 * schema that lets unknown fields through: servers add their own response parameters (`iss`, `session_state`, ...)
 * and RFC 6749 §3.1 says a client must ignore the ones it does not know, so refusing them would break logins.
 */
export const OauthCallbackQuery = Type.Object(
  {
    code: Type.Optional(Type.String({ maxLength: 4096 })),
    state: Type.Optional(Type.String({ maxLength: 512 })),
    error: Type.Optional(Type.String({ maxLength: 200 })),
    error_description: Type.Optional(Type.String({ maxLength: 2000 })),
  },
  { $id: 'OauthCallbackQuery', additionalProperties: true },
);
