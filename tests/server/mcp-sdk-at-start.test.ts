import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { waitFor } from '../wait.js';

/**
 * The MCP SDK is loaded at first use, not when the server starts (docs/design.md, "The MCP SDK loaded at first
 * use"): a served process that was never asked anything of MCP holds none of its modules but the two URL functions
 * of `shared/auth-utils.js`. Module loads are recorded by a resolve hook of node's own, so a static import of the
 * SDK added anywhere in the server's module graph shows here.
 */
const root = join(import.meta.dirname, '../..');
const dir = mkdtempSync(join(tmpdir(), 'svc-mcp-at-start-'));
let server: ChildProcess | null = null;
after(() => {
  if (server && server.exitCode === null && server.signalCode === null) server.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

const logFile = join(dir, 'loaded.txt');
const hooks = join(dir, 'hooks.mjs');
const register = join(dir, 'register.mjs');
writeFileSync(
  hooks,
  `import { appendFileSync } from 'node:fs';
export async function resolve(specifier, context, next) {
  const r = await next(specifier, context);
  appendFileSync(${JSON.stringify(logFile)}, r.url + '\\n');
  return r;
}
`,
);
writeFileSync(
  register,
  `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(hooks).href)});\n`,
);

describe('the MCP SDK at start', { timeout: 120_000 }, () => {
  it('is not loaded by a server that has served nothing of MCP', async () => {
    const dataDir = join(dir, 'data');
    server = spawn(
      process.execPath,
      ['--import', 'tsx', '--import', register, 'cli/main.ts', 'serve', '--port', '0', '--data-dir', dataDir],
      { cwd: root, env: { ...process.env, SVC_LOG_LEVEL: 'warn' }, stdio: ['ignore', 'ignore', 'inherit'] },
    );
    const file = join(dataDir, 'server.json');
    const info = await waitFor(
      'the server to write server.json',
      () => {
        assert.equal(server?.exitCode, null, 'the server exited before serving');
        return existsSync(file) && (JSON.parse(readFileSync(file, 'utf8')) as { url: string });
      },
      { timeoutMs: 90_000 },
    );
    // A request that goes through the app, so what loads on a first request has loaded too.
    assert.equal((await fetch(`${info.url}/api/jobs`)).status, 401);

    const loaded = [...new Set(readFileSync(logFile, 'utf8').split('\n').filter(Boolean))];
    // The hook saw the server's modules: an empty record would pass the check below for nothing.
    assert.ok(
      loaded.some((u) => u.includes('/node_modules/fastify/')),
      'the hook recorded the modules the server loaded',
    );
    assert.ok(
      loaded.some((u) => u.endsWith('/api/routes/mcp.ts')),
      'the MCP routes are registered',
    );
    const sdk = loaded.filter((u) => u.includes('/node_modules/@modelcontextprotocol/sdk/'));
    assert.deepEqual(
      sdk.filter((u) => !u.endsWith('/shared/auth-utils.js')),
      [],
      'no SDK module but auth-utils is loaded at start',
    );
    // Nor the configuration file's parsers, loaded when a file is given (docs/performance.md, "Configuration parsers
    // at first use (2026-11-27)"); zod is what most of the SDK's memory was.
    assert.deepEqual(
      loaded.filter((u) => /\/node_modules\/(zod|yaml)\//.test(u)),
      [],
      'neither zod nor yaml is loaded by a server started without a configuration file',
    );
  });
});
