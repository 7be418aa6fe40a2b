import { createHash } from 'node:crypto';

/**
 * How MCP tool results become text, and how tools are named for the agent (docs/design.md, "MCP"). Pure: the agent,
 * `svc mcp call` and the timeline all read the same text.
 */

/** The parts of a `tools/call` result this service reads (the protocol's CallToolResult, loosely typed). */
export interface ToolResultLike {
  content?: unknown;
  structuredContent?: unknown;
  isError?: unknown;
  /** Old servers answer `{toolResult}` instead of content. */
  toolResult?: unknown;
}

/** Results longer than this are cut with a marker: a tool cannot flood the agent's context or a script's output. */
export const maxResultChars = 100_000;

const base64Bytes = (data: unknown) => {
  if (typeof data !== 'string') return 0;
  const clean = data.replace(/\s/g, '');
  const pad = clean.endsWith('==') ? 2 : clean.endsWith('=') ? 1 : 0;
  return Math.max(0, Math.floor((clean.length * 3) / 4) - pad);
};

function part(p: unknown): string {
  if (!p || typeof p !== 'object') return '';
  const c = p as Record<string, unknown>;
  const mime = typeof c.mimeType === 'string' ? c.mimeType : 'application/octet-stream';
  switch (c.type) {
    case 'text':
      return typeof c.text === 'string' ? c.text : '';
    case 'image':
    case 'audio':
      return `[${c.type} ${mime}, ${base64Bytes(c.data)} bytes]`;
    case 'resource': {
      const r = (c.resource ?? {}) as Record<string, unknown>;
      if (typeof r.text === 'string') return r.text;
      const rmime = typeof r.mimeType === 'string' ? r.mimeType : 'application/octet-stream';
      return `[resource ${String(r.uri ?? '')} ${rmime}, ${base64Bytes(r.blob)} bytes]`;
    }
    case 'resource_link':
      return `[resource ${String(c.uri ?? '')}${typeof c.mimeType === 'string' ? ` ${c.mimeType}` : ''}]`;
    default:
      return `[${String(c.type ?? 'unknown')} content]`;
  }
}

/** Text parts as they are, placeholders for the rest, structured-only results as JSON; cut past `maxResultChars`. */
export function renderToolResult(result: ToolResultLike): { output: string; isError: boolean } {
  const parts = Array.isArray(result.content) ? result.content : [];
  let output: string;
  if (parts.length > 0) output = parts.map(part).join('\n');
  else if (result.structuredContent !== undefined && result.structuredContent !== null)
    output = JSON.stringify(result.structuredContent);
  else if (result.toolResult !== undefined)
    output = typeof result.toolResult === 'string' ? result.toolResult : JSON.stringify(result.toolResult);
  else output = '';
  if (output.length > maxResultChars)
    output = `${output.slice(0, maxResultChars)}\n[… the result had ${output.length} characters; the rest was cut]`;
  return { output, isError: result.isError === true };
}

/**
 * `<server>__<tool>` with characters outside `[A-Za-z0-9_-]` turned into `_`, at most 64 characters. Two tools
 * that end up with the same name get a short hash of their real names, so both stay callable.
 */
export function agentToolNames(pairs: Array<{ server: string; tool: string }>): string[] {
  const plain = pairs.map(({ server, tool }) => `${server}__${tool}`.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64));
  const count = new Map<string, number>();
  for (const n of plain) count.set(n, (count.get(n) ?? 0) + 1);
  return plain.map((n, i) => {
    if (count.get(n) === 1) return n;
    const { server, tool } = pairs[i]!;
    const hash = createHash('sha256').update(`${server}\u0000${tool}`).digest('hex').slice(0, 6);
    return `${n.slice(0, 57)}_${hash}`;
  });
}
