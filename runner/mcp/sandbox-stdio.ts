import { randomBytes } from 'node:crypto';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { JSONRPCMessageSchema, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { Sandbox } from '../sandbox/types.js';

/**
 * An MCP stdio transport whose server runs inside a run's sandbox, as the `mcp` user in /tmp (BEHAVIOUR §9.4).
 *
 * The sandbox port runs a command with a one-shot stdin and streams its output, so the two directions take two
 * paths: messages to the server are files dropped into an inbox under /svc (`putFiles`), which a small POSIX shell
 * loop inside the sandbox feeds to the server's stdin in order; the server's stdout comes back live through the exec's
 * output. Its stderr goes to a file in its private /tmp, and only the last 8 KiB of it comes back, after the exit
 * marker, for the error message. The marker carries a random token, so a server cannot fake its own exit.
 */
const bridge = String.raw`
inbox=$1; marker=$2; shift 2
mkfifo /tmp/.svc-mcp-in || exit 97
(
  n=1; idle=0
  while :; do
    if [ -e "$inbox/$n.ok" ]; then
      cat "$inbox/$n.msg"; rm -f "$inbox/$n.msg" "$inbox/$n.ok"; n=$((n+1)); idle=0; continue
    fi
    [ -e "$inbox/close" ] && exit 0
    idle=$((idle+1))
    if [ $idle -lt 200 ]; then sleep 0.005; else sleep 0.05; fi
  done
) > /tmp/.svc-mcp-in &
feeder=$!
"$@" < /tmp/.svc-mcp-in 2> /tmp/.svc-mcp-err
code=$?
kill $feeder 2>/dev/null
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

  private readonly id = randomBytes(8).toString('hex');
  private readonly marker = `svc-mcp-exit-${randomBytes(12).toString('hex')}`;
  private readonly inbox = `/svc/.mcp/${this.id}`;
  private readonly abort = new AbortController();
  private seq = 0;
  private sending: Promise<void> = Promise.resolve();
  private pending = '';
  private exited: { code: number; stderr: string } | null = null;
  private tail = '';
  private closed = false;

  constructor(private readonly options: SandboxStdioOptions) {}

  /** Why the server stopped: its exit status and the end of its stderr, once it has exited. */
  get exit(): { code: number; stderr: string } | null {
    return this.exited;
  }

  async start(): Promise<void> {
    const { sandbox, command, args, env } = this.options;
    await sandbox.putFiles([{ path: `${this.inbox}/.keep`, content: '', owner: 'mcp', mode: 0o600 }]);
    void sandbox
      .exec({
        cmd: ['sh', '-c', bridge, 'svc-mcp', this.inbox, this.marker, command, ...args],
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
        this.exited = { code: -1, stderr: (err as Error).message };
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
        message = JSONRPCMessageSchema.parse(JSON.parse(line));
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
    const n = ++this.seq;
    const write = () =>
      this.options.sandbox.putFiles([
        { path: `${this.inbox}/${n}.msg`, content: `${JSON.stringify(message)}\n`, owner: 'mcp', mode: 0o600 },
        { path: `${this.inbox}/${n}.ok`, content: '', owner: 'mcp', mode: 0o600 },
      ]);
    // Files are written strictly in order: the loop inside reads message n only after message n-1.
    const next = this.sending.then(write);
    this.sending = next.catch(() => undefined);
    await next;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // The loop stops on the close file and the server sees EOF; the abort is the backstop for a server that lingers.
    await this.options.sandbox.putFiles([{ path: `${this.inbox}/close`, content: '', owner: 'mcp', mode: 0o600 }]).catch(() => undefined);
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
