/**
 * Who may call what: one row per route. `access` is the least role needed (`public` needs no credential);
 * `session` routes refuse API tokens with 403; `token` routes read no cookie. The app refuses to start when a route has no row, and a test
 * walks this table for every role and credential kind.
 */
export type Access = 'public' | 'member' | 'admin' | 'owner' | 'iadmin';

export interface AccessRule {
  access: Access;
  session: boolean;
  /** API tokens only: a session cookie is not read, so a browser's cookie cannot be used from another origin. */
  token?: boolean;
}

const pub: AccessRule = { access: 'public', session: false };
const member: AccessRule = { access: 'member', session: false };
const memberSession: AccessRule = { access: 'member', session: true };
const admin: AccessRule = { access: 'admin', session: false };
const adminSession: AccessRule = { access: 'admin', session: true };
const ownerSession: AccessRule = { access: 'owner', session: true };
const iadmin: AccessRule = { access: 'iadmin', session: true };

export const accessTable: Record<string, AccessRule> = {
  'GET /api/openapi.json': pub,
  'GET /api/openapi.yaml': pub,
  'GET /api/docs': pub,
  'GET /api/docs/:file': pub,
  'GET /api/auth/link/:token': pub,
  'POST /api/auth/logout': pub,
  'GET /api/auth/providers': pub,
  'GET /api/setup': pub,
  'GET /api/auth/login/:provider': pub,
  'GET /api/auth/callback/:provider': pub,
  'GET /': pub,
  'GET /*': pub,

  'GET /api/users/me': member,
  'GET /api/system/info': member,

  'GET /api/jobs': member,
  'POST /api/jobs': member,
  'GET /api/jobs/:id': member,
  // A job's own history is for whoever may read the job; the whole workspace's trail is for admins (docs/api.md).
  'GET /api/jobs/:id/history': member,
  'GET /api/audit': admin,
  'PATCH /api/jobs/:id': member,
  'DELETE /api/jobs/:id': member,
  'POST /api/jobs/:id/runs': member,
  'POST /api/jobs/:id/webhook-token': member,
  'GET /api/runs': member,
  'GET /api/runs/:id': member,
  'POST /api/runs/:id/cancel': member,
  'DELETE /api/runs/:id': admin,
  'POST /api/runs/delete': admin,
  'GET /api/stats/overview': member,
  'POST /api/runs/:id/retry': member,
  'POST /api/runs/:id/learn': member,
  'GET /api/runs/:id/events': member,
  'GET /api/runs/:id/events/:seq': member,
  'GET /api/runs/:id/stream': member,
  'GET /api/runs/:id/artifacts': member,
  'GET /api/runs/:id/artifact': member,
  'GET /api/events': member,
  'GET /api/providers': member,
  'POST /api/providers': admin,
  'GET /api/providers/:id': member,
  'PATCH /api/providers/:id': admin,
  'DELETE /api/providers/:id': admin,
  'POST /api/providers/:id/script': admin,
  'POST /api/providers/:id/sync': admin,
  'POST /api/providers/:id/test': admin,
  'PUT /api/providers/:id/models/enabled': admin,
  'GET /api/models': member,
  'POST /api/models': admin,
  'PATCH /api/models/:id': admin,
  'DELETE /api/models/:id': admin,
  'GET /api/catalog/models': member,
  'GET /api/settings': member,
  'PATCH /api/settings': admin,
  // Admins only: it makes the server post to the configured URL (docs/api.md).
  'POST /api/settings/notifications/test': admin,
  'GET /api/secrets': member,
  'POST /api/secrets': member,
  'PUT /api/secrets/:id': member,
  'DELETE /api/secrets/:id': member,
  'GET /api/jobs/:id/secrets': member,
  'PUT /api/jobs/:id/secrets': member,
  // MCP servers: any member (docs/api.md); stdio servers run only inside sandboxes, HTTP ones
  // through the address guard.
  'GET /api/mcp-servers': member,
  'POST /api/mcp-servers': member,
  'GET /api/mcp-servers/:id': member,
  'PUT /api/mcp-servers/:id': member,
  'DELETE /api/mcp-servers/:id': member,
  'POST /api/mcp-servers/:id/test': member,
  // Starting a login needs a session (the browser that will come back). The callback is authorized by the login's
  // `state`, bound to that session's user, not by an API credential, so it is public here (docs/design.md, MCP OAuth).
  'POST /api/mcp-servers/:id/oauth/login': memberSession,
  'GET /api/mcp-servers/:id/oauth/callback': pub,
  'DELETE /api/mcp-servers/:id/oauth': member,
  'GET /api/jobs/:id/mcp-servers': member,
  'PUT /api/jobs/:id/mcp-servers': member,
  'POST /api/jobs/compile': member,
  'GET /api/jobs/:id/state': member,
  'GET /api/jobs/:id/state/:key': member,
  'PUT /api/jobs/:id/state/:key': member,
  'DELETE /api/jobs/:id/state/:key': member,
  'GET /api/jobs/:id/images': member,
  'GET /api/jobs/:id/images/:imageId': member,
  'POST /api/jobs/:id/images/rebuild': member,
  'GET /api/jobs/:id/playbook': member,
  'PUT /api/jobs/:id/playbook': member,
  'GET /api/jobs/:id/playbook/versions': member,
  'GET /api/jobs/:id/playbook/versions/:version': member,
  'POST /api/jobs/:id/playbook/rollback': member,
  'GET /api/jobs/:id/stats': member,
  // Authenticated by the job's webhook token inside the handler, not by a session or an API token.
  'POST /hooks/:jobId': pub,

  // Members see and delete their own tokens, admins every token of the workspace (checked in the handlers).
  'GET /api/tokens': member,
  'POST /api/tokens': memberSession,
  'DELETE /api/tokens/:id': memberSession,

  // Workspaces and members (docs/api.md, "Workspaces and members"): changes need a session, never a token.
  'GET /api/workspaces': memberSession,
  'POST /api/workspaces': memberSession,
  'POST /api/workspaces/:id/switch': memberSession,
  'POST /api/invites/lookup': memberSession,
  'POST /api/invites/accept': memberSession,
  'GET /api/workspace': member,
  'PATCH /api/workspace': adminSession,
  'DELETE /api/workspace': ownerSession,
  'POST /api/workspace/transfer': ownerSession,
  'POST /api/workspace/leave': memberSession,
  'GET /api/workspace/members': member,
  'PATCH /api/workspace/members/:userId': adminSession,
  'DELETE /api/workspace/members/:userId': adminSession,
  'GET /api/workspace/invites': adminSession,
  'POST /api/workspace/invites': adminSession,
  'DELETE /api/workspace/invites/:id': adminSession,

  'POST /api/admin/sign-in-links': iadmin,
  'GET /api/admin/users': iadmin,
  'PATCH /api/admin/users/:id': iadmin,
  'GET /api/admin/workspaces': iadmin,
  'DELETE /api/admin/workspaces/:id': iadmin,

  // The service's own MCP server (docs/mcp-server.md): API tokens only, each tool then checks the row of the route
  // it does the work of. GET and DELETE answer 405 to anyone (stateless: no stream, no session); the metadata
  // document is what a client reads after a 401.
  'POST /api/mcp': { access: 'member', session: false, token: true },
  'GET /api/mcp': pub,
  'DELETE /api/mcp': pub,
  'GET /.well-known/oauth-protected-resource/api/mcp': pub,
};

export const routeKey = (method: string, url: string) => `${method} ${url}`;
