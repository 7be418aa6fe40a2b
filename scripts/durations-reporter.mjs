// A node:test reporter that keeps only how long each test file took, as test-results/durations.json
// ({ "tests/x.test.ts": seconds }, slowest first). Used beside the spec reporter by scripts/run-tests.mjs.
// With process isolation (the default) the runner reports every file as a test of its own at nesting 0, named by
// its path; its `test:complete` event carries the file's whole time, imports and hooks included.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
export const durationsFile = join(root, 'test-results', 'durations.json');

export default async function* durations(source) {
  const seconds = new Map();
  for await (const event of source) {
    if (event.type !== 'test:complete') continue;
    const { name, nesting, file, details } = event.data;
    if (nesting !== 0 || file === undefined || name !== file) continue;
    seconds.set(relative(root, file), Math.round(details.duration_ms) / 1000);
  }
  const sorted = Object.fromEntries([...seconds].sort((a, b) => b[1] - a[1]));
  mkdirSync(join(root, 'test-results'), { recursive: true });
  writeFileSync(durationsFile, JSON.stringify(sorted, null, 2) + '\n');
  yield '';
}
