import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor } from '../wait.js';
import { serveNodeFlags } from '../../cli/memory-settings.js';

/**
 * `svc serve` as an operator types it (docs/design.md, "Memory settings of svc serve"): the `svc` command starts the
 * server once more with the memory settings when they are missing, passes signals on, and never leaves a server
 * running without it.
 */
const root = join(import.meta.dirname, '../..');
const dirs: string[] = [];
const started: ChildProcess[] = [];
const servers: number[] = [];
after(() => {
  for (const c of started) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  // A server that outlived its parent (the failure the second test looks for) must not outlive the test too.
  for (const pid of servers)
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone, as it should be.
    }
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** `svc serve` from source with these node flags and variables (none of the inherited memory settings). */
async function svcServe(nodeArgs: string[], env: Record<string, string>) {
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-serve-settings-'));
  dirs.push(dataDir);
  const inherited = { ...process.env };
  delete inherited.MALLOC_ARENA_MAX;
  delete inherited.NODE_OPTIONS;
  delete inherited.SVC_SERVE_WRAPPED;
  const svc = spawn(
    process.execPath,
    [...nodeArgs, '--import', 'tsx', 'cli/svc.ts', 'serve', '--port', '0', '--data-dir', dataDir],
    { cwd: root, env: { ...inherited, ...env, SVC_LOG_LEVEL: 'warn' }, stdio: ['ignore', 'ignore', 'inherit'] },
  );
  started.push(svc);
  const exited = once(svc, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  const file = join(dataDir, 'server.json');
  const info = await waitFor(
    'the server to write server.json',
    () => {
      assert.equal(svc.exitCode, null, 'svc exited before serving');
      return existsSync(file) && (JSON.parse(readFileSync(file, 'utf8')) as { url: string; pid: number });
    },
    { timeoutMs: 90_000 },
  );
  servers.push(info.pid);
  const res = await fetch(`${info.url}/api/openapi.json`);
  assert.equal(res.status, 200, 'the server answers');
  return { svc, exited, serverPid: info.pid };
}

const cmdline = (pid: number) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
const environ = (pid: number) => readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
/** Gone, or a zombie its new parent has not reaped yet: either way it serves nothing. */
const ended = (pid: number) => {
  try {
    return /^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true;
  }
};

describe('svc serve and its memory settings', { timeout: 240_000 }, () => {
  it('starts the server once more with them, and SIGTERM stops both with status 0', async () => {
    const { svc, exited, serverPid } = await svcServe([], {});
    assert.notEqual(serverPid, svc.pid, 'the server is a process of its own');
    assert.equal(Number(readFileSync(`/proc/${serverPid}/stat`, 'utf8').split(') ')[1]!.split(' ')[1]), svc.pid);
    for (const flag of serveNodeFlags) assert.ok(cmdline(serverPid).includes(flag), cmdline(serverPid).join(' '));
    assert.ok(environ(serverPid).includes('MALLOC_ARENA_MAX=2'));
    assert.ok(environ(serverPid).includes('SVC_SERVE_WRAPPED=1'), 'marked, so it starts no other');
    svc.kill('SIGTERM');
    // A clean stop (status 0), or node's default end if the signal beat the server's handlers, which it installs
    // last: either way svc ends as the server did.
    const [code, signal] = await exited;
    assert.ok((code === 0 && signal === null) || (code === null && signal === 'SIGTERM'), `${code} ${signal}`);
    await waitFor('the server to be gone', () => ended(serverPid));
  });

  it('never leaves the server running when svc is killed outright', async () => {
    const { svc, exited, serverPid } = await svcServe([], {});
    assert.notEqual(serverPid, svc.pid);
    svc.kill('SIGKILL');
    await exited;
    await waitFor('the server to stop after its parent died', () => ended(serverPid), { timeoutMs: 60_000 });
  });

  it("starts no second process when given the settings, and keeps the operator's own values", async () => {
    const { svc, exited, serverPid } = await svcServe(['--max-semi-space-size=8', '--heap-growing-percent=50'], {
      MALLOC_ARENA_MAX: '3',
    });
    assert.equal(serverPid, svc.pid, 'svc serves in its own process');
    assert.ok(cmdline(serverPid).includes('--max-semi-space-size=8'));
    assert.ok(cmdline(serverPid).includes('--heap-growing-percent=50'));
    assert.ok(environ(serverPid).includes('MALLOC_ARENA_MAX=3'));
    svc.kill('SIGTERM');
    await exited;
  });
});
