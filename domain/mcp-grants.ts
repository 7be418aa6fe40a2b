import { FieldErrors, type Decider, type DomainEvent } from './decider.js';
import { streamCategory } from './stream.js';

/**
 * Which MCP servers a job may use, and which of their tools (docs/design.md, "MCP"). `allowedTools: null` grants
 * every tool the server has now or adds later; a list grants exactly those names.
 */
export type McpGrant = {
  serverId: string;
  allowedTools: string[] | null;
};

export type JobMcpEvent = DomainEvent<'JobMcpServersSet', { jobId: string; grants: McpGrant[] }>;
export const jobMcpStream = streamCategory<JobMcpEvent>('jobmcp');
export const jobMcpStreamId = jobMcpStream.id;

/**
 * Checks a whole set: no server twice, tool names once each. `knownTools` holds the cached listing of each server
 * that has one; a name not in it is refused (a server never tested has no listing, so any name is taken).
 */
export function checkGrants(grants: McpGrant[], knownTools: Map<string, Set<string> | null>): McpGrant[] {
  const e = new FieldErrors();
  const seen = new Set<string>();
  const out: McpGrant[] = [];
  grants.forEach((g, i) => {
    if (seen.has(g.serverId)) e.add(`[${i}].serverId`, 'duplicate', 'names a server that is already granted');
    seen.add(g.serverId);
    if (g.allowedTools === null) return void out.push({ serverId: g.serverId, allowedTools: null });
    const known = knownTools.get(g.serverId) ?? null;
    const tools: string[] = [];
    g.allowedTools.forEach((t, j) => {
      if (known && !known.has(t))
        e.add(
          `[${i}].allowedTools[${j}]`,
          'unknown_tool',
          `${t} is not a tool of this server (test the server to refresh its tools)`,
        );
      else if (!tools.includes(t)) tools.push(t);
    });
    out.push({ serverId: g.serverId, allowedTools: tools.sort() });
  });
  e.throwIfAny();
  return out;
}

/** A PUT replaces the whole set; the same set again appends nothing. Checks happen before (they need read models). */
export const jobMcpDecider: Decider<
  { type: 'SetJobMcpServers'; jobId: string; grants: McpGrant[] },
  JobMcpEvent,
  McpGrant[]
> = {
  initialState: [],
  evolve: (_s, e) => e.data.grants,
  decide: (command, state) =>
    JSON.stringify(state) === JSON.stringify(command.grants)
      ? []
      : [{ type: 'JobMcpServersSet', data: { jobId: command.jobId, grants: command.grants } }],
};

/** Whether a grant lets a job use a tool. */
export const grantAllows = (grant: Pick<McpGrant, 'allowedTools'>, tool: string) =>
  grant.allowedTools === null || grant.allowedTools.includes(tool);
