#!/usr/bin/env node
// Runs every tests/**/*.test.ts file with node's own test runner (TypeScript through tsx).
// Usage: npm test [-- path-or-substring ...] to run only matching files.
// When docker.io is installed and SVC_DOCKER_HOST is not set, a Docker engine is started for the run (and stopped
// after it), so the docker sandbox backend is tested too; otherwise its tests say loudly why they are skipped.
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { spawn } from 'node:child_process';
import { startDockerd } from './dockerd.mjs';

const root = new URL('..', import.meta.url).pathname;

function walk(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const full = join(dir, name);
    if (statSync(full).isDirectory()) out.push(...walk(full));
    else if (name.endsWith('.test.ts')) out.push(relative(root, full));
  }
  return out;
}

const wanted = process.argv.slice(2);
const files = walk(join(root, 'tests'))
  .filter((f) => wanted.length === 0 || wanted.some((w) => f.includes(w)))
  .sort();
if (files.length === 0) {
  console.error('no test files matched');
  process.exit(1);
}

const env = { ...process.env, NODE_ENV: 'test' };
let engine = { stop: async () => {} };
if (!env.SVC_DOCKER_HOST && files.some((f) => f.includes('docker'))) {
  engine = await startDockerd();
  if (engine.host) {
    env.SVC_DOCKER_HOST = engine.host;
    console.log(`[tests] started a Docker engine at ${engine.host}`);
  } else {
    console.log(`[tests] NO DOCKER ENGINE: ${engine.reason}; docker backend tests will be skipped`);
  }
}

const child = spawn(
  process.execPath,
  ['--import', 'tsx', '--test', '--test-reporter=spec', '--test-concurrency=2', '--test-timeout=300000', ...files],
  { cwd: root, stdio: 'inherit', env },
);
const stopAll = async (signal) => {
  child.kill(signal);
  await engine.stop();
  process.exit(1);
};
process.once('SIGINT', () => void stopAll('SIGINT'));
process.once('SIGTERM', () => void stopAll('SIGTERM'));
child.once('exit', async (code) => {
  await engine.stop();
  process.exit(code ?? 1);
});
