import { build } from 'esbuild';
import { chmodSync, mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { defaultRootfs } from '../../adapters/sandbox/rootfs.js';

/**
 * Bundles the stdio test server with the SDK into one file under /usr/local/lib of the sandboxes' base root filesystem
 * (scripts/prepare-host.sh): a bwrap sandbox sees that tree read-only and nothing of the host's, so that is where a
 * server the sandbox can start must live (in production the image or the job's setup brings it). Answers the path
 * inside the sandbox and a cleanup.
 */
export async function bundleStdioServer(): Promise<{ path: string; remove(): void }> {
  const rootfs = realpathSync(defaultRootfs());
  mkdirSync(join(rootfs, 'usr/local/lib'), { recursive: true });
  const dir = mkdtempSync(join(rootfs, 'usr/local/lib/svc-mcp-test-'));
  const file = join(dir, 'stdio-server.mjs');
  // The base root filesystem's node is Debian's (18).
  await build({
    entryPoints: [new URL('./servers/stdio-server.ts', import.meta.url).pathname],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node18',
    outfile: file,
    logLevel: 'silent',
    banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
  });
  // The sandbox user is not root: the directory and file must be readable by others.
  chmodSync(dir, 0o755);
  chmodSync(file, 0o644);
  return { path: file.slice(rootfs.length), remove: () => rmSync(dir, { recursive: true, force: true }) };
}
