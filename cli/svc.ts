#!/usr/bin/env node
/**
 * The `svc` command. `svc serve` needs node flags and a variable that only apply when a process starts (see
 * cli/memory-settings.ts); when it was started without them, as `svc serve` usually is, this starts the server once
 * more with them and stays as a thin parent that passes signals on and exits as the server does (docs/design.md,
 * "Memory settings of svc serve"). Every other command, and a server started with the settings, runs in this process.
 * Only node's own modules are loaded before that choice, so the parent stays small.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { missingSettings, wrappedMarker } from './memory-settings.js';

const args = process.argv.slice(2);
const missing = missingSettings(process.execArgv, process.env);
if (
  args[0] === 'serve' &&
  process.env[wrappedMarker] === undefined &&
  (missing.flags.length > 0 || Object.keys(missing.env).length > 0)
) {
  const main = fileURLToPath(new URL('./main.js', import.meta.url));
  // An IPC channel, used for nothing but its end: the server stops when this parent dies, even of SIGKILL.
  const server = spawn(process.execPath, [...process.execArgv, ...missing.flags, main, ...args], {
    stdio: ['inherit', 'inherit', 'inherit', 'ipc'],
    env: { ...process.env, ...missing.env, [wrappedMarker]: '1' },
  });
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const)
    process.on(signal, () => {
      server.kill(signal);
    });
  server.on('error', (err) => {
    process.stderr.write(`svc: could not start the server: ${err.message}\n`);
    process.exit(1);
  });
  server.on('exit', (code, signal) => {
    if (signal) {
      process.removeAllListeners(signal);
      process.kill(process.pid, signal);
    } else process.exit(code ?? 1);
  });
} else await import('./main.js');
