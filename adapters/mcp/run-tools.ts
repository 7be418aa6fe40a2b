import { DomainError } from '../../domain/decider.js';
import { grantAllows } from '../../domain/mcp-grants.js';
import type { McpToolInfo } from '../../domain/mcp-server.js';
import { agentToolNames } from '../../domain/mcp-result.js';
import type { Sandbox } from '../sandbox/types.js';
import { McpConnection, type ConnectOptions, type ResolvedConfig } from './connection.js';
import { errorMessage } from '../../domain/error-message.js';

/** A server a job is granted, with its config resolved on the host. */
export interface GrantedServer {
  id: string;
  name: string;
  config: ResolvedConfig;
  allowedTools: string[] | null;
}

/** A tool as `svc mcp tools` lists it (docs/sandbox.md). */
export interface RunToolView {
  server: string;
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
  readOnly: boolean;
}

/** A tool offered to the agent under its `<server>__<tool>` name. */
export interface AgentMcpTool extends RunToolView {
  agentName: string;
}

export interface RunMcpOptions {
  /** A shadow run of a main script: calls of tools not marked read-only are refused. */
  shadow: boolean;
  runAsRoot: boolean;
  connect: Omit<ConnectOptions, 'sandbox'>;
  /** Connection records on the run's timeline (`mcp.call`). */
  timeline(type: string, payload: Record<string, unknown>, ms: number | null): void;
}

export const shadowRefusal = "A shadow run of the main script can't call MCP tools that may have side effects";

/**
 * A run's MCP servers: connected once when the sandbox exists, used by the agent and by `svc mcp` through the broker
 * alike, so the job's grants hold for both. A server that cannot connect is left out and said so on the timeline;
 * the run goes on with the others.
 */
export class RunMcp {
  private readonly connections = new Map<string, { server: GrantedServer; connection: McpConnection }>();
  private ready: Promise<void> = Promise.resolve();
  private readonly refusedCalls: Array<{ server: string; tool: string }> = [];
  private readonly actionCalls: Array<{ server: string; tool: string }> = [];

  constructor(
    readonly servers: GrantedServer[],
    private readonly options: RunMcpOptions,
  ) {}

  /** Calls refused in a shadow run; any makes the shadow run inconclusive. */
  get refused(): ReadonlyArray<{ server: string; tool: string }> {
    return this.refusedCalls;
  }
  /** Calls of tools not marked read-only (actions), for the fallback brief. */
  get actions(): ReadonlyArray<{ server: string; tool: string }> {
    return this.actionCalls;
  }

  /** Connects every server at once; resolves when each has connected or failed. */
  connect(sandbox: Sandbox | null): Promise<void> {
    this.ready = Promise.all(this.servers.map((s) => this.connectOne(s, sandbox))).then(() => undefined);
    return this.ready;
  }

  private async connectOne(server: GrantedServer, sandbox: Sandbox | null): Promise<void> {
    const started = Date.now();
    if (server.config.transport === 'stdio' && this.options.runAsRoot && Object.keys(server.config.env).length > 0) {
      // As root the agent could read the server's environment, which may hold secrets.
      this.options.timeline(
        'mcp.call',
        {
          server: server.name,
          transport: 'stdio',
          ok: false,
          skipped: true,
          error: `${server.name} was not started: this job runs as root, and the server's environment could be read by the agent`,
        },
        null,
      );
      return;
    }
    try {
      const connection = await McpConnection.open(server.config, { ...this.options.connect, sandbox });
      this.connections.set(server.name, { server, connection });
      const granted = connection.tools.filter((t) => grantAllows(server, t.name)).length;
      this.options.timeline(
        'mcp.call',
        {
          server: server.name,
          transport: connection.kind,
          ok: true,
          tools: granted,
          message: `Connected to ${server.name} (${connection.kind}, ${granted} tools)`,
        },
        Date.now() - started,
      );
    } catch (err) {
      this.options.timeline(
        'mcp.call',
        {
          server: server.name,
          transport: server.config.transport,
          ok: false,
          error: `Could not connect to ${server.name}: ${errorMessage(err)}`,
        },
        Date.now() - started,
      );
    }
  }

  private granted(): Array<{ server: GrantedServer; tool: McpToolInfo; connection: McpConnection }> {
    const out = [];
    for (const { server, connection } of this.connections.values()) {
      for (const tool of connection.tools) if (grantAllows(server, tool.name)) out.push({ server, tool, connection });
    }
    return out.sort((a, b) => a.server.name.localeCompare(b.server.name) || a.tool.name.localeCompare(b.tool.name));
  }

  /** The job's tools, sorted by server then name; `server` narrows to one (an unknown one answers 404). */
  async tools(server: string | null): Promise<RunToolView[]> {
    await this.ready;
    if (server !== null && !this.servers.some((s) => s.name === server))
      throw new DomainError('not_found', `MCP server ${server} is not available to this job`);
    return this.granted()
      .filter((g) => server === null || g.server.name === server)
      .map(({ server: s, tool }) => ({
        server: s.name,
        name: tool.name,
        description: tool.description,
        inputSchema: tool.inputSchema,
        readOnly: tool.readOnly,
      }));
  }

  /** The same tools as the agent sees them. */
  agentTools(): AgentMcpTool[] {
    const list = this.granted();
    const names = agentToolNames(list.map((g) => ({ server: g.server.name, tool: g.tool.name })));
    return list.map(({ server: s, tool }, i) => ({
      agentName: names[i]!,
      server: s.name,
      name: tool.name,
      description: tool.description,
      inputSchema: tool.inputSchema,
      readOnly: tool.readOnly,
    }));
  }

  /** A call from the agent or from `svc mcp call`: unknown or ungranted pairs are not found; shadow runs refuse actions. */
  async call(
    server: string,
    tool: string,
    args: unknown,
    signal?: AbortSignal,
  ): Promise<{ output: string; isError: boolean; readOnly: boolean }> {
    await this.ready;
    const found = this.granted().find((g) => g.server.name === server && g.tool.name === tool);
    if (!found) throw new DomainError('not_found', `MCP tool ${tool} on server ${server} not found`);
    if (!found.tool.readOnly) {
      if (this.options.shadow) {
        this.refusedCalls.push({ server, tool });
        throw new DomainError('forbidden', shadowRefusal);
      }
      this.actionCalls.push({ server, tool });
    }
    const result = await found.connection.call(tool, args, signal);
    return { ...result, readOnly: found.tool.readOnly };
  }

  async close(): Promise<void> {
    await Promise.all([...this.connections.values()].map((c) => c.connection.close()));
    this.connections.clear();
  }
}
