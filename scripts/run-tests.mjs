#!/usr/bin/env node
// Runs every tests/**/*.test.ts file with node's own test runner (TypeScript through tsx).
// Usage: npm test [-- path-or-substring ...] to run only matching files; `--unit` keeps tests/unit/ only (pure code:
// no server, no sandbox), `--integration` everything else (npm run test:unit, npm run test:integration).
// How long each file took goes to test-results/durations.json (slowest first), and the 10 slowest are printed last.
// When docker.io is installed and SVC_DOCKER_HOST is not set, a Docker engine is started for the run (and stopped
// after it), so the docker sandbox backend is tested too; otherwise its tests say loudly why they are skipped.
import { existsSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { spawn } from 'node:child_process';
import { startDockerd } from './dockerd.mjs';
import { durationsFile } from './durations-reporter.mjs';

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

const args = process.argv.slice(2);
const only = args.includes('--unit') ? 'unit' : args.includes('--integration') ? 'integration' : 'all';
const wanted = args.filter((a) => a !== '--unit' && a !== '--integration');
const unit = (f) => f.startsWith(join('tests', 'unit') + '/');
const files = walk(join(root, 'tests'))
  .filter((f) => only === 'all' || (only === 'unit') === unit(f))
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

/** The slowest files of this run, from what the durations reporter wrote. */
function printSlowest(count) {
  if (!existsSync(durationsFile)) return;
  const seconds = Object.entries(JSON.parse(readFileSync(durationsFile, 'utf8')));
  console.log(
    `\n[tests] the ${Math.min(count, seconds.length)} slowest files (all in ${relative(root, durationsFile)}):`,
  );
  for (const [file, s] of seconds.slice(0, count)) console.log(`  ${s.toFixed(1).padStart(6)} s  ${file}`);
}

rmSync(durationsFile, { force: true });
const reporters = [
  '--test-reporter=spec',
  '--test-reporter-destination=stdout',
  `--test-reporter=${join(root, 'scripts', 'durations-reporter.mjs')}`,
  '--test-reporter-destination=/dev/null',
];
// Unit tests share one process (scripts/import-tests.mjs): a process per file would spend more on starting tsx than
// on the tests. Everything else gets a process per file, two at a time.
const child = spawn(
  process.execPath,
  only === 'unit'
    ? ['--import', 'tsx', ...reporters, join(root, 'scripts', 'import-tests.mjs'), ...files]
    : ['--import', 'tsx', '--test', ...reporters, '--test-concurrency=2', '--test-timeout=300000', ...files],
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
  printSlowest(10);
  await engine.stop();
  process.exit(code ?? 1);
});
