#!/usr/bin/env node
// Citations of this repository's docs, for `npm run lint`. Comments and docs say why by citing `docs/<file>.md` or
// `docs/<file>.md, "<Section>"` (or `"<A>" and "<B>"`), and this check keeps each one true: the file exists and each
// named section is a heading of it (case, leading `#`s and trailing punctuation aside). It also refuses section
// numbers of the specification documents outside this repository, which a reader of the code cannot open: state
// the rule, or write it down in docs/ and cite that.
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const scanned = /\.(ts|tsx|mjs|md|c)$/;
const skippedDirs = new Set(['node_modules', 'dist', 'test-results']);

function* files(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name.startsWith('.') || skippedDirs.has(entry.name)) continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* files(path);
    else if (entry.isFile() && scanned.test(entry.name)) yield path;
  }
}

/** A heading or a cited section as compared: no leading `#`s, no trailing punctuation, one case, single spaces. */
const normalise = (s) =>
  s
    .replace(/^#+\s*/, '')
    .replace(/\s+#+\s*$/, '')
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/[\s.,:;!?…]+$/, '')
    .toLowerCase();

const headingsOf = new Map();
/** The headings of a doc, outside fenced code blocks; undefined when the file does not exist. */
function headings(doc) {
  if (headingsOf.has(doc)) return headingsOf.get(doc);
  const path = join(root, doc);
  let found;
  if (existsSync(path)) {
    found = new Set();
    let fence = null;
    for (const line of readFileSync(path, 'utf8').split('\n')) {
      const f = /^\s*(`{3,}|~{3,})/.exec(line);
      if (f) {
        if (fence === null) fence = f[1][0];
        else if (f[1][0] === fence) fence = null;
        continue;
      }
      if (fence === null && /^#{1,6}\s/.test(line)) found.add(normalise(line));
    }
  }
  headingsOf.set(doc, found);
  return found;
}

// A citation: `docs/<file>.md`, then optionally `, "<Section>"` (or ` ("<Section>"`) and further `, "<Section>"` or
// `and "<Section>"`, where a comment may wrap anywhere in between (the continuation line starts with `//`, `*` or
// `#`).
const wrap = String.raw`\s*(?:\n[ \t]*(?:\/\/|\*|#)?[ \t]*)?`;
const quoted = String.raw`"(?:[^"\n]|\n[ \t]*(?:\/\/|\*|#)?[ \t]*){1,200}?"`;
const citation = new RegExp(
  String.raw`(?<![\w./-])docs\/([\w./-]+\.md)(?:(?:,|\s*\()${wrap}(${quoted}(?:${wrap}(?:,|,? and|,? or)${wrap}${quoted})*))?`,
  'g',
);
const sectionsIn = (list) =>
  [...list.matchAll(new RegExp(quoted, 'g'))].map((q) =>
    q[0].slice(1, -1).replace(/\s*\n[ \t]*(?:\/\/|\*|#)?[ \t]*/g, ' '),
  );
// Section numbers of outside documents (the section sign is escaped so that this file does not cite one itself).
const outside = /\b(SPEC|BEHAVIOUR|DESIGN)\s*\u00a7\s*[\d.]*/g;

const lineAt = (text, index) => text.slice(0, index).split('\n').length;
const problems = [];
let checked = 0;
for (const path of files(root)) {
  const file = relative(root, path);
  const text = readFileSync(path, 'utf8');
  for (const m of text.matchAll(citation)) {
    checked++;
    const [, doc, list] = m;
    const where = `${file}:${lineAt(text, m.index)}`;
    const found = headings(`docs/${doc}`);
    if (found === undefined) {
      problems.push(`${where}: docs/${doc} does not exist`);
      continue;
    }
    for (const section of list === undefined ? [] : sectionsIn(list)) {
      if (!found.has(normalise(section))) problems.push(`${where}: docs/${doc} has no heading "${section}"`);
    }
  }
  for (const m of text.matchAll(outside)) {
    problems.push(`${file}:${lineAt(text, m.index)}: "${m[0].trim()}" cites a document outside this repository`);
  }
}

for (const p of problems) console.error(`doc-citations: ${p}`);
if (problems.length > 0) {
  console.error(`doc-citations: ${problems.length} to fix (${checked} citations read)`);
  process.exit(1);
}
console.log(`doc-citations: ${checked} citations resolve`);
