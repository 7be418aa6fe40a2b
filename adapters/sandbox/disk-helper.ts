import { spawn, type ChildProcess } from 'node:child_process';

/**
 * The shell loop that makes and unmounts the sandboxes' filesystems (docs/design.md, "Sandbox provisioning"). Every
 * process the served process spawns is a fork of all of it (about 150 MB of mappings, 8 ms a fork), while this loop
 * is a ~2 MB shell that forks from itself: the served process forks once, when the loop starts.
 *
 * One request a line, `<id> <op> <nice> <target> <image>`, each run in a child of the loop so that a slow mkfs does
 * not hold an unmount; one answer a line, `<id> <status> <message>`, status 0 when it worked. Nothing in a request
 * comes from a member: the paths are the pool's own and are checked again here, the priority is a number.
 * `jobs` after each request forgets the children that ended (a non-interactive dash keeps them otherwise). An answer
 * without a message starts no process: at 10-20 ms of CPU a process start under load, `tr` and `head` on every
 * answer doubled what the helper's side cost.
 */
export const diskHelperScript = `
answer() {
  if [ -z "$3" ]; then printf '%s %s\\n' "$1" "$2"
  else printf '%s %s %s\\n' "$1" "$2" "$(printf '%s' "$3" | tr '\\n\\t' '  ' | head -c 2000)"; fi
}
ours() {
  case "$1" in /*) ;; *) return 1 ;; esac
  case "$1" in *[!A-Za-z0-9/._-]* | */../* | */.. | */./* | */. | *//*) return 1 ;; esac
}
while IFS=' ' read -r id op nice target image more; do
  jobs >/dev/null
  case "$id" in '' | *[!0-9]*) continue ;; esac
  case "$nice" in '' | *[!0-9]* | ???*) answer "$id" 2 "refused: the priority is not a number"; continue ;; esac
  if [ -n "$more" ] || [ "$nice" -gt 19 ]; then answer "$id" 2 "refused: malformed request"; continue; fi
  if ! ours "$target"; then answer "$id" 2 "refused: not a path of the disk pool"; continue; fi
  case "$op" in
    make)
      if ! ours "$image"; then answer "$id" 2 "refused: not a path of the disk pool"; continue; fi
      (
        if out=$(nice -n "$nice" mkfs.ext4 -q -F -m 0 -O ^has_journal -E lazy_itable_init=1,nodiscard "$image" 2>&1) &&
          out=$(nice -n "$nice" mount -o loop,nodev,nosuid,noatime "$image" "$target" 2>&1); then
          answer "$id" 0 ""
        else answer "$id" 1 "$out"; fi
      ) &
      ;;
    umount)
      (
        if out=$(umount "$target" 2>&1) || out=$(umount -l "$target" 2>&1); then answer "$id" 0 ""
        else answer "$id" 1 "$out"; fi
      ) &
      ;;
    *) answer "$id" 2 "refused: unknown operation" ;;
  esac
done
`;

/** The name the loop shows in `ps` (its $0). */
export const diskHelperName = 'svc-disk-helper';

/** Whether the loop accepts `path`: absolute, plain characters, no `.` or `..` step, no `//` (it checks the same). */
export function diskPathAccepted(path: string): boolean {
  return (
    /^\/[A-Za-z0-9/._-]*$/.test(path) && !path.split('/').some((s) => s === '.' || s === '..') && !path.includes('//')
  );
}

/** A request the loop refused or could not do, or the loop ending before it answered. */
export class DiskHelperError extends Error {
  constructor(
    message: string,
    /** True when the loop ended with the request unanswered: it may or may not have been done. */
    readonly helperGone = false,
  ) {
    super(message);
  }
}

interface Pending {
  resolve: () => void;
  reject: (err: Error) => void;
}

/**
 * The served process's side of the loop: started on the first request, started again on the next request after it
 * died (its unanswered requests fail with `helperGone`), and never what keeps the process alive unless it owes an
 * answer. It is a process group of its own, so that its children die with it when it is killed.
 */
export class DiskHelper {
  private child: ChildProcess | null = null;
  private readonly pending = new Map<number, Pending>();
  private next = 1;
  private buffered = '';
  private closed = false;

  /** Formats `image` and mounts it at `target`, both at the priority `nice`. */
  make(target: string, image: string, nice: number): Promise<void> {
    return this.request('make', nice, target, image);
  }

  /** Unmounts `target`, lazily when it is busy. */
  unmount(target: string): Promise<void> {
    return this.request('umount', 0, target, '-');
  }

  /** The loop's pid, while it runs. */
  get pid(): number | null {
    return this.child?.pid ?? null;
  }

  /** Ends the loop (its running children finish their request); a later request starts it again unless `final`. */
  stop(final = true): void {
    this.closed ||= final;
    this.child?.stdin?.end();
  }

  private request(op: 'make' | 'umount', nice: number, target: string, image: string): Promise<void> {
    if (!Number.isInteger(nice) || nice < 0 || nice > 19)
      return Promise.reject(new DiskHelperError(`refused: the priority ${nice} is not 0-19`));
    for (const p of op === 'make' ? [target, image] : [target]) {
      if (!diskPathAccepted(p)) return Promise.reject(new DiskHelperError(`refused: ${JSON.stringify(p)}`));
    }
    if (this.closed) return Promise.reject(new DiskHelperError('the disk pool is closed'));
    const child = this.child ?? this.start();
    const id = this.next++;
    return new Promise<void>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.hold(true);
      child.stdin!.write(`${id} ${op} ${nice} ${target} ${image}\n`);
    });
  }

  private start(): ChildProcess {
    const child = spawn('/bin/sh', ['-c', diskHelperScript, diskHelperName], {
      stdio: ['pipe', 'pipe', 'ignore'],
      detached: true,
      env: { PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin', LC_ALL: 'C' },
    });
    this.child = child;
    this.buffered = '';
    child.stdin!.on('error', () => undefined);
    child.stdout!.setEncoding('utf8');
    child.stdout!.on('data', (text: string) => {
      if (this.child !== child) return;
      this.buffered += text;
      let nl: number;
      while ((nl = this.buffered.indexOf('\n')) >= 0) {
        this.answer(this.buffered.slice(0, nl));
        this.buffered = this.buffered.slice(nl + 1);
      }
    });
    const gone = (why: string) => {
      if (this.child !== child) return;
      this.child = null;
      // Its children too: a mount finishing after the caller gave up would be a mount nobody knows of.
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // the group is gone already
      }
      const owed = [...this.pending.values()];
      this.pending.clear();
      for (const p of owed) p.reject(new DiskHelperError(`the disk helper ended (${why}) before it answered`, true));
    };
    child.on('error', (err) => gone(err.message));
    child.on('exit', (code, sig) => gone(sig ?? `exit ${code}`));
    this.hold(false, child);
    return child;
  }

  private answer(line: string): void {
    const m = /^(\d+) (\d+) ?(.*)$/.exec(line);
    const p = m ? this.pending.get(Number(m[1])) : undefined;
    if (!m || !p) return;
    this.pending.delete(Number(m[1]));
    if (m[2] === '0') p.resolve();
    else p.reject(new DiskHelperError(m[3]!.trim() || `failed with status ${m[2]}`));
    if (this.pending.size === 0) this.hold(false);
  }

  /** Whether the loop keeps the event loop alive: only while it owes an answer. */
  private hold(keep: boolean, child = this.child): void {
    if (!child) return;
    const handles = [child, child.stdin, child.stdout] as Array<{ ref?: () => void; unref?: () => void } | null>;
    for (const h of handles) (keep ? h?.ref : h?.unref)?.call(h);
  }
}
