import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { arch } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { Cgroups } from './cgroups.js';
import { Disks } from './disk.js';
import { HostFiles } from './host-files.js';
import { checkSandboxId } from './ids.js';
import { OutputCollector } from './output.js';
import { baseImageName, defaultRootfs, rootfsArgs } from './rootfs.js';
import { hostSeccompProgram } from './seccomp.js';
import type { ExecOptions, ExecResult, Sandbox, SandboxBackend, SandboxInfo, SandboxSpec } from './types.js';
import { ignoreFailure } from '../../domain/ignore-failure.js';

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
const killGraceMs = 1500;

/** What every exec of a prepared backend needs. */
interface Launch {
  rootArgs: string[];
  seccomp: Buffer;
  svcBinary: string;
  disks: Disks;
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

/**
 * Spawns bwrap, keeping combined output (up to a cap). A timeout or cancel sends SIGTERM to the sandbox's init (its
 * host pid comes on fd 3, bwrap's --info-fd), which passes it on to the command and kills the rest after its grace;
 * the init and the spawned process group are killed when that grace is over.
 */
function runBwrap(
  argv: string[],
  options: Pick<ExecOptions, 'timeoutMs' | 'signal' | 'stdin' | 'onOutput' | 'maxOutputBytes'> & { kill?: AbortSignal },
  env: NodeJS.ProcessEnv,
  inputs: Buffer[] = [],
): Promise<Omit<ExecResult, 'oomKilled'>> {
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn(argv[0]!, argv.slice(1), {
      stdio: [
        options.stdin === undefined ? 'ignore' : 'pipe',
        'pipe',
        'pipe',
        'pipe',
        ...inputs.map(() => 'pipe' as const),
      ],
      detached: true,
      env,
    });
    // Descriptors 4 and up: bwrap reads each to its end before it starts the sandbox.
    inputs.forEach((data, i) => {
      const pipe = child.stdio[4 + i] as unknown as NodeJS.WritableStream & { on(e: 'error', f: () => void): void };
      pipe.on('error', () => undefined);
      pipe.end(data);
    });
    const signal = (pid: number, sig: NodeJS.Signals) => {
      try {
        process.kill(pid, sig);
      } catch {
        // gone already
      }
    };
    let info = '';
    const innerPid = () => Number(/"child-pid":\s*(\d+)/.exec(info)?.[1] ?? 0);
    // Signals go to the init, never to bwrap alone while the init's pid is unknown: bwrap killed between starting its
    // child and tying it to itself (--die-with-parent) leaves the command running, unseen, to its end. What was asked
    // before the pid came is sent when it comes.
    let owed: NodeJS.Signals | null = null;
    let killTimer: NodeJS.Timeout | null = null;
    let fallback: NodeJS.Timeout | null = null;
    const deliver = () => {
      const inner = innerPid();
      if (!owed || !inner) return;
      signal(inner, owed);
      if (owed === 'SIGKILL') signal(-child.pid!, 'SIGKILL');
    };
    (child.stdio[3] as Readable).on('data', (d: Buffer) => {
      info += d.toString('utf8');
      deliver();
    });
    // No grace: SIGKILL to the namespace's pid 1 makes the kernel kill every process of that namespace at once. A
    // bwrap that has not told the pid after a while is stuck before its child, and its group is killed.
    const kill = () => {
      owed = 'SIGKILL';
      deliver();
      fallback ??= setTimeout(() => signal(-child.pid!, 'SIGKILL'), killGraceMs);
    };
    const stop = () => {
      if (owed) return;
      // A command stopped before its init is known has had no time to do anything worth a grace (and an init
      // signalled before it sets its handlers would ignore SIGTERM).
      if (!innerPid()) return kill();
      owed = 'SIGTERM';
      deliver();
      // The init's own grace is 1.5 s; everything is killed a little after it in case the init itself is stuck.
      killTimer = setTimeout(kill, killGraceMs + 300);
    };
    const out = new OutputCollector(options.maxOutputBytes, options.onOutput);
    let timedOut = false;
    let cancelled = false;
    child.stdout!.on('data', out.push);
    child.stderr!.on('data', out.push);
    const timer = options.timeoutMs
      ? setTimeout(() => {
          timedOut = true;
          stop();
        }, options.timeoutMs)
      : null;
    const onAbort = () => {
      cancelled = true;
      stop();
    };
    if (options.signal?.aborted) onAbort();
    else options.signal?.addEventListener('abort', onAbort, { once: true });
    const onKill = () => {
      cancelled = true;
      kill();
    };
    if (options.kill?.aborted) onKill();
    else options.kill?.addEventListener('abort', onKill, { once: true });
    if (options.stdin !== undefined) {
      child.stdin!.on('error', () => undefined);
      if (options.stdin instanceof Readable) options.stdin.pipe(child.stdin!);
      else child.stdin!.end(options.stdin);
    }
    let exitCode = -1;
    child.on('error', () => {
      exitCode = -1;
    });
    child.on('close', (code, sig) => {
      if (timer) clearTimeout(timer);
      if (killTimer) clearTimeout(killTimer);
      if (fallback) clearTimeout(fallback);
      options.signal?.removeEventListener('abort', onAbort);
      options.kill?.removeEventListener('abort', onKill);
      exitCode =
        code ?? (sig ? 128 + (({ SIGKILL: 9, SIGTERM: 15, SIGINT: 2 } as Record<string, number>)[sig] ?? 1) : -1);
      resolve({ exitCode, output: out.output, bytes: out.bytes, timedOut, cancelled, ms: Date.now() - started });
    });
  });
}

/**
 * Sandboxes from Linux namespaces with bubblewrap, for machines without a container engine (docs/design.md, "Sandbox isolation"). A sandbox
 * is a host directory; every exec is a fresh bwrap whose first process is `svc init`, in the sandbox's cgroups.
 */
export class BwrapBackend implements SandboxBackend {
  readonly kind = 'bwrap' as const;
  private cgroups: Cgroups | null = null;
  private version = 'unknown';
  private readonly disks: Disks;
  private launch: Launch | null = null;

  constructor(
    private readonly root: string,
    private readonly svcBinary: string,
    /** The unpacked base root filesystem (scripts/prepare-host.sh). */
    private readonly rootfs = defaultRootfs(),
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
    this.launch = { rootArgs, seccomp, svcBinary: this.svcBinary, disks: this.disks };
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

  async create(spec: SandboxSpec): Promise<Sandbox> {
    if (!this.launch) throw new Error('the bwrap backend was not prepared');
    if (spec.image !== null && spec.image !== baseImageName) {
      throw new Error(
        `the bwrap backend runs every sandbox on its base root filesystem (${baseImageName}) and cannot run the image ${spec.image}: use the docker backend (SVC_SANDBOX=docker) for jobs with their own image`,
      );
    }
    checkSandboxId(spec.id);
    const dir = join(this.root, spec.id);
    mkdirSync(dir);
    // The sandbox's own filesystem, its disk limit: /workspace, /svc and /tmp are directories of it.
    const disk = await this.disks.attach(spec.limits.diskMb);
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
    writeFileSync(join(dir, 'meta.json'), JSON.stringify(meta));
    const procs = this.cgroups?.create(spec.id, spec.limits) ?? [];
    return new BwrapSandbox(spec, disk, this.svcBinary, procs, this.cgroups, this.launch, dir);
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
    private readonly svcBinary: string,
    private readonly cgroupProcs: string[],
    private readonly cgroups: Cgroups | null,
    private readonly launch: Launch,
    /** The sandbox's metadata directory; `dir` is its filesystem. */
    private readonly home: string,
  ) {
    this.files = new HostFiles(
      { '/workspace': join(dir, 'workspace'), '/svc': join(dir, 'svc'), '/tmp': join(dir, 'tmp') },
      agentUid,
    );
  }

  get id(): string {
    return this.spec.id;
  }

  /**
   * The bwrap command line, and the options it reads from a descriptor: the environment (secrets, the run token) is
   * there and never on a command line, which any host user can read in /proc (docs/security.md, "Sandbox isolation").
   */
  private args(options: ExecOptions): { argv: string[]; fdOptions: string[] } {
    const env: Record<string, string> = {
      PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
      HOME: '/workspace',
      LANG: 'C.UTF-8',
      ...this.spec.env,
      ...(options.env ?? {}),
    };
    const user = options.user ?? (this.spec.runAsRoot ? 'root' : 'agent');
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
    const inner = user === 'root' ? '0' : '1000';
    a.push('--uid', inner, '--gid', inner, '--hostname', 'svc');
    // The base root filesystem read-only, /etc included: nothing of the host's /etc or binaries is seen.
    a.push(...this.launch.rootArgs);
    a.push('--tmpfs', '/usr/local/bin', '--ro-bind', this.svcBinary, '/usr/local/bin/svc');
    a.push(
      '--bind',
      join(this.dir, 'workspace'),
      '/workspace',
      '--bind',
      join(this.dir, 'svc'),
      '/svc',
      '--bind',
      join(this.dir, 'tmp'),
      '/tmp',
    );
    a.push('--proc', '/proc', '--dev', '/dev');
    a.push('--ro-bind', this.spec.brokerSocket, '/run/svc/broker.sock');
    if (this.spec.proxySocket) a.push('--ro-bind', this.spec.proxySocket, '/run/svc/proxy.sock');
    a.push('--chdir', options.cwd ?? '/workspace', '--clearenv');
    for (const [k, v] of Object.entries(env)) a.push('--setenv', k, v);
    return {
      argv: ['bwrap', '--args', String(argsFd), '/usr/local/bin/svc', 'init', '--', ...options.cmd],
      fdOptions: a,
    };
  }

  async exec(options: ExecOptions): Promise<ExecResult> {
    if (this.destroyed) throw new Error('the sandbox was destroyed');
    if (this.stopped.signal.aborted) throw new Error("the sandbox's processes were stopped: it runs nothing more");
    const { argv: bwrap, fdOptions } = this.args(options);
    if (fdOptions.some((o) => o.includes('\0'))) throw new Error('an environment variable or path holds a NUL byte');
    const setpriv = [
      'setpriv',
      `--reuid=${agentUid}`,
      `--regid=${agentUid}`,
      '--clear-groups',
      '--inh-caps=-all',
      ...bwrap,
    ];
    // The process joins the sandbox's cgroups before bwrap starts, so every process inside is limited.
    const join = this.cgroupProcs.map((f) => `echo $$ > '${f}'`).join(' && ');
    const argv = join ? ['sh', '-c', `${join} && exec "$@"`, 'sh', ...setpriv] : setpriv;
    const before = this.cgroups?.memoryFailures(this.spec.id) ?? 0;
    const launched = runBwrap(
      argv,
      { ...options, kill: this.stopped.signal },
      { PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin' },
      [Buffer.from(fdOptions.map((o) => `${o}\0`).join('')), this.launch.seccomp],
    );
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
