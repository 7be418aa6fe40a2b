import { readFileSync } from 'node:fs';

/**
 * CPU time of a process so far from /proc/PID/stat, in ms (clock ticks of 10 ms, as Linux counts them): user + system
 * of the process itself, and of the children it has waited for. The fields are counted after the command name's last
 * `)`, which a command name may itself contain.
 */
export function cpuTimesMs(pid: number | 'self'): { own: number; children: number } {
  const f = statFields(pid);
  return { own: (Number(f[11]) + Number(f[12])) * 10, children: (Number(f[13]) + Number(f[14])) * 10 };
}

/** The parent pid of a process, from the same file. */
export function parentPid(pid: number | string): number {
  return Number(statFields(pid)[1]);
}

/** The fields of /proc/PID/stat after the command name, from the state (field 3) on. */
function statFields(pid: number | string): string[] {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}
