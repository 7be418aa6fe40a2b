import type { StreamCategory } from './stream.js';
import { streams } from './streams.js';

/**
 * What a stream category's streams belong to, for erasing a deleted workspace (docs/design.md, "Workspace erasure"):
 * - `instance`: not one workspace's (users, identities, sessions, sign-in links, erasure records); never erased.
 * - `workspace`: the workspace's own stream, erased last (its `WorkspaceDeleted` drives the erasure).
 * - `job`, `run`, `mcpServer`: keyed by a job, run or MCP server id, with sibling categories under the same key.
 * - `record`: a record of the workspace standing alone (a secret, a token, a member, a name claim).
 *
 * A `Record` over the registry, so a new category does not compile until someone says whose its streams are.
 */
export type StreamScope = 'instance' | 'workspace' | 'job' | 'run' | 'mcpServer' | 'record';

export const streamScopes: Record<keyof typeof streams, StreamScope> = {
  apiToken: 'record',
  identity: 'instance',
  invite: 'record',
  job: 'job',
  jobImages: 'job',
  jobMcp: 'job',
  jobRuns: 'job',
  jobSecrets: 'job',
  jobState: 'job',
  mcpName: 'record',
  mcpOauth: 'mcpServer',
  mcpServer: 'mcpServer',
  membership: 'record',
  notification: 'run',
  playbook: 'job',
  playbookStats: 'job',
  provider: 'record',
  run: 'run',
  schedule: 'job',
  secret: 'record',
  secretName: 'record',
  session: 'instance',
  settings: 'record',
  signInLink: 'instance',
  user: 'instance',
  workspace: 'workspace',
  workspaceErasure: 'instance',
};

const entries = Object.entries(streams) as Array<[keyof typeof streams, StreamCategory<never, unknown>]>;

/** The category and scope of a stream id, or null for an id no category claims. */
export function scopeOf(streamId: string): { name: keyof typeof streams; scope: StreamScope } | null {
  for (const [name, category] of entries)
    if (category.keyOf(streamId) !== null) return { name, scope: streamScopes[name] };
  return null;
}

/**
 * The streams a workspace's stream brings with it when erased: itself and, for a job, run or MCP server stream, the
 * same key in every category of that scope (a job's playbook, schedule, state; a run's notifications), since those
 * may hold events that do not name the workspace. Empty for an instance stream or an id no category claims; the
 * workspace's own stream is answered alone, for the caller to erase last.
 */
export function erasedWith(streamId: string): { scope: StreamScope; key: string | null; ids: string[] } {
  const found = scopeOf(streamId);
  if (!found || found.scope === 'instance') return { scope: found?.scope ?? 'instance', key: null, ids: [] };
  const { name, scope } = found;
  if (scope !== 'job' && scope !== 'run' && scope !== 'mcpServer') return { scope, key: null, ids: [streamId] };
  const key = streams[name].keyOf(streamId) as string;
  const ids = entries
    .filter(([other]) => streamScopes[other] === scope)
    .map(([, category]) => (category as StreamCategory<never>).id(key));
  return { scope, key, ids };
}
