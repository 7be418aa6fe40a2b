import { build } from 'esbuild';
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Bundles the stdio test server with the SDK into one file under /usr/local/lib: a bwrap sandbox sees the host's /usr
 * read-only and nothing else of it, so that is where a server the sandbox can start must live (in production the
 * image or the job's setup brings it). Answers the file and a cleanup.
 */
export async function bundleStdioServer(): Promise<{ path: string; remove(): void }> {
  mkdirSync('/usr/local/lib', { recursive: true });
  const dir = mkdtempSync('/usr/local/lib/svc-mcp-test-');
  const path = join(dir, 'stdio-server.mjs');
  await build({ entryPoints: [new URL('./servers/stdio-server.ts', import.meta.url).pathname], bundle: true, platform: 'node', format: 'esm', target: 'node20', outfile: path, logLevel: 'silent', banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" } });
  // The sandbox user is not root: the directory and file must be readable by others.
  chmodSync(dir, 0o755);
  chmodSync(path, 0o644);
  return { path, remove: () => rmSync(dir, { recursive: true, force: true }) };
}
