import { readdirSync, readFileSync } from 'node:fs';
import { diskHelperName } from '../adapters/sandbox/disk-helper.js';
import { cpuTimesMs, parentPid } from './proc-stat.js';

/**
 * CPU of the disk helpers `parent` runs (adapters/sandbox/disk-helper.ts), their reaped children included: the mkfs,
 * mount and umount they ran. A parent's own count of its children leaves them out until a helper exits.
 */
export function diskHelpersCpuMs(parent: number): number {
  let ms = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (parentPid(entry) !== parent) continue;
      if (!readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').includes(diskHelperName)) continue;
      const cpu = cpuTimesMs(Number(entry));
      ms += cpu.own + cpu.children;
    } catch {
      // ended while listed
    }
  }
  return ms;
}
