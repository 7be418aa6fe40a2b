import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnServer } from './harness.js';
import { configFile } from './sign-in-flow.js';
import { waitFor } from '../wait.js';

/** `svc serve --config FILE` as an operator runs it (README.md, "Configuration file"). */
describe('svc serve --config', () => {
  it('starts with a valid file and serves its providers', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'svc-serve-config-'));
    const file = configFile(`
auth:
  providers:
    corp:
      type: oidc
      name: Corp
      issuer: https://id.example.com
      clientId: svc
      clientSecret: "{{env:HOME}}"
workspaces:
  enabled: true
`);
    const { child, url } = await spawnServer(dataDir, ['--config', file, '--roles', 'api,projector']);
    try {
      const setup = (await (await fetch(`${url}/api/setup`)).json()) as Record<string, unknown>;
      assert.deepEqual(setup, {
        hasUsers: false,
        providers: [{ id: 'corp', name: 'Corp', type: 'oidc', primary: false }],
        workspacesEnabled: true,
      });
    } finally {
      child.kill('SIGTERM');
      await waitFor('the server to stop', () => child.exitCode !== null || child.signalCode !== null);
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('refuses to start with an invalid file, naming the key', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'svc-serve-config-'));
    const file = configFile(
      'auth:\n  providers:\n    gh:\n      type: github\n      clientId: a\n      clientSecret: "{{env:SVC_TEST_MISSING_VAR}}"\n',
    );
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', 'cli/main.ts', 'serve', '--port', '0', '--data-dir', dataDir, '--config', file],
      { env: { ...process.env, NODE_ENV: 'test' }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const code = await new Promise<number | null>((r) => child.on('exit', (c) => r(c)));
    rmSync(dataDir, { recursive: true, force: true });
    assert.notEqual(code, 0);
    assert.match(out, /auth\.providers\.gh\.clientSecret: environment variable SVC_TEST_MISSING_VAR is not set/);
  });
});
