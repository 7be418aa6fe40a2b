import { readdirSync, readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import type { SandboxLimits, SandboxSpec } from '../../adapters/sandbox/types.js';

/** A sandbox spec for the backend suites: a fresh id under `prefix`, labels of a made-up run, network none. */
export function testSpec(
  prefix: string,
  brokerSocket: string,
  limits: SandboxLimits,
  overrides: Partial<SandboxSpec> = {},
): SandboxSpec {
  return {
    id: `${prefix}-${randomUUID().slice(0, 12)}`,
    labels: { runId: `run-${prefix}`, jobId: `job-${prefix}`, workspaceId: `ws-${prefix}` },
    image: null,
    limits,
    network: 'none',
    runAsRoot: false,
    env: {},
    brokerSocket,
    proxySocket: null,
    ttlMs: 600_000,
    ...overrides,
  };
}

/** Host processes whose command line starts with `name`, zombies left out (both backends run on this host's kernel). */
export function hostProcessesNamed(name: string): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (cmdline.startsWith(name) && !/\) Z /.test(stat)) out.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}
