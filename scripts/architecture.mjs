#!/usr/bin/env node
// The dependency rule of docs/architecture.md, for `npm run lint`: runs dependency-cruiser with
// .dependency-cruiser.cjs (each layer imports only earlier layers, no cycles) and checks that the folder diagram in
// docs/architecture.md is the one the code draws. `--write` redraws the diagram instead of checking it.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const root = new URL('..', import.meta.url).pathname;
const require = createRequire(import.meta.url);
const layers = require(`${root}.dependency-cruiser.cjs`).layers;
const doc = `${root}docs/architecture.md`;
const begin = '<!-- diagram: drawn by scripts/architecture.mjs --write -->';
const end = '<!-- end of diagram -->';

const bin = `${root}node_modules/.bin/depcruise`;
let result;
try {
  const out = execFileSync(bin, ['--config', '.dependency-cruiser.cjs', '--output-type', 'json', ...layers], {
    cwd: root,
    maxBuffer: 256 * 1024 * 1024,
  });
  result = JSON.parse(out.toString());
} catch (err) {
  // depcruise exits non-zero on a violation; its JSON is still on stdout.
  if (!err.stdout?.length) throw err;
  result = JSON.parse(err.stdout.toString());
}

const violations = result.summary.violations.filter((v) => v.rule.severity === 'error');
for (const v of violations) {
  const path = v.cycle ? [v.from, ...v.cycle.map((c) => c.name ?? c)].join(' -> ') : `${v.from} -> ${v.to}`;
  console.error(`architecture: ${v.rule.name}: ${path}`);
}

// Folder-level edges, counted: every import statement, type-only ones too (tsPreCompilationDeps in
// .dependency-cruiser.cjs), as they are held to the layer rule above as well.
const folderOf = (p) => p.split('/')[0];
const edges = new Map();
for (const m of result.modules) {
  const from = folderOf(m.source);
  if (!layers.includes(from)) continue;
  for (const d of m.dependencies) {
    const to = folderOf(d.resolved);
    if (!layers.includes(to) || to === from) continue;
    const key = `${from} --> ${to}`;
    edges.set(key, (edges.get(key) ?? 0) + 1);
  }
}
const lines = ['```mermaid', 'flowchart TD'];
for (const l of layers) lines.push(`  ${l}[${l}/]`);
for (const [key, n] of [...edges].sort(([a], [b]) => a.localeCompare(b))) {
  const [from, to] = key.split(' --> ');
  lines.push(`  ${from} -->|${n}| ${to}`);
}
lines.push('```');
const diagram = lines.join('\n');

const text = readFileSync(doc, 'utf8');
const at = text.indexOf(begin);
const stop = text.indexOf(end);
if (at < 0 || stop < at) throw new Error(`docs/architecture.md lacks the diagram markers`);
const current = text.slice(at + begin.length, stop).trim();
let stale = false;
if (process.argv.includes('--write')) {
  writeFileSync(doc, `${text.slice(0, at + begin.length)}\n${diagram}\n${text.slice(stop)}`);
} else if (current !== diagram) {
  stale = true;
  console.error(
    'architecture: the diagram in docs/architecture.md is out of date: run `node scripts/architecture.mjs --write`',
  );
}
console.log(
  `architecture: ${result.summary.totalCruised} modules, ${result.summary.totalDependenciesCruised} imports, ${violations.length} violations`,
);
process.exit(violations.length > 0 || stale ? 1 : 0);
