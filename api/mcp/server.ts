import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { FastifyBaseLogger } from 'fastify';
import { DomainError, type FieldError } from '../../domain/decider.js';
import { roleRank } from '../../domain/membership.js';
import { accessTable } from '../access.js';
import { ApiError, ValidationFailure } from '../errors.js';
import { ProjectionUnavailable } from '../../projections/engine.js';
import { compileValidator, stripIds } from '../validation.js';
import { tools, type Tool, type ToolContext } from './tools.js';

type Validator = ReturnType<typeof compileValidator>;

/** Each tool's validators are compiled at its first call, like the routes' (docs/design.md, "Validation cost"). */
const prepared = tools.map((t) => ({
  tool: t,
  validate: compileValidator(t.input, 'body') as Validator,
  // The JSON Schema the client sees is the one validation uses, without the `$id`s OpenAPI names schemas by.
  inputSchema: JSON.parse(JSON.stringify(stripIds(t.input))) as { type: 'object'; [k: string]: unknown },
}));
const byName = new Map(prepared.map((p) => [p.tool.name, p]));

/** The tools a principal may call: a tool is open to whoever may call the route it does the work of. */
function allowed(t: Tool, c: ToolContext): boolean {
  const rule = accessTable[t.route];
  if (!rule || rule.session) return false;
  if (rule.access === 'public') return true;
  if (rule.access === 'iadmin') return false;
  return roleRank[c.principal.role] >= roleRank[rule.access];
}

interface ToolErrorBody {
  code: string;
  message: string;
  fields?: FieldError[];
}

function toolError(body: ToolErrorBody): CallToolResult {
  const lines = [`${body.code}: ${body.message}`, ...(body.fields ?? []).map((f) => `- ${f.field}: ${f.message}`)];
  return { isError: true, content: [{ type: 'text', text: lines.join('\n') }], structuredContent: { ...body } };
}

/** A refusal of the app as a tool error, so the model calling the tool can read it and correct itself. */
function errorResult(err: unknown, log: FastifyBaseLogger): CallToolResult {
  if (err instanceof DomainError)
    return toolError({ code: err.code, message: err.message, ...(err.fields ? { fields: err.fields } : {}) });
  if (err instanceof ApiError)
    return toolError({ code: err.code, message: err.message, ...(err.fields ? { fields: err.fields } : {}) });
  // Saved, but not readable yet: the caller must not repeat the change (docs/design.md, "Failure handling").
  if (err instanceof ProjectionUnavailable) return toolError({ code: err.code, message: err.message });
  log.error({ err }, 'MCP tool failed');
  return toolError({ code: 'internal_error', message: 'The tool failed; the server log has the details' });
}

function success(value: unknown): CallToolResult {
  const structured =
    value !== null && typeof value === 'object' && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : { value };
  return { content: [{ type: 'text', text: JSON.stringify(value) }], structuredContent: structured };
}

/**
 * A protocol server for one HTTP request: the stateless transport answers one request and is gone, so the server
 * holds the caller's principal and nothing else (docs/mcp-server.md, "The endpoint"). The SDK's server and its zod
 * schemas are loaded at the first request, not at start (docs/design.md, "The MCP SDK loaded at first use").
 */
export async function mcpServer(c: ToolContext, version: string, log: FastifyBaseLogger): Promise<Server> {
  const [{ Server }, { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError }] = await Promise.all([
    import('@modelcontextprotocol/sdk/server/index.js'),
    import('@modelcontextprotocol/sdk/types.js'),
  ]);
  const server = new Server(
    { name: 'svc', title: 'svc: self-hosted job automation', version },
    {
      capabilities: { tools: {} },
      instructions:
        'Jobs are natural-language instructions run in sandboxes. compile_job proposes a job from a sentence, create_job saves it, run_job starts a run, get_run follows it. search_docs answers questions about the service.',
    },
  );
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: prepared
      .filter((p) => allowed(p.tool, c))
      .map((p) => ({
        name: p.tool.name,
        title: p.tool.annotations.title,
        description: p.tool.description,
        inputSchema: p.inputSchema,
        annotations: p.tool.annotations,
      })),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const entry = byName.get(request.params.name);
    if (!entry) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${request.params.name}`);
    if (!allowed(entry.tool, c))
      return toolError({ code: 'forbidden', message: 'Your role in this workspace cannot use this tool' });
    const args: unknown = request.params.arguments ?? {};
    const checked = entry.validate(args);
    if (checked !== true) {
      const fields =
        typeof checked === 'object' && checked.error instanceof ValidationFailure ? checked.error.summary.fields : [];
      return toolError({
        code: 'validation_failed',
        message: `The arguments have ${fields.length === 1 ? 'an invalid field' : 'invalid fields'}`,
        fields,
      });
    }
    try {
      return success(await entry.tool.run(args, c));
    } catch (err) {
      return errorResult(err, log);
    }
  });
  return server;
}
