import { DomainError, FieldErrors, type Decider, type DomainEvent } from './decider.js';
import { envNamePattern, reservedEnvName, secretNamePattern } from './secret.js';
import { streamCategory, workspaceScopedCategory } from './stream.js';

/**
 * An MCP server of a workspace (docs/design.md, "MCP"). Only the chosen transport's fields are kept: a stdio server has
 * a command, arguments and environment; an HTTP server a URL, headers and an optional OAuth client. Values may
 * reference `{{secret:NAME}}`; the reference is stored, the value is resolved on the host when a connection opens.
 */
export type McpTransport = 'stdio' | 'http';

export type McpOauthConfig = {
  clientId?: string;
  clientSecret?: string;
  scopes?: string[];
};

export type McpServerConfig = {
  name: string;
  description: string;
  transport: McpTransport;
  command: string | null;
  args: string[];
  env: Record<string, string>;
  url: string | null;
  headers: Record<string, string>;
  oauth: McpOauthConfig | null;
  enabled: boolean;
};

/** What a create or a replace carries before it is checked; transport fields of the other kind are dropped. */
export interface McpServerInput {
  name: string;
  description?: string;
  transport: McpTransport;
  command?: string;
  args?: string[];
  env?: Record<string, string>;
  url?: string;
  headers?: Record<string, string>;
  oauth?: McpOauthConfig | null;
  enabled?: boolean;
}

/** A tool as the test route caches it; `readOnly` and `destructive` are the server's hints (destructive by default). */
export type McpToolInfo = {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
  readOnly: boolean;
  destructive: boolean;
};

export interface McpTestResult {
  ok: boolean;
  latencyMs: number;
  error: string | null;
  /** Null when the test failed: the last good listing stays cached. */
  tools: McpToolInfo[] | null;
  /** What the test learned about logging in: `bearer_token`, `not_logged_in` (it met a 401), `unsupported`. */
  authStatus: 'unsupported' | 'bearer_token' | 'not_logged_in' | 'unknown';
  testedAt: number;
}

export type McpServerEvent =
  | DomainEvent<
      'McpServerCreated',
      { serverId: string; workspaceId: string; config: McpServerConfig; createdAt: number }
    >
  | DomainEvent<'McpServerChanged', { config: McpServerConfig; updatedAt: number }>
  | DomainEvent<'McpServerTested', McpTestResult>
  | DomainEvent<'McpServerDeleted', { deletedAt: number }>;

export type McpServerState =
  | { status: 'none' }
  | { status: 'active' | 'deleted'; workspaceId: string; config: McpServerConfig; tools: McpToolInfo[] | null };

export type McpServerCommand =
  | { type: 'CreateMcpServer'; serverId: string; workspaceId: string; config: McpServerConfig; now: number }
  | { type: 'ChangeMcpServer'; config: McpServerConfig; now: number }
  | { type: 'RecordMcpTest'; result: McpTestResult }
  | { type: 'DeleteMcpServer'; now: number };

export const mcpServerStream = streamCategory<McpServerEvent>('mcpserver');
export const mcpServerStreamId = mcpServerStream.id;
/** Names are unique per workspace regardless of case: `GitHub` and `github` would make the same tool names. */
export const mcpNameStream = workspaceScopedCategory<McpNameEvent>('mcpname');
export const mcpNameStreamId = (workspaceId: string, name: string) =>
  mcpNameStream.id([workspaceId, name.toLowerCase()]);

export const mcpNamePattern = /^[A-Za-z0-9_-]{1,50}$/;
export const secretReference = /\{\{secret:([^}]*)\}\}/g;
const headerName = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,200}$/;
const limits = {
  description: 2000,
  command: 500,
  args: 100,
  arg: 2000,
  env: 100,
  value: 8192,
  url: 2000,
  headers: 50,
  clientId: 500,
  clientSecret: 2000,
  scopes: 50,
  scope: 200,
};

/** Secret names a text references; a malformed reference is reported by `checkReferences`. */
export function referencedSecrets(text: string): string[] {
  return [...text.matchAll(secretReference)].map((m) => m[1]!);
}

function checkReferences(errors: FieldErrors, field: string, text: string): void {
  for (const name of referencedSecrets(text)) {
    if (!secretNamePattern.test(name))
      errors.add(field, 'invalid', `references {{secret:${name}}}, which is not a valid secret name`);
  }
}

// eslint-disable-next-line no-control-regex -- finding control characters is the point
const hasControl = (s: string) => /[\u0000-\u001f\u007f]/.test(s);

/**
 * Checks a create or replace and answers the config to store, naming every failing field. Fields of the other
 * transport are dropped rather than refused: a form that switches transport may still send them.
 */
export function checkServerInput(input: McpServerInput): McpServerConfig {
  const e = new FieldErrors();
  const name = input.name.trim();
  if (!mcpNamePattern.test(name)) e.add('name', 'invalid', 'must be 1 to 50 letters, digits, - or _');
  const description = (input.description ?? '').trim();
  if (description.length > limits.description)
    e.add('description', 'too_long', `must be at most ${limits.description} characters`);
  const config: McpServerConfig = {
    name,
    description,
    transport: input.transport,
    command: null,
    args: [],
    env: {},
    url: null,
    headers: {},
    oauth: null,
    enabled: input.enabled ?? true,
  };

  if (input.transport === 'stdio') {
    const command = (input.command ?? '').trim();
    if (command === '') e.add('command', 'required', 'is required for a stdio server');
    else if (command.length > limits.command || hasControl(command))
      e.add('command', 'invalid', `must be one line of at most ${limits.command} characters`);
    const args = input.args ?? [];
    if (args.length > limits.args) e.add('args', 'too_many', `may hold at most ${limits.args} arguments`);
    args.forEach((a, i) => {
      if (a.length > limits.arg || a.includes('\u0000'))
        e.add(`args[${i}]`, 'invalid', `must be at most ${limits.arg} characters without NUL`);
    });
    const env = input.env ?? {};
    if (Object.keys(env).length > limits.env) e.add('env', 'too_many', `may hold at most ${limits.env} variables`);
    for (const [k, v] of Object.entries(env)) {
      if (!envNamePattern.test(k) || k.length > 100)
        e.add(`env.${k}`, 'invalid', 'must be a variable name (letters, digits, _; not starting with a digit)');
      else if (reservedEnvName.test(k)) e.add(`env.${k}`, 'reserved', 'is set by the service and cannot be replaced');
      if (v.length > limits.value || v.includes('\u0000'))
        e.add(`env.${k}`, 'invalid', `must be at most ${limits.value} characters without NUL`);
      checkReferences(e, `env.${k}`, v);
    }
    Object.assign(config, { command, args, env });
  } else {
    const raw = (input.url ?? '').trim();
    let url: URL | null = null;
    try {
      url = raw ? new URL(raw) : null;
    } catch {
      url = null;
    }
    if (raw === '') e.add('url', 'required', 'is required for an HTTP server');
    else if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || raw.length > limits.url)
      e.add('url', 'invalid', `must be an http or https URL of at most ${limits.url} characters`);
    else if (url.username || url.password)
      e.add('url', 'invalid', 'must not carry a user name or password; use headers or a secret');
    const headers = input.headers ?? {};
    if (Object.keys(headers).length > limits.headers)
      e.add('headers', 'too_many', `may hold at most ${limits.headers} headers`);
    for (const [k, v] of Object.entries(headers)) {
      if (!headerName.test(k)) e.add(`headers.${k}`, 'invalid', 'is not a valid header name');
      if (v.length > limits.value || hasControl(v))
        e.add(`headers.${k}`, 'invalid', `must be one line of at most ${limits.value} characters`);
      checkReferences(e, `headers.${k}`, v);
    }
    const oauth = input.oauth ?? null;
    if (oauth) {
      if (oauth.clientId !== undefined && (oauth.clientId.length > limits.clientId || hasControl(oauth.clientId)))
        e.add('oauth.clientId', 'invalid', `must be one line of at most ${limits.clientId} characters`);
      if (oauth.clientSecret !== undefined) {
        if (oauth.clientSecret.length > limits.clientSecret || hasControl(oauth.clientSecret))
          e.add('oauth.clientSecret', 'invalid', `must be one line of at most ${limits.clientSecret} characters`);
        checkReferences(e, 'oauth.clientSecret', oauth.clientSecret);
      }
      const scopes = oauth.scopes ?? [];
      if (scopes.length > limits.scopes) e.add('oauth.scopes', 'too_many', `may hold at most ${limits.scopes} scopes`);
      scopes.forEach((s, i) => {
        if (s === '' || /\s/.test(s) || s.length > limits.scope)
          e.add(`oauth.scopes[${i}]`, 'invalid', 'must be one scope without spaces, at most 200 characters');
      });
    }
    Object.assign(config, { url: url ? raw : null, headers, oauth });
  }
  e.throwIfAny();
  return config;
}

/** Every secret name a config references, for the existence check on write and the resolution on connect. */
export function configSecrets(config: McpServerConfig): string[] {
  const texts = [...Object.values(config.env), ...Object.values(config.headers), config.oauth?.clientSecret ?? ''];
  return [...new Set(texts.flatMap(referencedSecrets))];
}

export const mcpServerDecider: Decider<McpServerCommand, McpServerEvent, McpServerState> = {
  initialState: { status: 'none' },
  evolve(state, event) {
    switch (event.type) {
      case 'McpServerCreated':
        return { status: 'active', workspaceId: event.data.workspaceId, config: event.data.config, tools: null };
      case 'McpServerChanged':
        return state.status === 'none' ? state : { ...state, config: event.data.config };
      case 'McpServerTested':
        return state.status === 'none' || event.data.tools === null ? state : { ...state, tools: event.data.tools };
      case 'McpServerDeleted':
        return state.status === 'none' ? state : { ...state, status: 'deleted' };
    }
  },
  decide(command, state) {
    if (command.type === 'CreateMcpServer') {
      if (state.status !== 'none') throw new DomainError('conflict', 'The MCP server already exists');
      return [
        {
          type: 'McpServerCreated',
          data: {
            serverId: command.serverId,
            workspaceId: command.workspaceId,
            config: command.config,
            createdAt: command.now,
          },
        },
      ];
    }
    if (state.status !== 'active') throw DomainError.notFound('MCP server');
    switch (command.type) {
      case 'ChangeMcpServer':
        return JSON.stringify(state.config) === JSON.stringify(command.config)
          ? []
          : [{ type: 'McpServerChanged', data: { config: command.config, updatedAt: command.now } }];
      case 'RecordMcpTest':
        return [{ type: 'McpServerTested', data: command.result }];
      case 'DeleteMcpServer':
        return [{ type: 'McpServerDeleted', data: { deletedAt: command.now } }];
    }
  },
};

/** Name claims, as for secrets (domain/secret.ts): the first claim wins; a stale claim may be taken over. */
export type McpNameEvent =
  | DomainEvent<'McpServerNameClaimed', { serverId: string; claimedAt: number }>
  | DomainEvent<'McpServerNameReleased', { serverId: string }>;
export type McpNameCommand =
  | { type: 'Claim'; serverId: string; name: string; now: number; takeOver?: string }
  | { type: 'Release'; serverId: string };
export const mcpNameDecider: Decider<McpNameCommand, McpNameEvent, { owner: string | null; claimedAt: number }> = {
  initialState: { owner: null, claimedAt: 0 },
  evolve: (_s, e) =>
    e.type === 'McpServerNameClaimed'
      ? { owner: e.data.serverId, claimedAt: e.data.claimedAt }
      : { owner: null, claimedAt: 0 },
  decide(command, state) {
    if (command.type === 'Claim') {
      if (state.owner === command.serverId) return [];
      if (state.owner && state.owner !== command.takeOver)
        throw DomainError.validation([
          {
            field: 'name',
            code: 'already_in_use',
            message: `${command.name} is already the name of another MCP server`,
          },
        ]);
      return [{ type: 'McpServerNameClaimed', data: { serverId: command.serverId, claimedAt: command.now } }];
    }
    return state.owner === command.serverId
      ? [{ type: 'McpServerNameReleased', data: { serverId: command.serverId } }]
      : [];
  },
};
