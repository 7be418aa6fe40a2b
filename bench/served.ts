// What the benchmarks that start `svc serve` as a process of its own share.
import type { ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '../app/config.js';
import { createLogger, startServer } from '../server/start.js';

/** The built CLI when there is one, else the sources through tsx. */
export const cliArgs = existsSync('dist/cli/main.js') ? ['dist/cli/main.js'] : ['--import', 'tsx', 'cli/main.ts'];

export async function waitForFile(file: string, child: ChildProcess, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!existsSync(file)) {
    if (Date.now() > deadline || child.exitCode !== null) throw new Error('server did not start');
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The served process's address, once it has written its server.json. */
export async function servedUrl(dataDir: string, child: ChildProcess, timeoutMs?: number): Promise<string> {
  const file = join(dataDir, 'server.json');
  await waitForFile(file, child, timeoutMs);
  return (JSON.parse(readFileSync(file, 'utf8')) as { url: string }).url;
}

export function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Math.round(Number(/VmRSS:\s+(\d+)/.exec(status)![1]) / 1024);
}

/** Uses a sign-in link and makes an API token with its session, as a person would before scripting the API. */
export async function apiTokenFromLink(url: string, link: string): Promise<string> {
  const signIn = await fetch(url + link, { redirect: 'manual' });
  const cookie = /svc_session=[^;]+/.exec(signIn.headers.get('set-cookie') ?? '')![0];
  const created = (await (
    await fetch(`${url}/api/tokens`, {
      method: 'POST',
      headers: { cookie, 'content-type': 'application/json' },
      body: '{"name":"bench"}',
    })
  ).json()) as { token: string };
  return created.token;
}

/**
 * The stores a served benchmark runs on. Embedded SQLite by default; `SVC_BENCH_EVENTSTORE_URL` and
 * `SVC_BENCH_MONGO_URL` (with `SVC_MASTER_KEY`, which the scaled path requires) put the served process and its seeding
 * on those servers instead, so the scaled path gets numbers where servers exist (docs/performance.md, "Job creations
 * through the API: CPU per creation"). `adapters` goes into the results, so every number says what it was measured on.
 */
export function benchStores(env: NodeJS.ProcessEnv = process.env): {
  env: Record<string, string>;
  adapters: { events: string; documents: string };
} {
  const events = env.SVC_BENCH_EVENTSTORE_URL || '';
  const mongo = env.SVC_BENCH_MONGO_URL || '';
  const out: Record<string, string> = {};
  if (events) out.SVC_EVENTSTORE_URL = events;
  if (mongo) out.SVC_MONGO_URL = mongo;
  if ((events || mongo) && env.SVC_MASTER_KEY) out.SVC_MASTER_KEY = env.SVC_MASTER_KEY;
  return {
    env: out,
    adapters: { events: events ? 'eventstoredb' : 'sqlite', documents: mongo ? 'mongodb' : 'sqlite' },
  };
}

/** A sign-in link made in the store itself (as `svc admin sign-in-link` does), before a served process opens it. */
export async function seedSignInLink(dataDir: string): Promise<string> {
  const seeded = await startServer(
    loadConfig({ port: 0, dataDir }, { NODE_ENV: 'test', ...benchStores().env }),
    createLogger('silent'),
    () => {},
  );
  const link = await seeded.services.identity.issueSignInLink('bench@example.com');
  await seeded.close();
  return link;
}

/** JSON calls to a served process with an API token; an answer of 400 or more throws with its body. */
export function apiCaller(url: string, token: string) {
  return async (method: string, path: string, body?: unknown): Promise<Record<string, any>> => {
    const res = await fetch(url + path, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (res.status >= 400) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
    return (await res.json()) as Record<string, any>;
  };
}
