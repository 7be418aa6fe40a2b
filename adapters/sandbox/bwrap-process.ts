import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { setPriority } from 'node:os';
import { Readable, type Writable } from 'node:stream';
import { OutputCollector } from './output.js';
import type { ExecOptions, ExecResult } from './types.js';

const killGraceMs = 1500;
/** How often a SIGTERM waits for the init to take it (see `termWhenReady`). */
const termRetryMs = 5;

/** How bwrap is started: its environment, the host uid it runs as (none: the argv changes it), the cgroups it joins. */
export interface LaunchAs {
  env: NodeJS.ProcessEnv;
  uid?: number;
  join?: (pid: number) => void;
  /** Applied before bwrap reads its options, so every process of the sandbox inherits it (a spare's low priority). */
  nice?: number;
}

export type BwrapExit = Omit<ExecResult, 'oomKilled'>;
export type SuperviseOptions = Pick<ExecOptions, 'timeoutMs' | 'signal' | 'stdin' | 'onOutput' | 'maxOutputBytes'> & {
  kill?: AbortSignal;
};

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // gone already
  }
}

/**
 * Whether SIGTERM is blocked in `pid`, which svc init does before anything else: from then on a SIGTERM waits for
 * its signalfd. Before that, as the namespace's pid 1 without a handler, it would drop the signal.
 */
function takesTerm(pid: number): boolean {
  try {
    const mask = /^SigBlk:\s*([0-9a-f]+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? '0';
    return (BigInt(`0x${mask}`) & (1n << 14n)) !== 0n;
  } catch {
    return false;
  }
}

/**
 * One bwrap process: spawned, tied to the sandbox's cgroups before it reads its options, its init's host pid read
 * from --info-fd (descriptor 3). Output that comes before `supervise` (a sandbox started ahead of its run) is kept
 * for it. Descriptors 4 and up are `inputs`, each written and closed; with `command`, one more pipe stays open after
 * them for the init's first command (svc init --command-fd), on which the init first says it is waiting.
 */
export class BwrapProcess {
  readonly child: ChildProcess;
  /** Set when the process could not be tied to its cgroups: it was killed before it started anything. */
  readonly refused: string | null = null;
  readonly exited: Promise<{ code: number | null; sig: NodeJS.Signals | null }>;
  private info = '';
  private readonly early: Buffer[] = [];
  private sink: ((b: Buffer) => void) | null = null;
  private readonly infoListeners: Array<() => void> = [];
  private done = false;
  /** With `command`: resolves true when the init said it waits for its command, false when the process ended first. */
  readonly waiting: Promise<boolean>;

  constructor(argv: string[], withStdin: boolean, launch: LaunchAs, inputs: Buffer[], command = false) {
    const pipes = inputs.length + (command ? 1 : 0);
    this.child = spawn(argv[0]!, argv.slice(1), {
      stdio: [
        withStdin ? 'pipe' : 'ignore',
        'pipe',
        'pipe',
        'pipe',
        ...Array.from({ length: pipes }, () => 'pipe' as const),
      ],
      detached: true,
      env: launch.env,
      ...(launch.uid === undefined ? {} : { uid: launch.uid, gid: launch.uid }),
    });
    const child = this.child;
    this.exited = new Promise((resolve) => {
      child.on('error', () => undefined);
      child.on('close', (code, sig) => {
        this.done = true;
        resolve({ code, sig });
        for (const f of this.infoListeners.splice(0)) f();
      });
    });
    // bwrap reads its options (descriptor 4) to their end before it makes any process, so a process that joins the
    // sandbox's cgroups now, before they are written, has every process of the sandbox inside them.
    if (child.pid) {
      try {
        if (launch.nice !== undefined) setPriority(child.pid, launch.nice);
        launch.join?.(child.pid);
      } catch (err) {
        this.refused = `svc: could not put the command in the sandbox's cgroups: ${(err as Error).message}\n`;
        signal(-child.pid, 'SIGKILL');
      }
    }
    inputs.forEach((data, i) => {
      const pipe = this.pipe(4 + i);
      if (this.refused) pipe?.end();
      else pipe?.end(data);
    });
    const commandPipe = command ? (child.stdio[4 + inputs.length] as Readable | null) : null;
    this.waiting = new Promise((resolve) => {
      if (!commandPipe) return resolve(false);
      commandPipe.once('data', () => resolve(true));
      this.exited.then(
        () => resolve(false),
        () => resolve(false),
      );
    });
    const keep = (b: Buffer) => (this.sink ? this.sink(b) : this.early.push(b));
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    (child.stdio[3] as Readable | null)?.on('data', (d: Buffer) => {
      this.info += d.toString('utf8');
      if (this.innerPid()) for (const f of this.infoListeners.splice(0)) f();
    });
  }

  /** A writable descriptor of the child (4 and up), errors ignored: a process gone early just drops what it was sent. */
  pipe(fd: number): Writable | null {
    const p = this.child.stdio[fd] as Writable | null | undefined;
    p?.on('error', () => undefined);
    return p ?? null;
  }

  /** The init's host pid; 0 until bwrap told it. */
  innerPid(): number {
    return Number(/"child-pid":\s*(\d+)/.exec(this.info)?.[1] ?? 0);
  }

  /** Whether the process has ended. */
  get ended(): boolean {
    return this.done;
  }

  /**
   * Whether the process keeps the event loop alive: a ready sandbox waiting in its pool does not (the service and
   * the tests exit with it waiting; --die-with-parent ends it then), an exec does.
   */
  hold(keep: boolean): void {
    const handles = [this.child, ...this.child.stdio] as Array<{ ref?: () => void; unref?: () => void } | null>;
    for (const h of handles) (keep ? h?.ref : h?.unref)?.call(h);
  }

  /** Kills everything at once: the namespace's pid 1 (the kernel then ends the namespace) and the spawned group. */
  killNow(): void {
    const inner = this.innerPid();
    if (inner) signal(inner, 'SIGKILL');
    if (this.child.pid) signal(-this.child.pid, 'SIGKILL');
  }

  /**
   * Runs the exec to its end, keeping combined output (up to a cap). A timeout or cancel sends SIGTERM to the
   * sandbox's init, which passes it on to the command and kills the rest after its grace; the init and the spawned
   * process group are killed when that grace is over.
   */
  supervise(options: SuperviseOptions, startedAt = Date.now()): Promise<BwrapExit> {
    this.hold(true);
    const out = new OutputCollector(options.maxOutputBytes, options.onOutput);
    for (const b of this.early.splice(0)) out.push(b);
    this.sink = out.push;
    // Signals go to the init, never to bwrap alone while the init's pid is unknown: bwrap killed between starting
    // its child and tying it to itself (--die-with-parent) leaves the command running, unseen, to its end. What was
    // asked before the pid came is sent when it comes.
    let owed: NodeJS.Signals | null = null;
    let killTimer: NodeJS.Timeout | null = null;
    let fallback: NodeJS.Timeout | null = null;
    let termTimer: NodeJS.Timeout | null = null;
    // A SIGTERM waits until the init can take it: one that comes before the init has blocked it is lost, and the
    // command would run on to the kill after the grace.
    const termWhenReady = () => {
      termTimer = null;
      const inner = this.innerPid();
      if (owed !== 'SIGTERM' || !inner || this.done) return;
      if (takesTerm(inner)) signal(inner, 'SIGTERM');
      else termTimer = setTimeout(termWhenReady, termRetryMs);
    };
    const deliver = () => {
      const inner = this.innerPid();
      if (!owed || !inner) return;
      if (owed === 'SIGTERM') return termWhenReady();
      signal(inner, owed);
      if (this.child.pid) signal(-this.child.pid, 'SIGKILL');
    };
    this.infoListeners.push(deliver);
    // No grace: SIGKILL to the namespace's pid 1 makes the kernel kill every process of that namespace at once. A
    // bwrap that has not told the pid after a while is stuck before its child, and its group is killed.
    const kill = () => {
      owed = 'SIGKILL';
      deliver();
      fallback ??= setTimeout(() => this.child.pid && signal(-this.child.pid, 'SIGKILL'), killGraceMs);
    };
    const stop = () => {
      if (owed) return;
      // A command stopped before its init is known has had no time to do anything worth a grace (and an init
      // signalled before it sets its handlers would ignore SIGTERM).
      if (!this.innerPid()) return kill();
      owed = 'SIGTERM';
      deliver();
      // The init's own grace is 1.5 s; everything is killed a little after it in case the init itself is stuck.
      killTimer = setTimeout(kill, killGraceMs + 300);
    };
    let timedOut = false;
    let cancelled = false;
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
    const stdin = this.child.stdin;
    if (options.stdin !== undefined && stdin) {
      stdin.on('error', () => undefined);
      if (options.stdin instanceof Readable) options.stdin.pipe(stdin);
      else stdin.end(options.stdin);
    }
    return this.exited.then(({ code, sig }) => {
      for (const t of [timer, killTimer, fallback, termTimer]) if (t) clearTimeout(t);
      options.signal?.removeEventListener('abort', onAbort);
      options.kill?.removeEventListener('abort', onKill);
      let exitCode =
        code ?? (sig ? 128 + (({ SIGKILL: 9, SIGTERM: 15, SIGINT: 2 } as Record<string, number>)[sig] ?? 1) : -1);
      if (this.refused) {
        out.push(Buffer.from(this.refused));
        exitCode = -1;
      }
      return { exitCode, output: out.output, bytes: out.bytes, timedOut, cancelled, ms: Date.now() - startedAt };
    });
  }
}
