// Shared helpers for the in-sandbox svc tests: build the binary once per test file, run it, and play the broker.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { arch } from 'node:os';
import { join } from 'node:path';

export const root = new URL('../..', import.meta.url).pathname;
export const svcBin = join(root, 'dist', 'svc', `svc-${arch() === 'arm64' ? 'arm64' : 'amd64'}`);

/** True when the binary is newer than every source it is built from. */
function upToDate(): boolean {
  if (!existsSync(svcBin)) return false;
  const sources = [
    join(root, 'scripts', 'build-svc.sh'),
    ...readdirSync(join(root, 'broker', 'svc')).map((f) => join(root, 'broker', 'svc', f)),
  ];
  const built = statSync(svcBin).mtimeMs;
  return sources.every((f) => statSync(f).mtimeMs <= built);
}

let built = false;
/**
 * Builds dist/svc with scripts/build-svc.sh (once per process) unless `npm run build` already made it from the same
 * sources: rebuilding replaces the binary that sandbox tests running beside these ones bind into their containers
 * (a docker exec failed once with "exec format error" in a full run where this rebuild ran beside it).
 */
export function buildSvc(): void {
  if (built || upToDate()) return;
  execFileSync('sh', [join(root, 'scripts', 'build-svc.sh')], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
  built = true;
}

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: Buffer;
  stderr: Buffer;
  ms: number;
}

export interface RunOptions {
  env?: Record<string, string | undefined>;
  /** Written to stdin, which is then closed. Without it stdin is closed at once, unless `keepStdinOpen`. */
  stdin?: string | Buffer;
  keepStdinOpen?: boolean;
  timeoutMs?: number;
  /** Called with the child right after it starts (to signal it, for example). */
  started?: (pid: number) => void;
  /** Sees stdout as it arrives. */
  onStdout?: (all: string) => void;
}

/** Runs the svc binary with exactly the given environment (plus PATH). */
export function run(args: string[], options: RunOptions = {}): Promise<RunResult> {
  const env: Record<string, string> = { PATH: process.env.PATH ?? '/usr/bin:/bin' };
  for (const [k, v] of Object.entries(options.env ?? {})) if (v !== undefined) env[k] = v;
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(svcBin, args, { env, stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => {
      out.push(c);
      options.onStdout?.(Buffer.concat(out).toString('utf8'));
    });
    child.stderr.on('data', (c: Buffer) => err.push(c));
    child.stdin.on('error', () => {});
    if (options.stdin !== undefined) child.stdin.end(options.stdin);
    else if (!options.keepStdinOpen) child.stdin.end();
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(
        new Error(
          `svc ${args.join(' ')} did not finish within ${options.timeoutMs ?? 30_000} ms; stderr: ${Buffer.concat(err).toString()}`,
        ),
      );
    }, options.timeoutMs ?? 30_000);
    child.on('error', reject);
    if (child.pid && options.started) options.started(child.pid);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      child.stdin.destroy();
      resolve({ code, signal, stdout: Buffer.concat(out), stderr: Buffer.concat(err), ms: Date.now() - started });
    });
  });
}

export interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: Buffer;
  json: unknown;
}

/** `chunks` answers with chunked encoding, one write per chunk (`chunkDelayMs` apart, 5 ms by default). */
export type Reply = {
  status?: number;
  body?: unknown;
  raw?: string | Buffer;
  chunks?: Array<string | Buffer>;
  chunkDelayMs?: number;
  headers?: Record<string, string>;
};

/** A broker stand-in: records every request and answers with `reply` (JSON by default). */
export class FakeBroker {
  readonly seen: Seen[] = [];
  reply: (req: Seen) => Reply | Promise<Reply> = () => ({ body: { ok: true } });
  private server: Server | null = null;

  get last(): Seen {
    const s = this.seen[this.seen.length - 1];
    if (!s) throw new Error('the broker got no request');
    return s;
  }

  /** Listens on 127.0.0.1 (TCP) or on a Unix socket path. Returns the URL or the path. */
  async listen(path?: string): Promise<string> {
    this.server = createServer((req, res) => void this.handle(req, res).catch(() => res.destroy()));
    await new Promise<void>((resolve) =>
      path ? this.server!.listen(path, resolve) : this.server!.listen(0, '127.0.0.1', resolve),
    );
    return path ?? `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    let json: unknown = undefined;
    try {
      json = body.length ? JSON.parse(body.toString('utf8')) : undefined;
    } catch {
      json = undefined;
    }
    const seen: Seen = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body, json };
    this.seen.push(seen);
    const r = await this.reply(seen);
    const status = r.status ?? 200;
    if (r.chunks) {
      res.writeHead(status, { 'content-type': 'application/json', ...(r.headers ?? {}) });
      for (const c of r.chunks) {
        res.write(c);
        if (r.chunkDelayMs !== 0) await new Promise((resolve) => setTimeout(resolve, r.chunkDelayMs ?? 5));
      }
      res.end();
      return;
    }
    const text = r.raw ?? JSON.stringify(r.body ?? {});
    res.writeHead(status, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(text),
      ...(r.headers ?? {}),
    });
    res.end(text);
  }

  async close(): Promise<void> {
    if (!this.server) return;
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server!.close(() => resolve()));
  }
}

/** A TCP port on 127.0.0.1 that was free a moment ago. */
export async function freePort(): Promise<number> {
  const s = createNetServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}
