import { existsSync, readdirSync, readlinkSync, realpathSync, statSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The base root filesystem both backends run on (docs/design.md, "Sandbox isolation"): scripts/prepare-host.sh
 * builds one tarball, the docker engine imports it as this image, and bwrap sandboxes see its unpacked copy as /.
 */
export const baseImageName = 'svc-base:bookworm';

/** Where prepare-host.sh leaves the unpacked copy: SVC_SANDBOX_ROOTFS, else `rootfs` in the cache directory. */
export function defaultRootfs(): string {
  return process.env.SVC_SANDBOX_ROOTFS ?? join(process.env.SVC_CACHE_DIR ?? '/var/cache/svc-ci', 'rootfs');
}

/** Top-level directories a sandbox gets fresh or from its own mounts, never from the image. */
const ownMounts = new Set([
  'proc',
  'dev',
  'sys',
  'tmp',
  'run',
  'workspace',
  'svc',
  'boot',
  'media',
  'mnt',
  'lost+found',
]);

/**
 * The bwrap arguments that show the root filesystem at `dir` as / (read-only, one bind per top-level directory so
 * bwrap can still create its own mount points at the top), resolved once: a later prepare-host.sh moves the link to a
 * new tree and leaves this one in place. Throws a message saying what to run when it is missing.
 */
export function rootfsArgs(dir: string): { path: string; args: string[] } {
  if (!existsSync(join(dir, 'usr/bin/env')) || !existsSync(join(dir, 'etc/passwd'))) {
    throw new Error(
      `the sandbox root filesystem is missing at ${dir} (run scripts/prepare-host.sh as root, or set SVC_SANDBOX_ROOTFS)`,
    );
  }
  const path = realpathSync(dir);
  const args: string[] = [];
  for (const entry of readdirSync(path, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
    if (ownMounts.has(entry.name)) continue;
    if (entry.isSymbolicLink()) args.push('--symlink', readlinkSync(join(path, entry.name)), `/${entry.name}`);
    else if (entry.isDirectory()) args.push('--ro-bind', join(path, entry.name), `/${entry.name}`);
  }
  if (!statSync(join(path, 'usr')).isDirectory()) throw new Error(`${path} is not a root filesystem`);
  return { path, args };
}
