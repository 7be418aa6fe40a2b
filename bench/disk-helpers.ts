import { readdirSync, readFileSync } from 'node:fs';
import { diskHelperName } from '../adapters/sandbox/disk-helper.js';

/**
 * CPU of the disk helpers `parent` runs (adapters/sandbox/disk-helper.ts), their reaped children included: the mkfs,
 * mount and umount they ran. A parent's own count of its children leaves them out until a helper exits.
 */
export function diskHelpersCpuMs(parent: number): number {
  let ms = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(f[1]) !== parent) continue;
      if (!readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').includes(diskHelperName)) continue;
      ms += (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) * 10;
    } catch {
      // ended while listed
    }
  }
  return ms;
}
