import { execFile, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import {
  chmodSync,
  chownSync,
  closeSync,
  existsSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  rmdirSync,
  rmSync,
  unlinkSync,
} from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ignoreFailure } from '../../domain/ignore-failure.js';
import { processAlive } from './process-alive.js';
import { DiskHelper, DiskHelperError } from './disk-helper.js';

const run = promisify(execFile);

/** The largest disk a sandbox may have, as a job's limits allow (1 TiB; the file is sparse). */
const maxSizeMb = 1_048_576;

/**
 * The priority spares are made at (ready sandboxes too, adapters/sandbox/bwrap.ts): below the runs that take them, so
 * a refill on a busy machine waits for the CPU instead of the run (docs/design.md, "Sandbox provisioning").
 */
export const refillNice = 10;

/** The directories of a sandbox's filesystem, made with it so that taking a spare costs no system call. */
const refillDelayMs = 200;

/** Every pool of this process: their spares are unmounted when it exits normally (a crash leaves them to the sweep). */
const pools = new Set<Disks>();
let exitHook = false;

const layout: ReadonlyArray<[string, number]> = [
  ['workspace', 0o755],
  ['svc', 0o755],
  ['svc/outputs', 0o755],
  ['svc/logs', 0o755],
  ['svc/candidates', 0o755],
  ['tmp', 0o1777],
];

/**
 * The disk limit of bwrap sandboxes (docs/design.md, "Sandbox isolation"): each sandbox's files live on an ext4
 * filesystem of their own, in a sparse file on a loop device, so /workspace, /svc and /tmp together end in ENOSPC at
 * the size and nothing else of the host's disk is written. Making one (mkfs + loop mount) costs about 55 ms, twice the
 * whole provisioning budget, so a few are kept formatted, mounted and laid out per size in use, and handed out as they
 * are. The backing file is unlinked once mounted: unmounting (the loop device is auto-cleared) frees the space, and a
 * crashed service leaves only mounts, which the next `prepare` sweeps.
 */
export class Disks {
  private readonly pool = new Map<number, string[]>();
  /** Attached filesystems that no sandbox holds yet (those of ready sandboxes): released at exit like the spares. */
  private readonly unclaimed = new Set<string>();
  private readonly refilling = new Set<number>();
  /** Sizes by last use; a size not asked for lately gives its spare filesystems back. */
  private readonly recent: number[] = [];
  private closed = false;
  /** Runs mkfs, mount and umount, so that the served process does not fork for them (adapters/sandbox/disk-helper.ts). */
  private readonly helper = new DiskHelper();

  constructor(
    /**
     * Holds the spare filesystems, one directory per process; those of dead processes are swept. Outside the
     * sandboxes' root, so removing that root never meets a spare that is still mounted.
     */
    /** Owner of the layout's directories: the sandboxes' host uid. */
    private readonly owner: number,
    private readonly root = '/run/svc-disks',
    private readonly spares = 2,
    private readonly sizesKept = 3,
  ) {}

  private get poolDir(): string {
    return join(this.root, String(process.pid));
  }

  /** Throws a clear message when the machine cannot make loop filesystems; sweeps what dead processes left. */
  async prepare(): Promise<void> {
    if (!existsSync('/dev/loop-control'))
      throw new Error('loop devices are missing (/dev/loop-control): sandboxes need them for their disk limit');
    try {
      await run('mkfs.ext4', ['-V']);
    } catch {
      throw new Error('mkfs.ext4 (e2fsprogs) is not installed: run scripts/prepare-host.sh');
    }
    mkdirSync(this.root, { recursive: true, mode: 0o711 });
    pools.add(this);
    if (!exitHook) {
      exitHook = true;
      process.once('exit', () => {
        for (const pool of pools) pool.releaseSync();
      });
    }
    for (const name of readdirSync(this.root)) {
      const pid = /^(\d+)$/.exec(name)?.[1];
      if (!pid || Number(pid) === process.pid || processAlive(Number(pid))) continue;
      const dir = join(this.root, name);
      for (const spare of readdirSync(dir)) await this.detach(join(dir, spare));
      try {
        rmSync(dir, { recursive: true, force: true });
      } catch {
        // a spare still busy: the next sweep tries again
      }
    }
  }

  /**
   * The mount point of a fresh filesystem of `sizeMb` holding the empty layout, the caller's until `detach`. One made
   * on the spot (no spare) is made at the priority `nice`.
   */
  async attach(sizeMb: number, nice = 0): Promise<string> {
    if (!Number.isInteger(sizeMb) || sizeMb < 1 || sizeMb > maxSizeMb)
      throw new Error(`a sandbox's disk is 1-${maxSizeMb} MB, not ${sizeMb}`);
    this.touch(sizeMb);
    let disk = this.pool.get(sizeMb)?.shift();
    if (!disk) {
      disk = join(this.poolDir, randomUUID());
      await this.make(disk, sizeMb, nice);
    }
    // Later, not now: the refill's mkfs would take the CPU from the sandbox's first exec.
    setTimeout(() => this.refill(sizeMb), refillDelayMs).unref();
    return disk;
  }

  /** Whether `path` is a filesystem this class hands out (for paths read back from a sandbox's metadata). */
  owns(path: string): boolean {
    return /^[0-9]+\/[0-9a-f-]{36}$/.test(path.startsWith(`${this.root}/`) ? path.slice(this.root.length + 1) : '');
  }

  /** Unmounts what is mounted at `target` and removes the directory; idempotent, and lazy when something holds it. */
  async detach(target: string): Promise<void> {
    // Twice at most: a helper that died with the request may or may not have unmounted, and a new one tries again.
    for (let tries = 0; tries < 2 && mounted(target); tries++) {
      await this.helper
        .unmount(target)
        .catch(ignoreFailure('a lazy unmount detaches even a busy filesystem: it fails only when nothing is mounted'));
    }
    try {
      rmdirSync(target);
    } catch {
      // already gone, or not empty because it was never a mount (the caller removes it)
    }
  }

  /**
   * Whether an attached filesystem is still no sandbox's (a ready sandbox's, adapters/sandbox/bwrap.ts): if so, it is
   * unmounted when the process exits, as the spares are.
   */
  unclaimedUntilExit(path: string, yes: boolean): void {
    if (yes) this.unclaimed.add(path);
    else this.unclaimed.delete(path);
  }

  /** Unmounts the spares at once, for process exit (no event loop left to wait on). */
  private releaseSync(): void {
    for (const spares of [...this.pool.values(), [...this.unclaimed]]) {
      for (const s of spares.splice(0)) {
        spawnSync('umount', ['-l', s]);
        try {
          rmdirSync(s);
        } catch {
          // the next sweep removes it
        }
      }
    }
    try {
      rmdirSync(this.poolDir);
    } catch {
      // sandboxes still hold filesystems there, or another pool of this process does
    }
  }

  /** Gives the spare filesystems back. */
  async close(): Promise<void> {
    this.closed = true;
    for (const spares of this.pool.values()) for (const s of spares.splice(0)) await this.detach(s);
    rmSync(this.poolDir, { recursive: true, force: true });
    // Not final: sandboxes handed out are still unmounted through it when they are destroyed.
    this.helper.stop(false);
  }

  private touch(sizeMb: number): void {
    const at = this.recent.indexOf(sizeMb);
    if (at >= 0) this.recent.splice(at, 1);
    this.recent.unshift(sizeMb);
    for (const old of this.recent.splice(this.sizesKept)) {
      for (const s of this.pool.get(old)?.splice(0) ?? [])
        this.detach(s).catch(ignoreFailure("a spare left mounted is swept with this process's pool at the next start"));
    }
  }

  private refill(sizeMb: number): void {
    if (this.closed || this.refilling.has(sizeMb)) return;
    this.refilling.add(sizeMb);
    (async () => {
      try {
        const spares = this.pool.get(sizeMb) ?? [];
        this.pool.set(sizeMb, spares);
        while (!this.closed && spares.length < this.spares && this.recent.includes(sizeMb)) {
          const dir = join(this.poolDir, randomUUID());
          await this.make(dir, sizeMb, refillNice);
          if (this.closed) await this.detach(dir);
          else spares.push(dir);
        }
      } catch {
        // The next attach makes its filesystem itself and reports the error there.
      } finally {
        this.refilling.delete(sizeMb);
      }
    })().catch(ignoreFailure('the body above catches its own failures'));
  }

  private async make(target: string, sizeMb: number, nice: number): Promise<void> {
    // Not listable by other host users, who could otherwise walk into the sandboxes' files.
    mkdirSync(this.poolDir, { recursive: true, mode: 0o711 });
    mkdirSync(target, { mode: 0o700 });
    const image = `${target}.img`;
    const fd = openSync(image, 'w', 0o600);
    try {
      ftruncateSync(fd, sizeMb * 1024 * 1024);
    } finally {
      closeSync(fd);
    }
    try {
      // No journal (the contents die with the sandbox), no reserved blocks, inode tables initialised lazily: the
      // helper's options (adapters/sandbox/disk-helper.ts).
      await this.helper.make(target, image, nice);
    } catch (err) {
      // A helper that died mid-request may have mounted it: its group is killed, so nothing mounts it later.
      if (err instanceof DiskHelperError && err.helperGone) await this.detach(target);
      rmSync(image, { force: true });
      try {
        rmdirSync(target);
      } catch {
        // still mounted (unmounted lazily) or gone: swept with this process's pool
      }
      throw new Error(`could not make the sandbox's ${sizeMb} MB filesystem: ${(err as Error).message}`);
    }
    unlinkSync(image);
    chmodSync(target, 0o711);
    for (const [dir, mode] of layout) {
      mkdirSync(join(target, dir), { mode });
      chmodSync(join(target, dir), mode);
      chownSync(join(target, dir), this.owner, this.owner);
    }
    rmSync(join(target, 'lost+found'), { recursive: true, force: true });
  }
}

/** Whether `path` is a mount point, from this process's mount table. */
export function mounted(path: string): boolean {
  const escaped = path.replace(/[ \t\n\\]/g, (c) => `\\${c.charCodeAt(0).toString(8).padStart(3, '0')}`);
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .some((line) => line.split(' ')[4] === escaped);
}
