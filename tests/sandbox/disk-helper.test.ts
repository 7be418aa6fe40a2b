import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Disks, mounted } from '../../adapters/sandbox/disk.js';
import { DiskHelper, diskHelperName, diskHelperScript } from '../../adapters/sandbox/disk-helper.js';
import { sandboxHostUid } from '../../adapters/sandbox/bwrap.js';
import { waitFor } from '../wait.js';

/** The pids of this process's disk helpers (a shell loop whose $0 is the helper's name), read from /proc. */
function helperPids(): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (ppid === process.pid && argv.includes(diskHelperName) && !stat.includes(') Z ')) out.push(Number(entry));
    } catch {
      // ended while listed
    }
  }
  return out;
}

/** The filesystems mounted under `dir`, from this process's mount table. */
function mountsUnder(dir: string): string[] {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[4] ?? '')
    .filter((p) => p.startsWith(`${dir}/`));
}

/**
 * The disk helper (docs/design.md, "Sandbox provisioning"): the served process forks once for it, it makes and
 * unmounts the sandboxes' filesystems, survives being killed mid-request, and runs nothing it was not meant to.
 */
describe('the disk helper: filesystems made without forking the served process', () => {
  let root: string;
  let disks: Disks;

  before(async () => {
    root = mkdtempSync(join(tmpdir(), 'svc-disk-helper-'));
    disks = new Disks(sandboxHostUid, join(root, 'disks'), 0);
    await disks.prepare();
  });

  after(async () => {
    await disks?.close();
    for (const m of root ? mountsUnder(root) : []) await new Disks(0, root).detach(m);
    if (root) rmSync(root, { recursive: true, force: true });
  });

  it('makes a mounted filesystem with the layout through one helper, which makes the next ones too', async () => {
    const a = await disks.attach(64);
    assert.ok(mounted(a), 'attached: a mount point');
    assert.equal(statSync(join(a, 'workspace')).uid, sandboxHostUid, "the layout belongs to the sandboxes' uid");
    const helpers = helperPids();
    assert.equal(helpers.length, 1, 'one helper for the pool');
    const b = await disks.attach(64);
    assert.deepEqual(helperPids(), helpers, 'the same helper made the second one');
    await disks.detach(a);
    await disks.detach(b);
    assert.ok(!mounted(a) && !mounted(b), 'detached: unmounted');
    assert.ok(!existsSync(a), 'and its directory removed');
  });

  it('survives being killed mid-request: the request fails clearly, nothing is left mounted, the next attach works', async () => {
    await disks.attach(64).then((d) => disks.detach(d));
    const [helper] = helperPids();
    assert.ok(helper, 'a helper runs');
    // A size never asked for: no spare, so the attach is the helper's mkfs, killed at once.
    const pending = disks.attach(72);
    process.kill(helper, 'SIGKILL');
    const outcome = await pending.then(
      (dir) => ({ dir, error: null }),
      (err: Error) => ({ dir: null, error: err.message }),
    );
    // Killed before its answer (the usual case) it fails with why; had the mkfs already answered, it is a disk.
    if (outcome.error)
      assert.match(outcome.error, /could not make the sandbox's 72 MB filesystem: the disk helper ended/);
    else assert.ok(mounted(outcome.dir!), 'answered before the kill: a real filesystem');
    await waitFor('the killed helper to be gone', () => !helperPids().includes(helper));
    const leftover = mountsUnder(join(root, 'disks')).filter((m) => m !== outcome.dir);
    assert.deepEqual(leftover, [], 'no filesystem left mounted by the killed request');
    const next = await disks.attach(72);
    assert.ok(mounted(next), 'the next attach works, through a new helper');
    const [again] = helperPids();
    assert.ok(again && again !== helper, 'a new helper started');
    await disks.detach(next);
    if (outcome.dir) await disks.detach(outcome.dir);
  });

  it('refuses sizes that are not a whole number of megabytes within a job limit', async () => {
    for (const size of [0, -64, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 1_048_577]) {
      await assert.rejects(disks.attach(size), /a sandbox's disk is 1-1048576 MB/, String(size));
    }
    assert.deepEqual(mountsUnder(join(root, 'disks')), []);
  });

  it('refuses paths and priorities that are not the pool’s, before anything is sent', async () => {
    const helper = new DiskHelper();
    const hostile = [
      'relative/x',
      '/tmp/a b',
      '/tmp/a\n1 umount 0 /',
      '/tmp/../etc',
      '/tmp/./x',
      '/tmp//x',
      '/tmp/$(touch x)',
      "/tmp/x'y",
      '',
    ];
    for (const p of hostile) {
      await assert.rejects(helper.make(p, '/tmp/ok.img', 0), /refused/, JSON.stringify(p));
      await assert.rejects(helper.make('/tmp/ok', p, 0), /refused/, JSON.stringify(p));
      await assert.rejects(helper.unmount(p), /refused/, JSON.stringify(p));
    }
    for (const nice of [-1, 20, 1.5, Number.NaN])
      await assert.rejects(helper.make('/tmp/a', '/tmp/b', nice), /refused/);
    assert.equal(helper.pid, null, 'nothing was sent: the helper never started');
  });

  it('reports what failed, from the command itself', async () => {
    const helper = new DiskHelper();
    const missing = join(root, 'no-such-dir', 'x');
    await assert.rejects(helper.make(missing, `${missing}.img`, 0), (err: Error) => {
      assert.match(err.message, /no-such-dir/, "mkfs's own message names the image");
      return true;
    });
    await assert.rejects(helper.unmount(join(root, 'not-mounted')), /not mounted|no mount point|not found/i);
    helper.stop();
    await assert.rejects(helper.unmount(join(root, 'x')), /closed/);
  });

  it('checks every request itself too: a hostile line runs nothing and gets a refusal', async () => {
    const canary = join(root, 'canary');
    const loop = spawn('/bin/sh', ['-c', diskHelperScript, diskHelperName], { stdio: ['pipe', 'pipe', 'ignore'] });
    let answers = '';
    loop.stdout.setEncoding('utf8').on('data', (t: string) => (answers += t));
    const lines = [
      `1 make 0 ${root}/x;touch${'$'}{IFS}${canary} ${root}/x.img`,
      `2 make 0 ${root}/$(touch${'$'}{IFS}${canary}) ${root}/x.img`,
      `3 rm 0 ${root} -`,
      `4 make 20 ${root}/x ${root}/x.img`,
      `5 make 0 ${root}/x ${root}/x.img extra`,
      `6 umount 0 -l -`,
      `7 umount 0 ${root}/../etc -`,
      `8 make -5 ${root}/x ${root}/x.img`,
      `9 make 0 ${root}/x ../x.img`,
      `10 make 100000000000000000000 ${root}/x ${root}/x.img`,
      `no-id make 0 ${root}/x ${root}/x.img`,
    ];
    loop.stdin.end(lines.join('\n') + '\n');
    await new Promise((resolve) => loop.once('close', resolve));
    const got = new Map(
      answers
        .trim()
        .split('\n')
        .map((l) => [l.split(' ')[0]!, l] as const),
    );
    for (let id = 1; id <= 10; id++) assert.match(got.get(String(id)) ?? '', new RegExp(`^${id} 2 refused`), `${id}`);
    assert.equal(got.size, 10, 'a line without a number as its id gets no answer');
    assert.ok(!existsSync(canary), 'nothing in a request was run');
    assert.ok(!existsSync(join(root, 'x.img')), 'nothing was made');
  });
});
