import type { Sandbox, SandboxUser } from '../../../adapters/sandbox/types.js';
import type { ToolSpec } from '../../../adapters/models/types.js';
import { errorMessage } from '../../../domain/error-message.js';

/** What a tool answers the model, plus what the timeline keeps. */
export interface ToolOutcome {
  content: string;
  isError: boolean;
  meta?: Record<string, unknown>;
  /** Set by `finish`: the run ends after this batch. */
  finish?: { status: 'success' | 'failure'; summary: string; outputs: Record<string, unknown> };
}

export interface ToolContext {
  sandbox: Sandbox;
  user: SandboxUser;
  env: Record<string, string>;
  /** The run's cancel/deadline signal; a tool cut off by it says so. */
  signal: AbortSignal;
  /** Why `signal` fired, in words for the model (`stopMessages` of domain/run-stop.ts). */
  stopReason(): string;
  /** Milliseconds left before the run's deadline. */
  remainingMs(): number;
  state: { get(key: string): Promise<string | null>; set(key: string, value: string): Promise<void> };
  remember(note: string): void;
  onOutput(callId: string, text: string): void;
}

export interface Tool {
  spec: ToolSpec;
  readOnly: boolean;
  run(args: Record<string, unknown>, callId: string, ctx: ToolContext): Promise<ToolOutcome>;
}

const headBytes = 8_000;
const tailBytes = 22_000;
const maxFileBytes = 2 * 1024 * 1024;

/** The model sees the start and the end of long output; the whole of it stays in the log file. */
export function clip(output: Buffer, total: number, logPath: string): string {
  if (output.length <= headBytes + tailBytes) return output.toString('utf8');
  const head = output.subarray(0, headBytes).toString('utf8');
  const tail = output.subarray(output.length - tailBytes).toString('utf8');
  return `${head}\n[… ${total - headBytes - tailBytes} bytes left out …]\n${tail}\n[the output had ${total} bytes; all of it is in ${logPath}]`;
}

const safeName = (callId: string) => callId.replace(/[^A-Za-z0-9_.-]/g, '_').slice(0, 100) || 'call';
const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
const error = (content: string): ToolOutcome => ({ content, isError: true });

function resolvePath(path: string): string {
  return path.startsWith('/') ? path : `/workspace/${path}`;
}

const bash: Tool = {
  readOnly: false,
  spec: {
    name: 'bash',
    description:
      'Run a shell command with bash in /workspace. Each call is a fresh shell: files persist, variables and the working directory do not. Output (stdout and stderr) is truncated for you and kept whole in /svc/logs.',
    inputSchema: {
      type: 'object',
      properties: {
        command: { type: 'string' },
        timeout_sec: { type: 'integer', minimum: 1, maximum: 600, description: 'Default 120' },
      },
      required: ['command'],
      additionalProperties: false,
    },
  },
  async run(args, callId, ctx) {
    const command = str(args.command);
    if (!command) return error('bash needs `command`.');
    if (ctx.signal.aborted) return error(`[the command was not started because ${ctx.stopReason()}]`);
    const timeoutSec =
      typeof args.timeout_sec === 'number' && Number.isInteger(args.timeout_sec)
        ? Math.min(600, Math.max(1, args.timeout_sec))
        : 120;
    const logPath = `/svc/logs/${safeName(callId)}.txt`;
    // eval in a subshell: the command's own exit or traps cannot end the wrapper before the log is written.
    const script = `( eval "$SVC_AGENT_COMMAND" ) < /dev/null 2>&1 | tee ${logPath}; exit "\${PIPESTATUS[0]}"`;
    const timeoutMs = Math.min(timeoutSec * 1000, Math.max(1000, ctx.remainingMs()));
    const r = await ctx.sandbox.exec({
      cmd: ['bash', '-lc', script],
      user: ctx.user,
      cwd: '/workspace',
      env: { ...ctx.env, SVC_AGENT_COMMAND: command },
      timeoutMs,
      signal: ctx.signal,
      onOutput: (b) => ctx.onOutput(callId, b.toString('utf8')),
    });
    const meta = { exitCode: r.exitCode, timedOut: r.timedOut, oomKilled: r.oomKilled, bytes: r.bytes, logPath };
    const body = clip(r.output, r.bytes, logPath);
    if (r.cancelled || ctx.signal.aborted)
      return { content: `[the command was cut off because ${ctx.stopReason()}]\n${body}`, isError: true, meta };
    const lines = [`exit code: ${r.exitCode}`];
    if (r.timedOut) lines.push(`timed out after ${timeoutSec}s and was killed`);
    if (r.oomKilled) lines.push('killed: the sandbox ran out of memory');
    return { content: `${lines.join('\n')}\n${body}`, isError: r.exitCode !== 0 || r.timedOut, meta };
  },
};

async function catFile(
  ctx: ToolContext,
  path: string,
): Promise<{ ok: true; data: Buffer } | { ok: false; message: string }> {
  const r = await ctx.sandbox.exec({
    cmd: ['cat', '--', path],
    user: ctx.user,
    env: ctx.env,
    timeoutMs: 30_000,
    signal: ctx.signal,
    maxOutputBytes: maxFileBytes + 1,
  });
  if (r.exitCode !== 0) return { ok: false, message: r.output.toString('utf8').trim() || `cannot read ${path}` };
  if (r.bytes > maxFileBytes) return { ok: false, message: `${path} is larger than 2 MiB` };
  return { ok: true, data: r.output };
}

async function writeFile(ctx: ToolContext, path: string, content: string): Promise<string | null> {
  const r = await ctx.sandbox.exec({
    cmd: ['sh', '-c', 'mkdir -p -- "$(dirname -- "$1")" && cat > "$1"', 'sh', path],
    user: ctx.user,
    env: ctx.env,
    stdin: content,
    timeoutMs: 30_000,
    signal: ctx.signal,
  });
  return r.exitCode === 0 ? null : r.output.toString('utf8').trim() || `cannot write ${path}`;
}

const readFileTool: Tool = {
  readOnly: true,
  spec: {
    name: 'read_file',
    description:
      'Read a text file (relative paths are under /workspace). Lines are numbered. Use offset and limit for long files.',
    inputSchema: {
      type: 'object',
      properties: {
        path: { type: 'string' },
        offset: { type: 'integer', minimum: 1 },
        limit: { type: 'integer', minimum: 1 },
      },
      required: ['path'],
      additionalProperties: false,
    },
  },
  async run(args, _callId, ctx) {
    const raw = str(args.path);
    if (!raw) return error('read_file needs `path`.');
    const path = resolvePath(raw);
    const read = await catFile(ctx, path);
    if (!read.ok) return error(read.message);
    if (read.data.includes(0)) return error(`${path} is a binary file`);
    const lines = read.data.toString('utf8').split('\n');
    if (lines.length > 1 && lines[lines.length - 1] === '') lines.pop();
    const offset = typeof args.offset === 'number' ? Math.max(1, Math.floor(args.offset)) : 1;
    const limit = typeof args.limit === 'number' ? Math.max(1, Math.floor(args.limit)) : 2000;
    if (offset > lines.length)
      return { content: `${path} has ${lines.length} line(s); offset ${offset} is past the end.`, isError: false };
    const last = Math.min(lines.length, offset + limit - 1);
    const body = lines
      .slice(offset - 1, last)
      .map((l, i) => `${String(offset + i).padStart(6)}\t${l.length > 2000 ? `${l.slice(0, 2000)} [line cut]` : l}`);
    const footer = last < lines.length || offset > 1 ? `\n[showing lines ${offset}-${last} of ${lines.length}]` : '';
    return { content: body.join('\n') + footer, isError: false };
  },
};

const writeFileTool: Tool = {
  readOnly: false,
  spec: {
    name: 'write_file',
    description: 'Create or overwrite a file (parent directories are created). Relative paths are under /workspace.',
    inputSchema: {
      type: 'object',
      properties: { path: { type: 'string' }, content: { type: 'string' } },
      required: ['path', 'content'],
      additionalProperties: false,
    },
  },
  async run(args, _callId, ctx) {
    const raw = str(args.path);
    const content = str(args.content);
    if (!raw || content === undefined) return error('write_file needs `path` and `content`.');
    const path = resolvePath(raw);
    const failed = await writeFile(ctx, path, content);
    return failed
      ? error(failed)
      : { content: `Wrote ${Buffer.byteLength(content)} bytes to ${path}.`, isError: false };
  },
};

const editFileTool: Tool = {
  readOnly: false,
  spec: {
    name: 'edit_file',
    description: 'Replace exact text in a file. `old` must occur exactly once unless replace_all is true.',
    inputSchema: {
      type: 'object',
      properties: {
        path: { type: 'string' },
        old: { type: 'string' },
        new: { type: 'string' },
        replace_all: { type: 'boolean' },
      },
      required: ['path', 'old', 'new'],
      additionalProperties: false,
    },
  },
  async run(args, _callId, ctx) {
    const raw = str(args.path);
    const old = str(args.old);
    const replacement = str(args.new);
    if (!raw || old === undefined || replacement === undefined)
      return error('edit_file needs `path`, `old` and `new`.');
    if (old === '') return error('`old` must not be empty.');
    const path = resolvePath(raw);
    const read = await catFile(ctx, path);
    if (!read.ok) return error(read.message);
    const text = read.data.toString('utf8');
    const count = text.split(old).length - 1;
    if (count === 0) return error(`The text to replace was not found in ${path}.`);
    if (count > 1 && args.replace_all !== true)
      return error(`The text occurs ${count} times in ${path}; give more context or set replace_all.`);
    const result = args.replace_all === true ? text.split(old).join(replacement) : text.replace(old, () => replacement);
    if (Buffer.byteLength(result) > maxFileBytes) return error('The result would be larger than 2 MiB.');
    const failed = await writeFile(ctx, path, result);
    return failed
      ? error(failed)
      : { content: `Replaced ${args.replace_all === true ? count : 1} occurrence(s) in ${path}.`, isError: false };
  },
};

const stateGet: Tool = {
  readOnly: true,
  spec: {
    name: 'state_get',
    description: "Read a value of the job's state, kept between runs.",
    inputSchema: {
      type: 'object',
      properties: { key: { type: 'string' } },
      required: ['key'],
      additionalProperties: false,
    },
  },
  async run(args, _callId, ctx) {
    const key = str(args.key);
    if (!key) return error('state_get needs `key`.');
    const value = await ctx.state.get(key);
    return { content: value ?? '(not set)', isError: false };
  },
};

const stateSet: Tool = {
  readOnly: false,
  spec: {
    name: 'state_set',
    description: "Save a string in the job's state for later runs (store JSON text for structure).",
    inputSchema: {
      type: 'object',
      properties: { key: { type: 'string' }, value: { type: 'string' } },
      required: ['key', 'value'],
      additionalProperties: false,
    },
  },
  async run(args, _callId, ctx) {
    const key = str(args.key);
    const value = str(args.value);
    if (!key || value === undefined) return error('state_set needs `key` and a string `value`.');
    try {
      await ctx.state.set(key, value);
      return { content: 'Saved.', isError: false };
    } catch (err) {
      return error(errorMessage(err));
    }
  },
};

const remember: Tool = {
  readOnly: true,
  spec: {
    name: 'remember',
    description:
      'Note something surprising or worth keeping for later runs (an install, a quirk). Reflection reads these notes.',
    inputSchema: {
      type: 'object',
      properties: { note: { type: 'string' } },
      required: ['note'],
      additionalProperties: false,
    },
  },
  async run(args, _callId, ctx) {
    const note = str(args.note);
    if (!note) return error('remember needs `note`.');
    ctx.remember(note);
    return { content: 'Noted.', isError: false };
  },
};

const finish: Tool = {
  readOnly: false,
  spec: {
    name: 'finish',
    description: 'End the run. Call it exactly once, when the work is done or cannot be done.',
    inputSchema: {
      type: 'object',
      properties: {
        status: { type: 'string', enum: ['success', 'failure'] },
        summary: { type: 'string', description: 'Markdown' },
        outputs: { type: 'object' },
      },
      required: ['status', 'summary'],
      additionalProperties: false,
    },
  },
  async run(args) {
    const status = args.status;
    const summary = str(args.summary);
    if ((status !== 'success' && status !== 'failure') || summary === undefined)
      return error('finish needs `status` (success or failure) and `summary`.');
    const outputs =
      args.outputs && typeof args.outputs === 'object' && !Array.isArray(args.outputs)
        ? (args.outputs as Record<string, unknown>)
        : {};
    return { content: 'Finished.', isError: false, finish: { status, summary, outputs } };
  },
};

/** The built-in tools, sorted by name so the tool list the model sees is byte-stable. */
export const builtinTools: Tool[] = [
  bash,
  editFileTool,
  finish,
  readFileTool,
  remember,
  stateGet,
  stateSet,
  writeFileTool,
].sort((a, b) => a.spec.name.localeCompare(b.spec.name));

/** A run's MCP tools as the agent may call them (adapters/mcp/run-tools.ts `RunMcp`). */
export interface McpAgentAccess {
  agentTools(): Array<{
    agentName: string;
    server: string;
    name: string;
    description: string;
    inputSchema: Record<string, unknown>;
    readOnly: boolean;
  }>;
  call(
    server: string,
    tool: string,
    args: unknown,
    signal?: AbortSignal,
  ): Promise<{ output: string; isError: boolean; readOnly: boolean }>;
}

/**
 * MCP tools named `<server>__<tool>`. They go through the same grants as `svc mcp call` (docs/design.md, "MCP"); a
 * refusal (an ungranted tool, a shadow run's action) comes back as an error result the model can read.
 */
export function mcpAgentTools(mcp: McpAgentAccess | null): Tool[] {
  if (!mcp) return [];
  return mcp.agentTools().map((t) => ({
    readOnly: t.readOnly,
    spec: {
      name: t.agentName,
      description: `${t.description || t.name} (MCP server ${t.server})`.slice(0, 4000),
      inputSchema: t.inputSchema,
    },
    async run(args, _callId, ctx) {
      const meta = { server: t.server, tool: t.name, readOnly: t.readOnly };
      try {
        const r = await mcp.call(t.server, t.name, args, ctx.signal);
        return { content: r.output, isError: r.isError, meta };
      } catch (err) {
        return { content: errorMessage(err), isError: true, meta };
      }
    },
  }));
}
