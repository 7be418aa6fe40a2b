import { streams } from '../domain/streams.js';
import { stored } from './doc-value.js';
import type { McpGrant } from '../domain/mcp-grants.js';
import type { McpOauthEvent } from '../domain/mcp-oauth.js';
import type { McpServerConfig, McpTestResult, McpToolInfo } from '../domain/mcp-server.js';
import type { Doc, DocValue } from '../store/document-store.js';
import type { RecordedEvent } from '../store/event-store.js';
import type { DocOp, Projector } from './projector.js';

export interface McpServerDoc extends Doc {
  workspaceId: string;
  name: string;
  /** Lowercased name, for sorting and for the case-insensitive lookups of runs and compile. */
  nameLower: string;
  config: McpServerConfig;
  tools: Array<Omit<McpToolInfo, 'inputSchema'> & { inputSchema: { [key: string]: DocValue } }> | null;
  toolsCachedAt: number | null;
  lastTest: Omit<McpTestResult, 'tools'> | null;
  /** The stored OAuth login's public facts (domain/mcp-oauth.ts); its tokens stay sealed in the event stream. */
  login?: { loggedInAt: number; expiresAt: number | null; refreshable: boolean } | null;
  createdAt: number;
  updatedAt: number;
}

export interface JobMcpDoc extends Doc {
  grants: McpGrant[];
}

export const mcpServersCollection = 'mcp_servers';
export const jobMcpCollection = 'job_mcp_servers';

export const mcpServersProjector: Projector = {
  name: 'mcp-servers',
  version: 2,
  collections: [mcpServersCollection, jobMcpCollection],
  indexes: [
    {
      collection: mcpServersCollection,
      keys: [
        ['workspaceId', 1],
        ['nameLower', 1],
      ],
    },
  ],
  categories: [streams.jobMcp, streams.mcpOauth, streams.mcpServer],
  project(recorded: RecordedEvent): DocOp[] {
    const grants = streams.jobMcp.decode(recorded);
    if (grants) {
      const d = grants.event.data;
      return [
        {
          kind: 'update',
          collection: jobMcpCollection,
          filter: { _id: d.jobId },
          update: { $set: { grants: stored(d.grants) } },
          upsert: true,
        },
      ];
    }
    const login = streams.mcpOauth.decode(recorded);
    if (login) return projectLogin(login.key, login.event);
    const decoded = streams.mcpServer.decode(recorded);
    if (!decoded) return [];
    const { key: _id, event: e } = decoded;
    const c = mcpServersCollection;
    switch (e.type) {
      case 'McpServerCreated': {
        const { config, workspaceId, createdAt } = e.data;
        return [
          {
            kind: 'update',
            collection: c,
            filter: { _id },
            update: {
              $set: {
                workspaceId,
                name: config.name,
                nameLower: config.name.toLowerCase(),
                config: stored(config),
                tools: null,
                toolsCachedAt: null,
                lastTest: null,
                createdAt,
                updatedAt: createdAt,
              },
            },
            upsert: true,
          },
        ];
      }
      case 'McpServerChanged':
        return [
          {
            kind: 'update',
            collection: c,
            filter: { _id },
            update: {
              $set: {
                name: e.data.config.name,
                nameLower: e.data.config.name.toLowerCase(),
                config: stored(e.data.config),
                updatedAt: e.data.updatedAt,
              },
            },
          },
        ];
      case 'McpServerTested': {
        const { tools, ...lastTest } = e.data;
        const set: Record<string, DocValue> = { lastTest: stored(lastTest) };
        // A failed test keeps the last good listing: a server that is down for a minute keeps its grants checkable.
        if (tools !== null) Object.assign(set, { tools: stored(tools), toolsCachedAt: e.data.testedAt });
        return [{ kind: 'update', collection: c, filter: { _id }, update: { $set: set } }];
      }
      case 'McpServerDeleted':
        return [{ kind: 'delete', collection: c, filter: { _id } }];
    }
  },
};

/** Login state on the server's document, for its AuthDto; nothing sealed is copied. A deleted server stays deleted. */
function projectLogin(_id: string, e: McpOauthEvent): DocOp[] {
  const set = (update: Record<string, DocValue>): DocOp[] => [
    { kind: 'update', collection: mcpServersCollection, filter: { _id }, update: { $set: update } },
  ];
  switch (e.type) {
    case 'McpOauthLoggedIn':
      return set({
        login: { loggedInAt: e.data.loggedInAt, expiresAt: e.data.expiresAt, refreshable: e.data.refreshable },
      });
    case 'McpOauthTokensRefreshed':
      return set({ 'login.expiresAt': e.data.expiresAt, 'login.refreshable': e.data.refreshable });
    case 'McpOauthLoggedOut':
      return set({ login: null });
    default:
      return [];
  }
}
