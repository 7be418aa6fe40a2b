import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { LimitSet, SandboxLimits } from './types.js';

/**
 * cgroup v1 limits for sandboxes that have no engine to set them (bwrap). Only the controllers this machine can
 * write are used, and the capabilities say which ones.
 */
const root = '/sys/fs/cgroup';
const controllers = ['memory', 'pids', 'cpu'] as const;
type Controller = (typeof controllers)[number];

function writable(controller: Controller): boolean {
  const probe = join(root, controller, 'svc', `probe-${process.pid}`);
  try {
    mkdirSync(probe, { recursive: true });
    rmdirSync(probe);
    return true;
  } catch {
    return false;
  }
}

export class Cgroups {
  readonly available: LimitSet;

  constructor() {
    this.available = { memory: writable('memory'), pids: writable('pids'), cpu: writable('cpu') };
  }

  private dirs(id: string): Array<[Controller, string]> {
    return controllers.filter((c) => this.available[c]).map((c) => [c, join(root, c, 'svc', id)]);
  }

  /**
   * Creates the groups of a sandbox with its limits (none: the parent's, for a sandbox started ahead of its run);
   * answers the cgroup.procs files a process joins.
   */
  create(id: string, limits: SandboxLimits | null): string[] {
    const procs: string[] = [];
    for (const [c, dir] of this.dirs(id)) {
      mkdirSync(dir, { recursive: true });
      if (limits) this.limit(c, dir, limits);
      procs.push(join(dir, 'cgroup.procs'));
    }
    return procs;
  }

  /**
   * Renames the groups of a sandbox started ahead (`from`) to the run's sandbox id and sets its limits: its processes
   * stay where they are, with what they were charged so far, and a cgroup namespace made in the group still has it as
   * its root. Answers the cgroup.procs files, as `create`.
   */
  adopt(from: string, id: string, limits: SandboxLimits): string[] {
    const procs: string[] = [];
    for (const [c, dir] of this.dirs(id)) {
      renameSync(join(root, c, 'svc', from), dir);
      this.limit(c, dir, limits);
      procs.push(join(dir, 'cgroup.procs'));
    }
    return procs;
  }

  /** Removes the empty groups whose names `stale` picks (those of sandboxes started ahead by dead processes). */
  sweep(stale: (name: string) => boolean): void {
    for (const c of controllers.filter((c) => this.available[c])) {
      let names: string[] = [];
      try {
        names = readdirSync(join(root, c, 'svc'));
      } catch {
        continue;
      }
      for (const name of names.filter(stale)) {
        try {
          rmdirSync(join(root, c, 'svc', name));
        } catch {
          // still holds a process: the next sweep tries again
        }
      }
    }
  }

  private limit(c: Controller, dir: string, limits: SandboxLimits): void {
    if (c === 'memory') {
      const bytes = String(limits.memoryMb * 1024 * 1024);
      writeFileSync(join(dir, 'memory.limit_in_bytes'), bytes);
      // memory = swap: the sandbox cannot swap its way past the limit.
      if (existsSync(join(dir, 'memory.memsw.limit_in_bytes')))
        writeFileSync(join(dir, 'memory.memsw.limit_in_bytes'), bytes);
    } else if (c === 'pids') {
      writeFileSync(join(dir, 'pids.max'), String(limits.pidsLimit));
    } else {
      writeFileSync(join(dir, 'cpu.cfs_period_us'), '100000');
      writeFileSync(join(dir, 'cpu.cfs_quota_us'), String(Math.max(1000, Math.round(limits.cpus * 100000))));
    }
  }

  /**
   * How many times the group ran out of memory so far (an increase after a kill means out of memory): the OOM kill
   * count of memory.oom_control where the kernel has it (some kernels never raise failcnt), else the failure counts.
   */
  memoryFailures(id: string): number {
    const read = (file: string) => {
      try {
        return readFileSync(join(root, 'memory', 'svc', id, file), 'utf8');
      } catch {
        return '';
      }
    };
    const kills = /^oom_kill (\d+)$/m.exec(read('memory.oom_control'));
    if (kills) return Number(kills[1]);
    return Number(read('memory.memsw.failcnt')) || Number(read('memory.failcnt')) || 0;
  }

  /**
   * Whether the groups hold no process, after SIGKILL to any still listed and up to `waitMs` for them to go
   * (docs/security.md, "Reading back from sandboxes": nothing of the sandbox runs while its files are read).
   */
  async empty(id: string, waitMs = 5000): Promise<boolean> {
    const until = Date.now() + waitMs;
    for (;;) {
      let left = 0;
      for (const [, dir] of this.dirs(id)) {
        let pids: number[] = [];
        try {
          pids = readFileSync(join(dir, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number);
        } catch {
          continue;
        }
        left += pids.length;
        for (const pid of pids) {
          try {
            process.kill(pid, 'SIGKILL');
          } catch {
            // already gone
          }
        }
      }
      if (left === 0) return true;
      if (Date.now() > until) return false;
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  /** Kills what is left in the groups and removes them; idempotent. */
  destroy(id: string): void {
    for (const [, dir] of this.dirs(id)) {
      if (!existsSync(dir)) continue;
      for (let attempt = 0; attempt < 20; attempt++) {
        let pids: number[] = [];
        try {
          pids = readFileSync(join(dir, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number);
        } catch {
          break;
        }
        for (const pid of pids) {
          try {
            process.kill(pid, 'SIGKILL');
          } catch {
            // already gone
          }
        }
        try {
          rmdirSync(dir);
          break;
        } catch {
          Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 25);
        }
      }
    }
  }
}
