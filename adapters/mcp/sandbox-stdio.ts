import { randomBytes } from 'node:crypto';
import { PassThrough } from 'node:stream';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { Sandbox } from '../sandbox/types.js';
import { errorMessage } from '../../domain/error-message.js';

/**
 * An MCP stdio transport whose server runs inside a run's sandbox, as the `mcp` user in /tmp (docs/design.md, "MCP").
 *
 * Messages to the server go down the exec's stdin as it runs; its stdout comes back live through the exec's output.
 * Nothing passes through the sandbox's files, so the agent (another exec of the same sandbox) has no way to talk to
 * the server behind the job's grants. Its stderr goes to a file in its private /tmp, and only the last 8 KiB of it
 * comes back, after the exit marker, for the error message. The marker carries a random token, so a server cannot
 * fake its own exit.
 */
const wrapper = String.raw`
marker=$1; shift
"$@" 2> /tmp/.svc-mcp-err
code=$?
printf '\n%s %s\n' "$marker" "$code"
tail -c 8192 /tmp/.svc-mcp-err
`;

export interface SandboxStdioOptions {
  sandbox: Sandbox;
  command: string;
  args: string[];
  env: Record<string, string>;
}

export class SandboxStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  private readonly marker = `svc-mcp-exit-${randomBytes(12).toString('hex')}`;
  private readonly abort = new AbortController();
  private readonly input = new PassThrough();
  private pending = '';
  private exited: { code: number; stderr: string } | null = null;
  private tail = '';
  private closed = false;
  /** The SDK's message schema, loaded when the transport starts (docs/design.md, "The MCP SDK loaded at first use"). */
  private schema: { parse(value: unknown): JSONRPCMessage } | null = null;

  constructor(private readonly options: SandboxStdioOptions) {}

  /** Why the server stopped: its exit status and the end of its stderr, once it has exited. */
  get exit(): { code: number; stderr: string } | null {
    return this.exited;
  }

  async start(): Promise<void> {
    this.schema = (await import('@modelcontextprotocol/sdk/types.js')).JSONRPCMessageSchema;
    const { sandbox, command, args, env } = this.options;
    void sandbox
      .exec({
        cmd: ['sh', '-c', wrapper, 'svc-mcp', this.marker, command, ...args],
        stdin: this.input,
        user: 'mcp',
        cwd: '/tmp',
        env,
        signal: this.abort.signal,
        maxOutputBytes: 64 * 1024,
        onOutput: (chunk) => this.read(chunk.toString('utf8')),
      })
      .then((r) => {
        this.exited = { code: this.exited?.code ?? r.exitCode, stderr: this.tail.slice(-8192).trim() };
      })
      .catch((err: unknown) => {
        this.exited = { code: -1, stderr: errorMessage(err) };
      })
      .finally(() => this.finish());
  }

  private read(text: string): void {
    if (this.exited) {
      this.tail += text;
      return;
    }
    this.pending += text;
    let cut: number;
    while ((cut = this.pending.indexOf('\n')) >= 0) {
      const line = this.pending.slice(0, cut).replace(/\r$/, '');
      this.pending = this.pending.slice(cut + 1);
      if (line.startsWith(this.marker)) {
        this.exited = { code: Number(line.slice(this.marker.length).trim()), stderr: '' };
        this.tail = this.pending;
        this.pending = '';
        return;
      }
      if (line.trim() === '') continue;
      let message: JSONRPCMessage;
      try {
        message = this.schema!.parse(JSON.parse(line));
      } catch {
        // Servers that log to stdout break the protocol; the line is skipped, not fatal.
        this.onerror?.(new Error(`the server wrote a line that is not a JSON-RPC message: ${line.slice(0, 200)}`));
        continue;
      }
      this.onmessage?.(message);
    }
  }

  async send(message: JSONRPCMessage): Promise<void> {
    if (this.closed) throw new Error('the stdio server is closed');
    this.input.write(`${JSON.stringify(message)}\n`);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // The server sees EOF; the abort is the backstop for a server that lingers.
    this.input.end();
    const t = setTimeout(() => this.abort.abort(), 2000);
    t.unref();
    if (this.exited) this.abort.abort();
    this.finish();
  }

  private finished = false;
  private finish(): void {
    if (this.finished) return;
    this.finished = true;
    this.closed = true;
    this.onclose?.();
  }
}
