// A node:test reporter that keeps only how long each test file took, as test-results/durations.json
// ({ "tests/x.test.ts": seconds }, slowest first). Used beside the spec reporter by scripts/run-tests.mjs.
// With a process per file (npm test) the runner reports every file as a test of its own at nesting 0, named by its
// path, whose `test:complete` carries the file's whole time, imports and hooks included. With the files in one
// process (npm run test:unit) there is no such test: a file's time is then the sum of its top-level tests.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
export const durationsFile = join(root, 'test-results', 'durations.json');

export default async function* durations(source) {
  const wholeFile = new Map();
  const topLevelSum = new Map();
  for await (const event of source) {
    if (event.type !== 'test:complete') continue;
    const { name, nesting, file, details } = event.data;
    if (nesting !== 0 || file === undefined) continue;
    const key = relative(root, file);
    if (name === file) wholeFile.set(key, details.duration_ms);
    else topLevelSum.set(key, (topLevelSum.get(key) ?? 0) + details.duration_ms);
  }
  // Shared suites (tests/sandbox/conformance.ts) report their describes under their own path: with a process per
  // file those are inside a test file's time already, so only the files' own entries count then.
  const ms = wholeFile.size > 0 ? wholeFile : topLevelSum;
  const seconds = [...ms].map(([file, d]) => [file, Math.round(d) / 1000]).sort((a, b) => b[1] - a[1]);
  mkdirSync(join(root, 'test-results'), { recursive: true });
  writeFileSync(durationsFile, JSON.stringify(Object.fromEntries(seconds), null, 2) + '\n');
  yield '';
}
