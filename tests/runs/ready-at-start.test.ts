import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statfsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runtimeDir } from '../../server/runner-role.js';
import { adminSession, Client, createToken, startTestServer, type TestServer } from '../api/harness.js';
import { waitFor } from '../wait.js';

const roles = { SVC_ROLES: 'api,projector,scheduler,runner', SVC_SANDBOX: 'bwrap' };
/** Where this process's bwrap sandboxes keep their filesystems (adapters/sandbox/disk.ts). */
const poolDir = `/run/svc-disks/${process.pid}`;

/** The filesystems of this process's disk pool, with their size in MB. */
function poolMounts(): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
    const path = line.split(' ')[4] ?? '';
    if (!path.startsWith(`${poolDir}/`)) continue;
    try {
      const fs = statfsSync(path);
      out.set(path, Math.round((fs.blocks * fs.bsize) / 2 ** 20));
    } catch {
      // unmounted while listed
    }
  }
  return out;
}

/** The parent pid of `pid`, from /proc (0 when it is gone). */
function parentOf(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return 0;
  }
}

/**
 * Sandboxes of this process ready for a command: their init (a child of a bwrap this process started) blocked reading
 * descriptor 6, where a run's first command comes (svc init --command-fd). read is system call 0 on x64, 63 on arm64.
 */
function readyInits(): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (!readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').includes('--command-fd')) continue;
      if (parentOf(parentOf(Number(entry))) !== process.pid) continue;
      if (/^(0|63) 0x6 /.test(readFileSync(`/proc/${entry}/syscall`, 'utf8'))) out.push(Number(entry));
    } catch {
      // ended while listed
    }
  }
  return out;
}

/** Clock ticks since boot (USER_HZ, as /proc/<pid>/stat counts a process's start), once a new tick has begun. */
async function freshTick(): Promise<number> {
  const now = () => Math.floor(Number(readFileSync('/proc/uptime', 'utf8').split(' ')[0]) * 100);
  const start = now();
  return waitFor('the next clock tick', () => (now() > start ? now() : 0), { intervalMs: 2 });
}

/**
 * Sandboxes ready at start (docs/design.md, "Sandbox provisioning"): a runner that starts begins the sandboxes of
 * the disk sizes its enabled agent jobs use, so the first run of such a job after a start runs in one started ahead.
 */
describe('ready sandboxes when the runner starts', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-ready-at-start-'));
  let t: TestServer | null = null;
  let api: Client;
  let jobId: string;

  before(async () => {
    const first = await startTestServer(roles, dataDir);
    const admin = await adminSession(first);
    const token = await createToken(admin);
    const provider = await admin.post<{ id: string }>('/api/providers', { name: 'Fake', kind: 'fake' });
    assert.equal(provider.status, 201, provider.text);
    const models = await admin.get<{ items: Array<{ id: string; model: string }> }>('/api/models');
    const fake = models.body.items.find((m) => m.model === 'fake-model')!;
    assert.equal((await admin.patch('/api/settings', { agentModelId: fake.id })).status, 200);
    const add = async (fields: Record<string, unknown>) => {
      const job = await token.client.post<{ id: string }>('/api/jobs', { name: 'Job', ...fields });
      assert.equal(job.status, 201, job.text);
      return job.body.id;
    };
    // The first command prints when the sandbox's init started, in clock ticks since boot.
    const instruction = "Report it with `svc output set tick $(cut -d' ' -f22 /proc/1/stat)` and finish.";
    jobId = await add({ instruction, limits: { diskMb: 96 } });
    await add({ instruction: 'Another at the same size.', limits: { diskMb: 96 } });
    const disabled = await add({ instruction: 'Disabled.', limits: { diskMb: 200 } });
    assert.equal((await token.client.patch(`/api/jobs/${disabled}`, { enabled: false })).status, 200);
    await add({ instruction: 'As root.', limits: { diskMb: 128 }, runAsRoot: true });
    await first.stop();
    t = await startTestServer(roles, dataDir);
    api = new Client(t.url, token.client.credential);
  });

  after(async () => {
    await t?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('starts a sandbox of the size the enabled agent jobs use, and only of that size', async () => {
    const before = new Set(poolMounts().keys());
    const sandboxes = join(runtimeDir(dataDir), 'sandboxes');
    await waitFor('a ready sandbox on a 96 MB filesystem', () => {
      const ready = existsSync(sandboxes) && readdirSync(sandboxes).some((n) => n.startsWith(`.ready-${process.pid}-`));
      return ready && readyInits().length === 1 && [...poolMounts().values()].some((mb) => mb > 80 && mb <= 96);
    });
    const sizes = new Set([...poolMounts()].filter(([path]) => !before.has(path)).map(([, mb]) => mb));
    assert.ok(
      [...sizes].every((mb) => mb > 80 && mb <= 96),
      `only 96 MB filesystems: ${[...sizes].join(', ')} MB`,
    );
  });

  it("runs the first run's first command in the sandbox started ahead of it", async () => {
    const asked = await freshTick();
    const started = await api.post<{ runId: string }>(`/api/jobs/${jobId}/runs`, {});
    assert.equal(started.status, 201, started.text);
    const run = await waitFor(
      'the run to end',
      async () => {
        const r = (await api.get<{ status: string; outputs: { tick?: number } }>(`/api/runs/${started.body.runId}`))
          .body;
        return ['succeeded', 'failed', 'cancelled', 'timed_out'].includes(r.status) && r;
      },
      { timeoutMs: 60_000, intervalMs: 100 },
    );
    assert.equal(run.status, 'succeeded', JSON.stringify(run));
    assert.equal(typeof run.outputs.tick, 'number', JSON.stringify(run.outputs));
    assert.ok(run.outputs.tick! < asked, `the init started at tick ${run.outputs.tick}, before the run at ${asked}`);
  });
});
