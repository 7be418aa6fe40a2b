import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import {
  chownSync,
  existsSync,
  linkSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { arch, setPriority } from 'node:os';
import { basename, join } from 'node:path';
import { BwrapProcess, type LaunchAs } from './bwrap-process.js';
import { Cgroups } from './cgroups.js';
import { Disks, refillNice } from './disk.js';
import { HostFiles } from './host-files.js';
import { checkSandboxId } from './ids.js';
import { ReadyPool } from './ready-pool.js';
import { baseImageName, defaultRootfs, rootfsArgs } from './rootfs.js';
import { hostSeccompProgram } from './seccomp.js';
import type { ExecOptions, ExecResult, Sandbox, SandboxBackend, SandboxInfo, SandboxSpec } from './types.js';
import { ignoreFailure } from '../../domain/ignore-failure.js';
import { processAlive } from './process-alive.js';

/**
 * The host uid every bwrap sandbox runs as: no user of the host (prepare() checks), so nothing a sandbox does acts
 * with a real user's rights. Inside its user namespace it is uid 1000 (agent) or 0 (root). docs/design.md, "Sandbox
 * isolation".
 */
export const sandboxHostUid = 2_000_001_000;
const agentUid = sandboxHostUid;
/** The descriptors bwrap reads its options (--args) and its seccomp program (--seccomp) from; 3 is --info-fd. */
const argsFd = 4;
const seccompFd = 5;
/** A ready sandbox's init reads its first command here (svc init --command-fd), after bwrap's two inputs. */
const commandFd = 6;
/** Disk sizes that have ready sandboxes at once (the runner starts those of the sizes most in use). */
export const readySizesKept = 2;
const basePath = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** What every exec of a prepared backend needs. */
interface Launch {
  rootArgs: string[];
  seccomp: Buffer;
  svcBinary: string;
  disks: Disks;
  /** Whether the service holds inheritable or ambient capabilities, which a uid change alone would pass on. */
  heldCaps: boolean;
}

/**
 * Whether this process has inheritable or ambient capabilities. Changing from root to another uid clears the
 * permitted, effective and ambient sets but not the inheritable one, so only a process without either can start bwrap
 * with a plain uid change; otherwise setpriv clears them first.
 */
function holdsInheritableCaps(): boolean {
  try {
    const status = readFileSync('/proc/self/status', 'utf8');
    return ['CapInh', 'CapAmb'].some(
      (k) => !/^0+$/.test(new RegExp(`^${k}:\\s*([0-9a-f]+)$`, 'm').exec(status)?.[1] ?? '1'),
    );
  } catch {
    return true;
  }
}

interface Meta {
  id: string;
  labels: SandboxSpec['labels'];
  createdAt: number;
  expiresAt: number;
  spec: Omit<SandboxSpec, 'env'>;
  /** The mount point of the sandbox's filesystem (Disks). */
  disk: string;
}

/** Whether `done` settles within `ms`. */
async function within(done: Promise<boolean>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([done, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Where a sandbox's /run/svc comes from: the run's socket files, or a directory holding links to them. */
type Sockets = { broker: string; proxy: string | null } | { dir: string };

/**
 * bwrap's options for one exec, read from a descriptor: the environment (secrets, the run token) is there and never
 * on a command line, which any host user can read in /proc (docs/security.md, "Sandbox isolation").
 */
function bwrapOptions(
  launch: Launch,
  disk: string,
  inner: '0' | '1000',
  cwd: string,
  env: Record<string, string>,
  sockets: Sockets,
): string[] {
  // svc init is the namespace's pid 1 (no bwrap reaper in between), so a SIGTERM from the host reaches it and it gives
  // the command its grace; --info-fd tells its host pid.
  const a = [
    '--unshare-all',
    '--unshare-user',
    '--disable-userns',
    '--die-with-parent',
    '--new-session',
    '--as-pid-1',
    '--info-fd',
    '3',
    '--seccomp',
    String(seccompFd),
  ];
  // Inside the user namespace: uid 0 (still the unprivileged sandbox uid on the host) or the agent's 1000.
  a.push('--uid', inner, '--gid', inner, '--hostname', 'svc');
  // The base root filesystem read-only, /etc included: nothing of the host's /etc or binaries is seen.
  a.push(...launch.rootArgs);
  a.push('--tmpfs', '/usr/local/bin', '--ro-bind', launch.svcBinary, '/usr/local/bin/svc');
  a.push('--bind', join(disk, 'workspace'), '/workspace', '--bind', join(disk, 'svc'), '/svc');
  a.push('--bind', join(disk, 'tmp'), '/tmp');
  a.push('--proc', '/proc', '--dev', '/dev');
  if ('dir' in sockets) a.push('--ro-bind', sockets.dir, '/run/svc');
  else {
    a.push('--ro-bind', sockets.broker, '/run/svc/broker.sock');
    if (sockets.proxy) a.push('--ro-bind', sockets.proxy, '/run/svc/proxy.sock');
  }
  a.push('--chdir', cwd, '--clearenv');
  for (const [k, v] of Object.entries(env)) a.push('--setenv', k, v);
  return a;
}

/** How bwrap starts for this backend: as the sandbox's host uid, through setpriv only when capabilities require it. */
function launchAs(
  launch: Launch,
  argv: string[],
  more: Omit<LaunchAs, 'env' | 'uid'>,
): { argv: string[]; as: LaunchAs } {
  const env = { PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin' };
  if (!launch.heldCaps) return { argv, as: { env, uid: agentUid, ...more } };
  const setpriv = ['setpriv', `--reuid=${agentUid}`, `--regid=${agentUid}`, '--clear-groups', '--inh-caps=-all'];
  return { argv: [...setpriv, ...argv], as: { env, ...more } };
}

/**
 * A sandbox started ahead of its run (docs/design.md, "Sandbox provisioning"): namespaces made, mounts done, on a
 * spare filesystem of its own, its init waiting for the first command on a descriptor. Its /run/svc is a directory
 * that gets links to the run's sockets when a run takes it.
 */
interface ReadySandbox {
  readonly alive: boolean;
  proc: BwrapProcess;
  disk: string;
  /** Its directory outside any sandbox's (the sweep removes those of dead processes); `run` in it is /run/svc. */
  home: string;
  /** The name of its cgroups (without limits until a run takes it; then renamed to the sandbox's id). */
  cgroup: string;
}

/** The directory name of ready sandboxes of this process: no sandbox id starts with a dot. */
const readyPrefix = `.ready-${process.pid}-`;

/**
 * Sandboxes from Linux namespaces with bubblewrap, for machines without a container engine (docs/design.md, "Sandbox isolation"). A sandbox
 * is a host directory; every exec is a fresh bwrap whose first process is `svc init`, in the sandbox's cgroups. The
 * first exec of an agent's sandbox usually runs in one started ahead (docs/design.md, "Sandbox provisioning").
 */
export class BwrapBackend implements SandboxBackend {
  readonly kind = 'bwrap' as const;
  private cgroups: Cgroups | null = null;
  private version = 'unknown';
  private readonly disks: Disks;
  private launch: Launch | null = null;
  private pool: ReadyPool<ReadySandbox> | null = null;

  constructor(
    private readonly root: string,
    private readonly svcBinary: string,
    /** The unpacked base root filesystem (scripts/prepare-host.sh). */
    private readonly rootfs = defaultRootfs(),
    /** Ready sandboxes kept per disk size (0: none, every sandbox starts when its first command does). */
    private readonly readyPerSize = 1,
  ) {
    this.disks = new Disks(sandboxHostUid);
  }

  async prepare(): Promise<void> {
    const probe = spawnSync('bwrap', ['--version'], { encoding: 'utf8' });
    if (probe.status !== 0) throw new Error('bubblewrap (bwrap) is not installed: apt-get install bubblewrap');
    this.version = probe.stdout.trim().replace(/^bubblewrap\s*/, '');
    if (!existsSync(this.svcBinary))
      throw new Error(`the in-sandbox svc binary is missing at ${this.svcBinary}: run npm run build`);
    if (spawnSync('setpriv', ['--version']).status !== 0) throw new Error('setpriv (util-linux) is not installed');
    if (spawnSync('getent', ['passwd', String(sandboxHostUid)]).status === 0)
      throw new Error(`uid ${sandboxHostUid} is a user of this host; bwrap sandboxes need it unused`);
    const seccomp = hostSeccompProgram(arch());
    if (!seccomp) throw new Error(`no seccomp filter for the ${arch()} architecture (only x64 and arm64)`);
    const { args: rootArgs } = rootfsArgs(this.rootfs);
    mkdirSync(this.root, { recursive: true });
    await this.disks.prepare();
    this.cgroups = new Cgroups();
    this.sweepReady(this.cgroups);
    this.launch = { rootArgs, seccomp, svcBinary: this.svcBinary, disks: this.disks, heldCaps: holdsInheritableCaps() };
    if (this.readyPerSize > 0 && !this.pool) {
      this.pool = new ReadyPool<ReadySandbox>(
        (sizeMb) => this.startReady(sizeMb),
        (ready) => this.discardReady(ready),
        { perKey: this.readyPerSize, keysKept: readySizesKept, idleMs: 10 * 60_000, delayMs: 200 },
      );
    }
  }

  info(): SandboxInfo {
    return {
      backend: 'bwrap',
      version: this.version,
      arch: arch() === 'x64' ? 'amd64' : arch(),
      isolation: 'namespaces',
      capabilities: {
        networks: ['none', 'allowlist', 'internet'],
        separateUsers: false,
        limits: this.cgroups?.available ?? { cpu: false, memory: false, pids: false },
      },
      imageBuilds: false,
    };
  }

  /** Starts ready sandboxes with a `sizeMb` disk now, before any sandbox of that size is asked for. */
  warm(sizeMb: number): void {
    this.pool?.want(sizeMb);
  }

  /** Resolves when the ready sandboxes are all started (benchmarks and tests wait on it; runs never do). */
  async readySettled(): Promise<void> {
    await this.pool?.settled();
  }

  /** Ends the ready sandboxes and starts no more; sandboxes already handed out are not touched. */
  async close(): Promise<void> {
    await this.pool?.close();
    this.pool = null;
  }

  async create(spec: SandboxSpec): Promise<Sandbox> {
    const launch = this.launch;
    if (!launch) throw new Error('the bwrap backend was not prepared');
    if (spec.image !== null && spec.image !== baseImageName) {
      throw new Error(
        `the bwrap backend runs every sandbox on its base root filesystem (${baseImageName}) and cannot run the image ${spec.image}: use the docker backend (SVC_SANDBOX=docker) for jobs with their own image`,
      );
    }
    checkSandboxId(spec.id);
    const home = join(this.root, spec.id);
    mkdirSync(home);
    // Only an agent's sandbox starts ahead: a ready one's init runs as the agent inside its user namespace.
    const taken = spec.runAsRoot || spec.firstExecStreams ? null : (this.pool?.take(spec.limits.diskMb) ?? null);
    const ready = taken && this.adopt(taken, spec, home) ? taken : null;
    if (taken && !ready) await this.discardReady(taken);
    // The sandbox's own filesystem, its disk limit: /workspace, /svc and /tmp are directories of it.
    if (ready) this.disks.unclaimedUntilExit(ready.disk, false);
    const disk = ready?.disk ?? (await this.disks.attach(spec.limits.diskMb));
    const now = Date.now();
    const { env: _env, ...rest } = spec;
    const meta: Meta = {
      id: spec.id,
      labels: spec.labels,
      createdAt: now,
      expiresAt: now + spec.ttlMs,
      spec: rest,
      disk,
    };
    writeFileSync(join(home, 'meta.json'), JSON.stringify(meta));
    let procs: string[];
    try {
      procs = ready
        ? (this.cgroups?.adopt(ready.cgroup, spec.id, spec.limits) ?? [])
        : (this.cgroups?.create(spec.id, spec.limits) ?? []);
      // The run's priority from here on: its processes leave the refill's lower one.
      if (ready) for (const pid of [ready.proc.child.pid!, ready.proc.innerPid()]) setPriority(pid, 0);
    } catch (err) {
      if (!ready) throw err;
      ready.proc.killNow();
      this.cgroups?.destroy(ready.cgroup);
      this.cgroups?.destroy(spec.id);
      await this.disks.detach(disk);
      rmSync(home, { recursive: true, force: true });
      throw new Error(`could not give a ready sandbox its limits: ${(err as Error).message}`);
    }
    return new BwrapSandbox(spec, disk, procs, this.cgroups, launch, home, ready?.proc ?? null);
  }

  async list() {
    if (!existsSync(this.root)) return [];
    const out = [];
    for (const name of readdirSync(this.root)) {
      try {
        const meta = JSON.parse(readFileSync(join(this.root, name, 'meta.json'), 'utf8')) as Meta;
        out.push({ id: meta.id, labels: meta.labels, createdAt: meta.createdAt, expiresAt: meta.expiresAt });
      } catch {
        // not a sandbox directory
      }
    }
    return out;
  }

  async destroy(id: string): Promise<void> {
    checkSandboxId(id);
    this.cgroups?.destroy(id);
    let disk: string | undefined;
    try {
      disk = (JSON.parse(readFileSync(join(this.root, id, 'meta.json'), 'utf8')) as Partial<Meta>).disk;
    } catch {
      // no metadata: nothing mounted is known
    }
    if (disk && this.disks.owns(disk)) await this.disks.detach(disk);
    rmSync(join(this.root, id), { recursive: true, force: true });
  }

  /**
   * Starts a sandbox ahead of its run, at a lower priority: bwrap on a spare filesystem, its init (the agent inside)
   * waiting on descriptor 6 for the command, /run/svc a directory of its own, empty until a run takes it.
   */
  private async startReady(sizeMb: number): Promise<ReadySandbox> {
    const launch = this.launch!;
    const cgroup = `${readyPrefix}${randomUUID()}`;
    const home = join(this.root, cgroup);
    const run = join(home, 'run');
    mkdirSync(home, { mode: 0o711 });
    mkdirSync(run, { mode: 0o700 });
    chownSync(run, agentUid, agentUid);
    let disk: string | null = null;
    try {
      disk = await this.disks.attach(sizeMb, refillNice);
      this.disks.unclaimedUntilExit(disk, true);
      const env = { PATH: basePath, HOME: '/workspace', LANG: 'C.UTF-8' };
      const options = bwrapOptions(launch, disk, '1000', '/workspace', env, { dir: run });
      const argv = ['bwrap', '--args', String(argsFd), '/usr/local/bin/svc', 'init', '--command-fd', String(commandFd)];
      // Its own cgroups from the start, so that its cgroup namespace is rooted where the run's limits will be.
      const procs = this.cgroups?.create(cgroup, null) ?? [];
      const join = procs.length ? (pid: number) => procs.forEach((f) => writeFileSync(f, String(pid))) : undefined;
      const start = launchAs(launch, argv, { nice: refillNice, join });
      const proc = new BwrapProcess(start.argv, false, start.as, [nulFields(options), launch.seccomp], true);
      proc.hold(false);
      // Ready once its init waits for the command: mounts done, signals handled, nothing left of bwrap's setup.
      if (!(await proc.waiting) || !proc.innerPid()) {
        const { output } = await proc.supervise({});
        throw new Error(`a ready sandbox did not start: ${output.toString('utf8').trim()}`);
      }
      return {
        proc,
        disk,
        home,
        cgroup,
        get alive() {
          return !proc.ended;
        },
      };
    } catch (err) {
      this.cgroups?.destroy(cgroup);
      if (disk) {
        this.disks.unclaimedUntilExit(disk, false);
        await this.disks.detach(disk);
      }
      rmSync(home, { recursive: true, force: true });
      throw err;
    }
  }

  /**
   * Gives a ready sandbox to `spec`: its /run/svc directory moves into the sandbox's home and gets links to the run's
   * sockets. False when that cannot be done (a socket missing, or on another filesystem): the caller discards it.
   */
  private adopt(ready: ReadySandbox, spec: SandboxSpec, home: string): boolean {
    const run = join(home, 'run');
    try {
      renameSync(join(ready.home, 'run'), run);
      linkSync(spec.brokerSocket, join(run, 'broker.sock'));
      if (spec.proxySocket) linkSync(spec.proxySocket, join(run, 'proxy.sock'));
      rmSync(ready.home, { recursive: true, force: true });
      ready.home = home;
      return ready.alive;
    } catch {
      rmSync(run, { recursive: true, force: true });
      return false;
    }
  }

  private async discardReady(ready: ReadySandbox): Promise<void> {
    ready.proc.killNow();
    await ready.proc.exited;
    this.cgroups?.destroy(ready.cgroup);
    this.disks.unclaimedUntilExit(ready.disk, false);
    await this.disks.detach(ready.disk);
    if (basename(ready.home).startsWith(readyPrefix)) rmSync(ready.home, { recursive: true, force: true });
  }

  /** Removes what ready sandboxes of processes no longer alive left: directories and cgroups (their filesystems: Disks). */
  private sweepReady(cgroups: Cgroups): void {
    const stale = (name: string) => {
      const pid = /^\.ready-(\d+)-/.exec(name)?.[1];
      return pid !== undefined && Number(pid) !== process.pid && !processAlive(Number(pid));
    };
    for (const name of readdirSync(this.root).filter(stale))
      rmSync(join(this.root, name), { recursive: true, force: true });
    cgroups.sweep(stale);
  }
}

/** Options on a descriptor: each NUL-terminated. */
function nulFields(fields: string[]): Buffer {
  return Buffer.from(fields.map((o) => `${o}\0`).join(''));
}

class BwrapSandbox implements Sandbox {
  private readonly files: HostFiles;
  private destroyed = false;
  /** Aborted by stopProcesses: every exec is killed and no new one starts. */
  private readonly stopped = new AbortController();
  private readonly running = new Set<Promise<unknown>>();

  constructor(
    private readonly spec: SandboxSpec,
    private readonly dir: string,
    private readonly cgroupProcs: string[],
    private readonly cgroups: Cgroups | null,
    private readonly launch: Launch,
    /** The sandbox's metadata directory; `dir` is its filesystem. */
    private readonly home: string,
    /** Started ahead: runs the first exec when that exec is an agent's in /workspace with no stdin. */
    private first: BwrapProcess | null,
  ) {
    this.files = new HostFiles(
      { '/workspace': join(dir, 'workspace'), '/svc': join(dir, 'svc'), '/tmp': join(dir, 'tmp') },
      agentUid,
    );
    if (first) this.running.add(first.exited);
  }

  get id(): string {
    return this.spec.id;
  }

  private env(options: ExecOptions): Record<string, string> {
    return { PATH: basePath, HOME: '/workspace', LANG: 'C.UTF-8', ...this.spec.env, ...(options.env ?? {}) };
  }

  private inner(options: ExecOptions): '0' | '1000' {
    return (options.user ?? (this.spec.runAsRoot ? 'root' : 'agent')) === 'root' ? '0' : '1000';
  }

  async exec(options: ExecOptions): Promise<ExecResult> {
    if (this.destroyed) throw new Error('the sandbox was destroyed');
    if (this.stopped.signal.aborted) throw new Error("the sandbox's processes were stopped: it runs nothing more");
    const env = this.env(options);
    const cwd = options.cwd ?? '/workspace';
    const fields = [cwd, ...Object.entries(env).flat(), ...options.cmd];
    if (fields.some((o) => o.includes('\0'))) throw new Error('an environment variable or path holds a NUL byte');
    const first = this.first;
    this.first = null;
    // The ready sandbox takes the command only as a fresh bwrap would run it; for anything else it is ended.
    const fits =
      first !== null &&
      !first.ended &&
      options.stdin === undefined &&
      cwd === '/workspace' &&
      this.inner(options) === '1000' &&
      Object.keys(env).every((k) => k !== '' && !k.includes('='));
    if (first && !fits) first.killNow();
    const before = this.cgroups?.memoryFailures(this.spec.id) ?? 0;
    const supervise = { ...options, kill: this.stopped.signal };
    let launched: Promise<Omit<ExecResult, 'oomKilled'>>;
    if (first && fits) {
      const startedAt = Date.now();
      first
        .pipe(commandFd)
        ?.end(nulFields([cwd, ...Object.entries(env).map(([k, v]) => `${k}=${v}`), '', ...options.cmd]));
      launched = first.supervise(supervise, startedAt);
    } else {
      const sockets = { broker: this.spec.brokerSocket, proxy: this.spec.proxySocket };
      const fdOptions = bwrapOptions(this.launch, this.dir, this.inner(options), cwd, env, sockets);
      const argv = ['bwrap', '--args', String(argsFd), '/usr/local/bin/svc', 'init', '--', ...options.cmd];
      // bwrap runs as the sandbox's host uid with no supplementary group, and joins the sandbox's cgroups before it
      // reads its options (docs/design.md, "Sandbox provisioning").
      const procs = this.cgroupProcs;
      const join = procs.length ? (pid: number) => procs.forEach((f) => writeFileSync(f, String(pid))) : undefined;
      const start = launchAs(this.launch, argv, { join });
      const proc = new BwrapProcess(start.argv, options.stdin !== undefined, start.as, [
        nulFields(fdOptions),
        this.launch.seccomp,
      ]);
      launched = proc.supervise(supervise);
    }
    this.running.add(launched);
    const result = await launched.finally(() => this.running.delete(launched));
    const oomKilled = result.exitCode === 137 && (this.cgroups?.memoryFailures(this.spec.id) ?? 0) > before;
    return { ...result, oomKilled };
  }

  /**
   * Every process of the sandbox descends from one of its execs, in that exec's pid namespace: killing the
   * namespaces' init and waiting for every exec to end leaves none. The cgroup, where there is one, is checked too.
   */
  async stopProcesses(): Promise<void> {
    this.stopped.abort();
    // A ready sandbox no exec took is ended the same way.
    this.first?.killNow();
    this.first = null;
    const ended = Promise.all([...this.running]).then(() => true);
    // An exec that does not end soon has something outside its namespace's reach (bwrap killed before its child
    // was tied to it): the cgroup, when there is one, holds it too and is emptied by SIGKILL.
    let gone = await within(ended, 3000);
    if (this.cgroups && !(await this.cgroups.empty(this.spec.id)))
      throw new Error(`processes of sandbox ${this.spec.id} survived the kill`);
    gone ||= await within(ended, 2000);
    if (!gone) throw new Error(`commands of sandbox ${this.spec.id} did not end after SIGKILL`);
  }

  async putFiles(files: Parameters<Sandbox['putFiles']>[0]): Promise<void> {
    await this.files.put(files);
  }

  async readFile(path: string, maxBytes: number): Promise<Buffer | null> {
    return this.files.read(path, maxBytes);
  }

  async readDir(dir: string, maxTotalBytes: number) {
    return this.files.readDir(dir, maxTotalBytes);
  }

  async destroy(): Promise<void> {
    this.destroyed = true;
    // Nothing of the sandbox may run while the host takes its directory apart (docs/security.md, "Reading back from
    // sandboxes"); the cgroup then catches anything that got out of an exec's namespace.
    await this.stopProcesses().catch(ignoreFailure('destroy goes on: the cgroup kill below ends what survived'));
    this.cgroups?.destroy(this.spec.id);
    await this.launch.disks.detach(this.dir);
    rmSync(this.home, { recursive: true, force: true });
  }
}
