// Starts a Docker engine for the tests when docker.io is installed and none is configured: without touching the
// host network (no bridge, no iptables rules: a sandbox has only loopback and reaches the broker and the egress proxy
// through sockets of its run, docs/security.md, "Sandbox isolation"), with its data in a cache directory, and the
// base image imported from the cached tarball.
// Answers the engine's address and a stop function that ends the daemon by its process id.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';

export async function startDockerd() {
  const which = spawnSync('sh', ['-c', 'command -v dockerd'], { encoding: 'utf8' });
  if (which.status !== 0)
    return {
      host: null,
      reason: 'dockerd is not installed (scripts/prepare-host.sh installs docker.io)',
      stop: async () => {},
    };
  const cache = process.env.SVC_CACHE_DIR ?? '/var/cache/svc-ci';
  const socket = join(cache, 'docker.sock');
  const host = `unix://${socket}`;
  for (const d of ['docker', 'exec']) mkdirSync(join(cache, d), { recursive: true });
  const pidfile = join(cache, 'dockerd.pid');
  if (existsSync(pidfile)) {
    // A daemon left by an earlier, interrupted run.
    try {
      process.kill(Number(readFileSync(pidfile, 'utf8')), 'SIGTERM');
    } catch {}
    await new Promise((r) => setTimeout(r, 1000));
    rmSync(pidfile, { force: true });
  }
  const child = spawn(
    'dockerd',
    [
      '-H',
      host,
      '--data-root',
      join(cache, 'docker'),
      '--exec-root',
      join(cache, 'exec'),
      '--pidfile',
      pidfile,
      '--bridge=none',
      '--iptables=false',
      '--ip6tables=false',
      '--ip-forward=false',
      '--ip-masq=false',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let log = '';
  child.stderr.on('data', (d) => (log = (log + d).slice(-4000)));
  const docker = (...args) => spawnSync('docker', ['-H', host, ...args], { encoding: 'utf8' });
  const deadline = Date.now() + 60_000;
  while (docker('version').status !== 0) {
    if (Date.now() > deadline || child.exitCode !== null) {
      child.kill('SIGKILL');
      return { host: null, reason: `dockerd did not start: ${log.slice(-500)}`, stop: async () => {} };
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  const stop = async () => {
    if (child.exitCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
    if (child.exitCode === null) child.kill('SIGKILL');
  };
  // The image follows the tarball: prepare-host.sh writes the tarball's key beside it, and the import keeps it as a label.
  const key = existsSync(join(cache, 'rootfs.key')) ? readFileSync(join(cache, 'rootfs.key'), 'utf8').trim() : '';
  const current = docker('image', 'inspect', '--format', '{{index .Config.Labels "svc.rootfs"}}', 'svc-base:bookworm');
  if (current.status !== 0 || current.stdout.trim() !== key) {
    const tarball = join(cache, 'rootfs.tar');
    if (!existsSync(tarball)) {
      await stop();
      return { host: null, reason: `${tarball} is missing (run scripts/prepare-host.sh)`, stop: async () => {} };
    }
    const imported = spawnSync(
      'sh',
      ['-c', `docker -H ${host} import --change 'LABEL svc.rootfs=${key}' - svc-base:bookworm < ${tarball}`],
      { encoding: 'utf8' },
    );
    if (imported.status !== 0) {
      await stop();
      return { host: null, reason: `could not import the base image: ${imported.stderr}`, stop: async () => {} };
    }
  }
  return { host, reason: null, stop };
}
