import type { LlmWhich, RunSessionHooks } from '../broker/run-session.js';
import { costOf, type ModelClient, type Price } from '../adapters/models/types.js';
import type { TimelineWriter } from '../app/timeline.js';

export interface HookModel {
  client: ModelClient;
  name: string;
  price: Price;
}

/** What a run brings to its broker session (the runner's SessionRequest has these). */
export interface HookSources {
  timeline: Pick<TimelineWriter, 'record'>;
  agentModel: HookModel;
  /** The workspace's utility model, else the run's own. */
  utilityModel: HookModel;
  agentSpend(): number;
  /** The run's MCP servers (adapters/mcp/run-tools.ts); absent when the job has none, so the broker answers 404. */
  mcp?: {
    tools(server: string | null): Promise<unknown[]>;
    call(server: string, tool: string, args: unknown): Promise<{ output: string; isError: boolean; readOnly: boolean }>;
  } | null;
}

function parseJson(text: string): unknown | null {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return null;
  }
}

/**
 * The runner's side of a broker session: timeline entries go to the run's timeline, `svc llm` calls to the run's
 * model or the utility model through the model port, priced with the model's price; `svc mcp` to the run's MCP servers.
 */
export function runSessionHooks(src: HookSources): RunSessionHooks {
  const model = (which: LlmWhich) => (which === 'agent' ? src.agentModel : src.utilityModel);
  const mcp = src.mcp ?? null;
  return {
    timeline(type, payload, ms) {
      src.timeline.record(type, payload, { ms });
    },
    async llm(req) {
      const m = model(req.which);
      const response = await m.client.complete({
        model: m.name,
        system: req.system ? [req.system] : [],
        messages: [{ role: 'user', text: req.prompt }],
        tools: [],
        maxTokens: req.maxTokens,
        effort: 'low',
        signal: req.signal,
        ...(req.schema ? { jsonSchema: { name: 'answer', schema: req.schema } } : {}),
      });
      return {
        text: response.text,
        json: req.schema ? parseJson(response.text) : null,
        usage: { input: response.usage.input, output: response.usage.output },
        cost: costOf(response.usage, m.price),
        model: response.model,
      };
    },
    worstCost: (which, inputTokens, outputTokens) =>
      costOf({ input: inputTokens, output: outputTokens, cacheRead: 0, cacheWrite: 0 }, model(which).price),
    agentSpend: () => src.agentSpend(),
    ...(mcp
      ? {
          mcpTools: (server: string | null) => mcp.tools(server),
          mcpCall: (server: string, tool: string, args: unknown) => mcp.call(server, tool, args),
        }
      : {}),
  };
}
