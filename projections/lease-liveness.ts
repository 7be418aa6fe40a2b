import { readFileSync, readlinkSync } from 'node:fs';

/**
 * Where a process runs, precisely enough to tell from another process whether it is still alive
 * (docs/design.md, "Projector lease"): the kernel's boot, the PID namespace, the pid and its start time. Null where
 * /proc cannot say (not Linux, or hidden): such a holder is only ever replaced when its lease runs out.
 */
export function processIdentity(pid: number = process.pid): string | null {
  try {
    const boot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    const ns = readlinkSync('/proc/self/ns/pid');
    const start = startTicks(pid);
    return boot && ns && start !== null ? `${boot}/${ns}/${pid}/${start}` : null;
  } catch {
    return null;
  }
}

/** Field 22 of /proc/PID/stat, the clock ticks since boot at which the process started; null when unreadable. */
function startTicks(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name may hold spaces and parentheses: the fields after it start past the last ')'.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

/**
 * True only when the process an identity names is certainly gone: it was started in this boot and this PID
 * namespace (so its pid means the same here), and no process has that pid, or the one that has it started at
 * another time (the pid was reused). Anything this process cannot see counts as alive, the safe side: a live holder
 * taken for dead would let two processes write the read models.
 */
export function certainlyGone(identity: string, mine: string | null): boolean {
  if (mine === null) return false;
  const [boot, ns, pidText, start] = identity.split('/');
  const [myBoot, myNs] = mine.split('/');
  if (boot !== myBoot || ns !== myNs || !/^[1-9]\d{0,9}$/.test(pidText ?? '') || !/^\d+$/.test(start ?? ''))
    return false;
  const pid = Number(pidText);
  try {
    process.kill(pid, 0);
  } catch (err) {
    // EPERM: a process of another user has the pid; only ESRCH says there is none.
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
  const now = startTicks(pid);
  return now !== null && now !== start;
}
