// Imports the test files named on the command line into this one process, in order, so their tests run here.
// `npm run test:unit` uses it: unit tests are pure code (no server, no sandbox, no global state), so they can share a
// process, which saves the second of tsx start-up that a process per file costs each of them (docs in README.md,
// "Testing").
import { pathToFileURL } from 'node:url';
import { resolve } from 'node:path';

for (const file of process.argv.slice(2)) await import(pathToFileURL(resolve(file)).href);
