import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BwrapBackend } from '../../adapters/sandbox/bwrap.js';
import { mounted } from '../../adapters/sandbox/disk.js';
import { svcBinaryPath } from '../../adapters/sandbox/select.js';
import type { ExecOptions, Sandbox, SandboxLimits, SandboxSpec } from '../../adapters/sandbox/types.js';
import { testSpec } from './fixture.js';
import { waitFor } from '../wait.js';

/**
 * Ready sandboxes (docs/design.md, "Sandbox provisioning"): a bwrap sandbox started ahead of its run takes the run's
 * first command exactly as one started on demand would run it, with the run's limits, environment and sockets, and
 * carries nothing from one run to the next. Every probe runs on both backends and the answers are compared.
 */
const limits: SandboxLimits = { cpus: 1, memoryMb: 300, pidsLimit: 77, diskMb: 256 };
const cgroupRoot = '/sys/fs/cgroup';

/** Clock ticks since boot (USER_HZ, as /proc/<pid>/stat counts a process's start), once a new tick has begun. */
async function freshTick(): Promise<number> {
  const now = () => Math.floor(Number(readFileSync('/proc/uptime', 'utf8').split(' ')[0]) * 100);
  const start = now();
  return waitFor('the next clock tick', () => (now() > start ? now() : 0), { intervalMs: 2 });
}

/** The host pids in a sandbox's pids cgroup (empty when the machine has no pids controller for us). */
function cgroupPids(name: string): number[] {
  try {
    return readFileSync(join(cgroupRoot, 'pids', 'svc', name, 'cgroup.procs'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
}

describe('bwrap sandboxes started ahead of their runs', () => {
  let root: string;
  let socket: string;
  let broker: Server;
  let ready: BwrapBackend;
  let onDemand: BwrapBackend;
  const seen: string[] = [];
  const created: Sandbox[] = [];

  before(async () => {
    root = mkdtempSync(join(tmpdir(), 'svc-bwrap-ready-'));
    chmodSync(root, 0o711);
    socket = join(root, 'broker.sock');
    broker = createServer((req, res) => {
      seen.push(`${req.method} ${req.url} ${req.headers.authorization}`);
      const body = JSON.stringify({ key: 'k', value: 'from the broker', found: true });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    });
    await new Promise<void>((resolve, reject) => broker.once('error', reject).listen(socket, resolve));
    chmodSync(socket, 0o666);
    for (const dir of ['ready', 'on-demand']) {
      mkdirSync(join(root, dir));
      chmodSync(join(root, dir), 0o711);
    }
    ready = new BwrapBackend(join(root, 'ready'), svcBinaryPath());
    onDemand = new BwrapBackend(join(root, 'on-demand'), svcBinaryPath(), undefined, 0);
    await ready.prepare();
    await onDemand.prepare();
  });

  after(async () => {
    for (const s of created) await s.destroy().catch(() => undefined);
    await ready?.close();
    await new Promise<void>((resolve) => (broker ? broker.close(() => resolve()) : resolve()));
    if (root) rmSync(root, { recursive: true, force: true });
  });

  const spec = (overrides: Partial<SandboxSpec> = {}) =>
    testSpec('ready', socket, limits, {
      env: { SVC_BROKER_URL: 'http://127.0.0.1:4180', SVC_TOKEN: 'tok-ready', SECRET: 'a b=c\nd' },
      ...overrides,
    });
  /** A sandbox of `backend`; from `ready`, once a ready one of its size is started. */
  const make = async (backend: BwrapBackend, overrides: Partial<SandboxSpec> = {}): Promise<Sandbox> => {
    if (backend === ready) {
      ready.warm(limits.diskMb);
      await ready.readySettled();
    }
    const sb = await backend.create(spec(overrides));
    created.push(sb);
    return sb;
  };
  /** The same first exec in a ready sandbox and in one started on demand. */
  const both = async (exec: ExecOptions, overrides: Partial<SandboxSpec> = {}) => {
    const a = await make(ready, overrides);
    const b = await make(onDemand, overrides);
    const [x, y] = [await a.exec(exec), await b.exec(exec)];
    return { ready: x, onDemand: y, boxes: [a, b] as const };
  };
  const text = (b: Buffer) => b.toString('utf8');

  it('runs the first command in a sandbox started before the run asked, as a sandbox started on demand runs it', async () => {
    ready.warm(limits.diskMb);
    await ready.readySettled();
    const asked = await freshTick();
    const probe =
      'cut -d" " -f22 /proc/1/stat; echo; id; pwd; env | sort; cat /proc/self/cgroup; awk "{print \\"nice\\", \\$19}" /proc/self/stat; ' +
      'printf "<%s>\\n" "$SECRET"; ls /run/svc; hostname; svc state get k; df -m /workspace | tail -1 | tr -s " " | cut -d" " -f2; ls -A /tmp /workspace; exit 3';
    const { ready: r, onDemand: d, boxes } = await both({ cmd: ['bash', '-c', probe], env: { FROM_EXEC: '1' } });
    const [startTick, ...rest] = text(r.output).split('\n');
    const [, ...restOnDemand] = text(d.output).split('\n');
    assert.ok(Number(startTick) < asked, `the init started at tick ${startTick}, before the create at ${asked}`);
    assert.equal(r.exitCode, 3, text(r.output));
    assert.deepEqual(rest, restOnDemand, 'everything else the command sees is what a sandbox started on demand shows');
    assert.match(text(r.output), /<a b=c\nd>/, "the run's environment, values as they are");
    assert.match(text(r.output), /FROM_EXEC=1/);
    assert.match(text(r.output), /nice 0\n/, "the command runs at the run's priority, not the refill's");
    assert.match(text(r.output), /from the broker/, 'svc reached the run broker through the forwarder');
    assert.equal(seen.filter((s) => s.includes('Bearer tok-ready')).length, 2, 'both sandboxes reached the broker');
    if (ready.info().capabilities.limits.pids) {
      const id = boxes[0].id;
      const read = (c: string, f: string) => readFileSync(join(cgroupRoot, c, 'svc', id, f), 'utf8').trim();
      assert.equal(read('pids', 'pids.max'), '77', "the run's pids limit");
      assert.equal(read('memory', 'memory.limit_in_bytes'), String(300 * 1024 * 1024), "the run's memory limit");
    }
  });

  it('hands a ready sandbox to one run only: the next run sees nothing of the previous one', async () => {
    const first = await make(ready);
    const left = await first.exec({
      cmd: ['bash', '-c', 'echo x > /tmp/left; echo y > /workspace/left; cut -d" " -f22 /proc/1/stat'],
    });
    assert.equal(left.exitCode, 0, text(left.output));
    const second = await make(ready);
    const seenNext = await second.exec({
      cmd: ['bash', '-c', 'ls -A /tmp /workspace; cut -d" " -f22 /proc/1/stat'],
    });
    assert.equal(seenNext.exitCode, 0, text(seenNext.output));
    assert.doesNotMatch(text(seenNext.output), /left/, 'no file of the previous run');
    assert.notEqual(text(seenNext.output).trim().split('\n').pop(), text(left.output).trim(), 'another init');
  });

  it('a first command the ready sandbox cannot take runs started on demand, and the ready one is ended', async () => {
    const cases: Array<[string, ExecOptions]> = [
      ['as root', { cmd: ['id', '-u'], user: 'root' }],
      ['with stdin', { cmd: ['cat'], stdin: 'from stdin' }],
      ['in another directory', { cmd: ['pwd'], cwd: '/tmp' }],
      ['with a name bwrap refuses', { cmd: ['true'], env: { 'A=B': 'x' } }],
      ['in a directory that does not exist', { cmd: ['pwd'], cwd: '/nope' }],
    ];
    for (const [what, exec] of cases) {
      const { ready: r, onDemand: d, boxes } = await both(exec);
      assert.equal(r.exitCode, d.exitCode, `${what}: ${text(r.output)} / ${text(d.output)}`);
      assert.equal(text(r.output), text(d.output), what);
      if (ready.info().capabilities.limits.pids) {
        await waitFor(`${what}: nothing left running in the sandbox`, () => cgroupPids(boxes[0].id).length === 0);
      }
    }
  });

  it('leaves the ready sandbox to the next run when the first exec streams stdin (a stdio MCP server under test)', async () => {
    ready.warm(limits.diskMb);
    await ready.readySettled();
    const asked = await freshTick();
    // Made one right after the other: had the first taken the ready one, the second would find none (a refill
    // starts only after a delay and takes a while).
    const streaming = await ready.create(spec({ firstExecStreams: true }));
    created.push(streaming);
    const next = await ready.create(spec());
    created.push(next);
    const echo = await streaming.exec({ cmd: ['sh', '-c', 'cut -d" " -f22 /proc/1/stat; cat'], stdin: 'via stdin' });
    const [streamingStart, piped] = text(echo.output).split('\n');
    assert.equal(piped, 'via stdin', 'the streaming exec got its stdin');
    assert.ok(Number(streamingStart) >= asked, 'the streaming sandbox started on demand');
    const r = await next.exec({ cmd: ['cut', '-d', ' ', '-f22', '/proc/1/stat'] });
    assert.ok(Number(text(r.output)) < asked, 'the next sandbox got the one started ahead');
  });

  it('a hostile command line or environment gets what a sandbox started on demand gives', async () => {
    const cases: ExecOptions[] = [
      { cmd: ['printf', '[%s]', '', '--', '-x', '\n'] },
      { cmd: ['sh', '-c', 'echo "$V"'], env: { V: '\u0001--bind / /host=\n' } },
      { cmd: ['/no/such/command'] },
    ];
    for (const exec of cases) {
      const { ready: r, onDemand: d } = await both(exec);
      assert.equal(r.exitCode, d.exitCode, `${JSON.stringify(exec)}: ${text(r.output)} / ${text(d.output)}`);
      assert.equal(text(r.output), text(d.output), JSON.stringify(exec));
    }
    const box = await make(ready);
    await assert.rejects(box.exec({ cmd: ['true'], env: { V: 'a\0b' } }), /NUL/);
    // A ready sandbox's /run/svc is a host directory (with links to the run's sockets): bound read-only, where one
    // started on demand has a directory of its own exec's, gone with it.
    const writer = await make(ready);
    const wrote = await writer.exec({
      cmd: ['sh', '-c', 'touch /run/svc/x; ln -s / /run/svc/y; rm -f /run/svc/broker.sock; ls -A /run/svc'],
    });
    assert.match(text(wrote.output), /Read-only file system/);
    assert.deepEqual(
      readdirSync(join(root, 'ready', writer.id, 'run')),
      ['broker.sock'],
      'the host directory is as made',
    );
  });

  it('destroying a sandbox whose ready processes never ran a command leaves no process, mount, cgroup or directory', async () => {
    const box = await make(ready);
    const id = box.id;
    const disk = (JSON.parse(readFileSync(join(root, 'ready', id, 'meta.json'), 'utf8')) as { disk: string }).disk;
    assert.ok(mounted(disk));
    const pids = cgroupPids(id);
    await box.destroy();
    assert.equal(mounted(disk), false, 'its filesystem is unmounted');
    assert.equal(existsSync(join(root, 'ready', id)), false, 'its directory is gone');
    assert.equal(existsSync(join(cgroupRoot, 'pids', 'svc', id)), false, 'its cgroup is gone');
    await waitFor('its processes to be gone', () => pids.every((pid) => !existsSync(`/proc/${pid}`)));
  });

  it('close ends the ready sandboxes: nothing of them is left', async () => {
    const dir = join(root, 'closing');
    mkdirSync(dir);
    chmodSync(dir, 0o711);
    const backend = new BwrapBackend(dir, svcBinaryPath());
    await backend.prepare();
    backend.warm(64);
    await backend.readySettled();
    const names = readdirSync(dir).filter((n) => n.startsWith('.ready-'));
    assert.equal(names.length, 1, 'one ready sandbox for the size');
    const pids = backend.info().capabilities.limits.pids ? cgroupPids(names[0]!) : [];
    if (backend.info().capabilities.limits.pids) assert.equal(pids.length, 2, 'bwrap and its init');
    await backend.close();
    assert.deepEqual(readdirSync(dir), [], 'its directory is gone');
    assert.equal(existsSync(join(cgroupRoot, 'pids', 'svc', names[0]!)), false, 'its cgroup is gone');
    await waitFor('its processes to be gone', () => pids.every((pid) => !existsSync(`/proc/${pid}`)));
  });
});
