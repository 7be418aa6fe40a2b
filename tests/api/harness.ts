import { after, before } from 'node:test';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../app/config.js';
import { createLogger, startServer, type RunningServer } from '../../server/start.js';
import { waitFor } from '../wait.js';
import { Jobs } from '../../app/jobs.js';
import { systemContext, type CommandContext } from '../../app/commands.js';
import { errorMessage } from '../../domain/error-message.js';
import { runtimeDir } from '../../server/runner-role.js';

/** A real server on a random loopback port with its own data directory, driven over HTTP. */
export interface TestServer {
  url: string;
  dataDir: string;
  server: RunningServer;
  stop(): Promise<void>;
}

/** A server on a fresh data directory, removed when it stops; or on `keptDir`, which outlives it (restart tests). */
export async function startTestServer(env: Record<string, string> = {}, keptDir?: string): Promise<TestServer> {
  const dataDir = keptDir ?? mkdtempSync(join(tmpdir(), 'svc-test-'));
  const config = loadConfig({ host: '127.0.0.1', port: 0, dataDir }, { ...env, NODE_ENV: 'test' });
  const server = await startServer(config, createLogger(process.env.SVC_TEST_LOG ?? 'silent'), () => {});
  return {
    url: server.url,
    dataDir,
    server,
    async stop() {
      await server.close();
      rmSync(runtimeDir(dataDir), { recursive: true, force: true });
      if (!keptDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export interface Answer<T = unknown> {
  status: number;
  body: T;
  headers: Headers;
  text: string;
}

export type Credential = { cookie: string } | { token: string } | null;

export class Client {
  constructor(
    readonly base: string,
    readonly credential: Credential = null,
  ) {}

  async request<T = any>(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<Answer<T>> {
    const h: Record<string, string> = { ...headers };
    if (this.credential && 'cookie' in this.credential) h.cookie = this.credential.cookie;
    if (this.credential && 'token' in this.credential) h.authorization = `Bearer ${this.credential.token}`;
    let payload: string | undefined;
    if (body !== undefined) {
      payload = typeof body === 'string' ? body : JSON.stringify(body);
      h['content-type'] ??= 'application/json';
    }
    const res = await fetch(this.base + path, { method, headers: h, body: payload, redirect: 'manual' });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      // not JSON: keep the text
    }
    return { status: res.status, body: parsed as T, headers: res.headers, text };
  }

  get<T = any>(path: string, headers?: Record<string, string>) {
    return this.request<T>('GET', path, undefined, headers);
  }
  post<T = any>(path: string, body?: unknown, headers?: Record<string, string>) {
    return this.request<T>('POST', path, body ?? {}, headers);
  }
  patch<T = any>(path: string, body: unknown) {
    return this.request<T>('PATCH', path, body);
  }
  delete<T = any>(path: string) {
    return this.request<T>('DELETE', path);
  }
}

/** Follows a sign-in link like a browser would and answers the session cookie it set. */
export async function useSignInLink(url: string): Promise<string> {
  const res = await fetch(url, { redirect: 'manual' });
  if (res.status !== 302) throw new Error(`sign-in link answered ${res.status}: ${await res.text()}`);
  const setCookie = res.headers.get('set-cookie') ?? '';
  const match = /svc_session=([^;]+)/.exec(setCookie);
  if (!match) throw new Error('no session cookie was set');
  return `svc_session=${match[1]}`;
}

/** The instance admin's session, through the same path as `svc admin sign-in-link`. */
export async function adminSession(t: TestServer, email = 'admin@example.com'): Promise<Client> {
  const path = await t.server.services.identity.issueSignInLink(email);
  return new Client(t.url, { cookie: await useSignInLink(t.url + path) });
}

/** A session of an ordinary user, invited by the admin through the API. */
export async function userSession(
  t: TestServer,
  admin: Client,
  email: string,
): Promise<{ client: Client; userId: string }> {
  const link = await admin.post<{ url: string }>('/api/admin/sign-in-links', { email });
  if (link.status !== 201) throw new Error(`could not create a sign-in link: ${link.status} ${link.text}`);
  const client = new Client(t.url, { cookie: await useSignInLink(link.body.url) });
  const me = await client.get<{ id: string }>('/api/users/me');
  return { client, userId: me.body.id };
}

export async function createToken(
  session: Client,
  name = 'test token',
  expiresAt?: number,
): Promise<{ client: Client; token: string; id: string }> {
  const res = await session.post<{ token: string; apiToken: { id: string } }>('/api/tokens', {
    name,
    ...(expiresAt ? { expiresAt } : {}),
  });
  if (res.status !== 201) throw new Error(`could not create a token: ${res.status} ${res.text}`);
  return {
    client: new Client(session.base, { token: res.body.token }),
    token: res.body.token,
    id: res.body.apiToken.id,
  };
}

/**
 * A job and a queued run of another workspace, written through the services as that workspace would (no person of
 * the test belongs to it): the ids a tenancy check sends to see `not_found`.
 */
export async function foreignJobAndRun(t: TestServer, workspaceId: string): Promise<{ jobId: string; runId: string }> {
  const s = t.server.services;
  const ctx: CommandContext = { ...systemContext, workspaceId };
  const jobs = new Jobs(s.bus, s.playbooks, s.runs, (position) => s.engine.waitFor(position));
  const jobId = await jobs.create(ctx, workspaceId, { name: 'Foreign job', instruction: 'Not yours' });
  const triggered = await s.runs.trigger(
    workspaceId,
    jobId,
    { trigger: 'manual', triggeredBy: null, input: {}, instructions: null },
    ctx,
  );
  await s.engine.waitFor(triggered.position);
  if (!triggered.runId) throw new Error('the foreign run was not queued');
  return { jobId, runId: triggered.runId };
}

/** Runs the `svc` command line from source (`svc admin ...`, `svc audit ...`) and answers what it printed. */
export function svcCli(args: string[]): Promise<{ stdout: string; stderr: string }> {
  return promisify(execFile)(process.execPath, ['--import', 'tsx', 'cli/main.ts', ...args]);
}

/** `svc serve` as a real process on a random port over `dataDir`, once it answers (for crash tests). */
export async function spawnServer(
  dataDir: string,
  args: string[] = [],
): Promise<{ child: ChildProcess; url: string; output: () => string }> {
  rmSync(join(dataDir, 'server.json'), { force: true });
  const { child, output } = spawnSvc(dataDir, args);
  try {
    // Generous: a process compiling its sources with tsx takes a minute on a loaded 2-core machine.
    await waitFor(
      'the server to write server.json',
      () => {
        if (child.exitCode !== null) throw new Error(`it exited with ${child.exitCode}`);
        return existsSync(join(dataDir, 'server.json'));
      },
      { timeoutMs: 90_000 },
    );
  } catch (err) {
    child.kill('SIGKILL');
    throw new Error(`server did not start (${errorMessage(err)}): ${output()}`);
  }
  const { url } = JSON.parse(readFileSync(join(dataDir, 'server.json'), 'utf8')) as { url: string };
  return { child, url, output };
}

/**
 * `svc serve` as a real process over `dataDir` with more arguments (`--roles`, `--config`), logging at `logLevel`;
 * `cli` is how node starts the command (the sources through tsx unless a test picks the build).
 */
export function spawnSvc(
  dataDir: string,
  args: string[] = [],
  logLevel = 'warn',
  cli: string[] = ['--import', 'tsx', 'cli/main.ts'],
): { child: ChildProcess; output: () => string } {
  const child = spawn(process.execPath, [...cli, 'serve', '--port', '0', '--data-dir', dataDir, ...args], {
    env: { ...process.env, NODE_ENV: 'test', SVC_LOG_LEVEL: logLevel },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  return { child, output: () => out };
}

export interface RunnerServer {
  t: TestServer;
  api: Client;
  /** The fake provider, scripted through `POST /api/providers/{id}/script`. */
  providerId: string;
}

/**
 * A server with the runner role for the suite (started before it, stopped after it), an admin session, and the fake
 * provider's model as the workspace's agent model. The object is filled in by `before`.
 */
export function serverWithFakeModel(env: Record<string, string> = {}): RunnerServer {
  const s = {} as RunnerServer;
  before(async () => {
    s.t = await startTestServer({ SVC_ROLES: 'api,projector,runner', ...env });
    s.api = await adminSession(s.t);
    s.providerId = (await s.api.post<{ id: string }>('/api/providers', { name: 'Fake', kind: 'fake' })).body.id;
    await s.api.patch('/api/settings', { agentModelId: (await s.api.get('/api/models')).body.items[0].id });
  });
  after(async () => s.t?.stop());
  return s;
}

export type TimelineEntry = { seq: number; type: string; payload: Record<string, any> };

/** Waits until the run is final (and, with `reflection`, its reflection no longer pending); answers it and its timeline. */
export async function finishedRun(
  api: Client,
  runId: string,
  options: { reflection?: boolean } = {},
): Promise<{ run: Record<string, any>; events: TimelineEntry[] }> {
  const run = await waitFor(
    `run ${runId} to end${options.reflection === true ? ' and its reflection' : ''}`,
    async () => {
      const got = (await api.get(`/api/runs/${runId}`)).body as Record<string, any>;
      const live =
        ['queued', 'provisioning', 'running', 'verifying'].includes(got.status) ||
        (options.reflection === true && got.reflection === 'pending');
      return !live && got;
    },
    { timeoutMs: 120_000, intervalMs: 50 },
  );
  return { run, events: (await api.get(`/api/runs/${runId}/events?limit=2000`)).body as TimelineEntry[] };
}
