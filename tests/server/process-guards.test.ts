import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const guards = pathToFileURL(join(import.meta.dirname, '../../server/process-guards.ts')).href;

/** Runs `body` in a fresh Node process with the guards installed over a real pino logger; answers its exit and output. */
function inChild(body: string): Promise<{ code: number | null; out: string }> {
  const script = `
    import pino from 'pino';
    import { guardProcess } from ${JSON.stringify(guards)};
    const log = pino({ base: null });
    const stop = async () => { console.log('STOPPED'); };
    guardProcess(log, stop);
    ${body}
  `;
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '-e', script],
      { timeout: 30_000, cwd: join(import.meta.dirname, '../..') },
      (err, stdout, stderr) => {
        const code = err ? (((err as { code?: number | string }).code as number | null) ?? null) : 0;
        resolve({ code: typeof code === 'number' ? code : null, out: stdout + stderr });
      },
    );
  });
}

describe('process guards of svc serve', () => {
  it('logs an unhandled rejection with its stack and keeps running', async () => {
    // Listeners run in the order they were added, so this one runs after the guard's: by then the guard has logged
    // and returned. A guard that began to stop would have printed STOPPED, which its stop does before anything else.
    const { code, out } = await inChild(`
      process.on('unhandledRejection', () => setImmediate(() => { console.log('STILL SERVING'); process.exit(0); }));
      void Promise.reject(new Error('a store write failed nobody awaited'));
      setInterval(() => {}, 1000);
    `);
    assert.equal(code, 0, out);
    assert.match(out, /STILL SERVING/);
    assert.doesNotMatch(out, /STOPPED/, 'the guard did not begin to stop');
    const line = out.split('\n').find((l) => l.includes('unhandled promise rejection'));
    assert.ok(line, out);
    const entry = JSON.parse(line) as { level: number; err: { message: string; stack: string } };
    assert.equal(entry.level, 50, 'logged as an error');
    assert.equal(entry.err.message, 'a store write failed nobody awaited');
    assert.match(entry.err.stack, /Error: a store write failed/);
  });

  it('logs an uncaught exception as fatal, stops in order and exits 1', async () => {
    const { code, out } = await inChild(`
      setImmediate(() => { throw new Error('state may be half-changed'); });
      setInterval(() => {}, 1000);
    `);
    assert.equal(code, 1, out);
    assert.match(out, /STOPPED/);
    const line = out.split('\n').find((l) => l.includes('uncaught exception'));
    assert.ok(line, out);
    const entry = JSON.parse(line) as { level: number; err: { message: string } };
    assert.equal(entry.level, 60, 'logged as fatal');
    assert.equal(entry.err.message, 'state may be half-changed');
  });
});
