/**
 * Script headers and toolkit tools (docs/playbooks.md, "Script headers"). A toolkit or main script declares itself in
 * comment lines near its top (`# svc:name fetch_stories`, `// svc:args {"limit": "integer?"}`); the header is the one
 * source of a script's description, arguments and side effects, so the editor, reflection and the agent's tools never
 * disagree. Pure: no I/O.
 */

export type ArgType = 'string' | 'integer' | 'number' | 'boolean' | 'object' | 'array';
export type SideEffects = 'none' | 'external';

/** An argument as the header declares it: its JSON type and whether a call may leave it out. */
export interface ArgSpec {
  type: ArgType;
  optional: boolean;
}

export interface ScriptHeader {
  name: string | null;
  description: string | null;
  /** By argument name; `{}` without a `svc:args` line. */
  args: Record<string, ArgSpec>;
  sideEffects: SideEffects;
  /** `python`, `node`, `bash`, `sh`, or the interpreter's own name; null without a shebang. */
  shebangLanguage: string | null;
  hasShebang: boolean;
}

/** A header problem, worded to be shown next to the script. */
export class HeaderError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'HeaderError';
  }
}

export const headerLines = 30;
export const scriptNamePattern = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const argNamePattern = /^[a-z][a-z0-9_]{0,31}$/;
const argTypes: readonly ArgType[] = ['string', 'integer', 'number', 'boolean', 'object', 'array'];
const headerKeys = ['name', 'description', 'args', 'side-effects'] as const;
type HeaderKey = (typeof headerKeys)[number];
/** `# svc:key value`, `// svc:key: value`; the key is matched loosely so a typo is reported, not ignored. */
const headerLine = /^\s*(?:#|\/\/)\s*svc:([A-Za-z_-]+):?(?:\s+(.*?))?\s*$/;

/** Whether a name can be a toolkit script's (and so a file under /svc/toolkit). */
export function isValidScriptName(name: string): boolean {
  return scriptNamePattern.test(name) && !name.includes('..');
}

/**
 * The model-facing tool name of a script: `toolkit__` plus the name with every character a tool name cannot hold
 * mapped to `_`. Two scripts whose names map alike (`top.stories`, `top_stories`) would be one tool, so they collide.
 */
export function toolName(scriptName: string): string {
  return `toolkit__${scriptName.replace(/[^A-Za-z0-9_]/g, '_')}`;
}

/** The language an interpreter path names: `/usr/bin/env python3` → python. */
function languageOfShebang(line: string): string {
  const words = line
    .slice(2)
    .trim()
    .split(/\s+/)
    .filter((w) => !w.startsWith('-'));
  const first = words[0] ?? '';
  const program = (first.endsWith('/env') ? words[1] : first)?.split('/').pop() ?? '';
  if (/^python[0-9.]*$/.test(program)) return 'python';
  if (program === 'node' || program === 'nodejs') return 'node';
  if (program === 'bash') return 'bash';
  if (program === 'sh' || program === 'dash') return 'sh';
  return program || 'bash';
}

function parseArgs(raw: string): Record<string, ArgSpec> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new HeaderError('svc:args must be a JSON object such as {"city": "string", "limit": "integer?"}');
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
    throw new HeaderError('svc:args must be a JSON object of argument names to types');
  const args: Record<string, ArgSpec> = {};
  for (const [name, value] of Object.entries(parsed as Record<string, unknown>)) {
    if (!argNamePattern.test(name))
      throw new HeaderError(
        `svc:args: "${name}" is not a valid argument name (snake_case, starting with a letter, at most 32 characters)`,
      );
    if (typeof value !== 'string')
      throw new HeaderError(`svc:args: the type of "${name}" must be a string such as "string" or "integer?"`);
    const optional = value.endsWith('?');
    const type = (optional ? value.slice(0, -1) : value) as ArgType;
    if (!argTypes.includes(type))
      throw new HeaderError(
        `svc:args: "${name}" has the type "${value}"; use one of ${argTypes.join(', ')}, with a trailing ? for optional`,
      );
    args[name] = { type, optional };
  }
  return args;
}

/** Reads the header of a script. Throws `HeaderError` for a header line that does not parse. */
export function parseScriptHeader(content: string): ScriptHeader {
  const lines = content.split('\n', headerLines + 1).slice(0, headerLines);
  const hasShebang = (lines[0] ?? '').startsWith('#!');
  const found = new Map<HeaderKey, string>();
  for (const line of lines) {
    const m = headerLine.exec(line);
    if (!m) continue;
    const key = m[1]!.toLowerCase() as HeaderKey;
    if (!headerKeys.includes(key))
      throw new HeaderError(
        `svc:${m[1]} is not a header line; use svc:name, svc:description, svc:args or svc:side-effects`,
      );
    if (found.has(key)) throw new HeaderError(`svc:${key} is given twice`);
    found.set(key, (m[2] ?? '').trim());
  }
  const name = found.get('name');
  if (name !== undefined && !isValidScriptName(name))
    throw new HeaderError(
      `svc:name "${name}" is not a valid script name (letters, digits, _ . -, starting with a letter or digit, at most 64, no ..)`,
    );
  const description = found.get('description');
  if (description !== undefined && description === '') throw new HeaderError('svc:description must not be empty');
  let sideEffects: SideEffects = 'none';
  const rawEffects = found.get('side-effects');
  if (rawEffects !== undefined) {
    // A trailing `# why` comment is allowed: `# svc:side-effects external  # posts to Slack`.
    const value = rawEffects.split('#')[0]!.trim();
    if (value !== 'none' && value !== 'external')
      throw new HeaderError(`svc:side-effects must be none or external, not "${value}"`);
    sideEffects = value;
  }
  const rawArgs = found.get('args');
  return {
    name: name ?? null,
    description: description ?? null,
    args: rawArgs === undefined ? {} : parseArgs(rawArgs),
    sideEffects,
    shebangLanguage: hasShebang ? languageOfShebang(lines[0]!) : null,
    hasShebang,
  };
}

const shebangs: Record<string, string> = {
  python: '#!/usr/bin/env python3',
  node: '#!/usr/bin/env node',
  bash: '#!/usr/bin/env bash',
  sh: '#!/bin/sh',
};

/**
 * The language of a script: its shebang's, else the one asked for, else node for `//` comments, else bash. A script
 * without a shebang gets one for that language and a trailing newline, so it runs as a file under /svc.
 */
export function completeScript(
  content: string,
  header: ScriptHeader,
  language?: string | null,
): { content: string; language: string } {
  let lang = header.shebangLanguage;
  if (!lang) lang = language && shebangs[language] ? language : /^\s*\/\/\s*svc:/m.test(content) ? 'node' : 'bash';
  let text = header.hasShebang ? content : `${shebangs[lang] ?? shebangs.bash}\n${content}`;
  if (!text.endsWith('\n')) text += '\n';
  return { content: text, language: lang };
}

/** JSON Schema of a toolkit tool's arguments: one property per argument, required unless `?`, nothing else. */
export function toolSchema(args: Record<string, ArgSpec>): {
  type: 'object';
  properties: Record<string, { type: ArgType }>;
  required: string[];
  additionalProperties: false;
} {
  const names = Object.keys(args).sort();
  return {
    type: 'object',
    properties: Object.fromEntries(names.map((n) => [n, { type: args[n]!.type }])),
    required: names.filter((n) => !args[n]!.optional),
    additionalProperties: false,
  };
}

function hasType(value: unknown, type: ArgType): boolean {
  switch (type) {
    case 'string':
      return typeof value === 'string';
    case 'integer':
      return Number.isInteger(value);
    case 'number':
      return typeof value === 'number' && Number.isFinite(value);
    case 'boolean':
      return typeof value === 'boolean';
    case 'array':
      return Array.isArray(value);
    case 'object':
      return value !== null && typeof value === 'object' && !Array.isArray(value);
  }
}

/**
 * The command line of a toolkit call: arguments in sorted order as `--name value`, strings raw and other JSON as
 * text. Missing required arguments, unknown ones and values of the wrong type are errors (thrown as `HeaderError`).
 * A null value counts as left out.
 */
export function toolkitArgv(args: Record<string, ArgSpec>, values: Record<string, unknown>): string[] {
  const problems: string[] = [];
  for (const name of Object.keys(values).sort()) if (!(name in args)) problems.push(`unknown argument "${name}"`);
  const argv: string[] = [];
  for (const name of Object.keys(args).sort()) {
    const spec = args[name]!;
    const value = values[name];
    if (value === undefined || value === null) {
      if (!spec.optional) problems.push(`missing required argument "${name}"`);
      continue;
    }
    if (!hasType(value, spec.type)) {
      problems.push(
        `argument "${name}" must be ${spec.type === 'integer' || spec.type === 'array' || spec.type === 'object' ? 'an' : 'a'} ${spec.type}`,
      );
      continue;
    }
    argv.push(`--${name}`, typeof value === 'string' ? value : JSON.stringify(value));
  }
  if (problems.length > 0) throw new HeaderError(problems.join('; '));
  return argv;
}

export const toolkitTimeoutMs = 120_000;

/** What the agent reads about a toolkit tool: the script's description, where it runs from, and a caution. */
export function toolDescription(script: { name: string; description: string; sideEffects: SideEffects }): string {
  const caution =
    script.sideEffects === 'external'
      ? ' It has external side effects: call it only when the job means to cause them.'
      : ' It declares no external side effects.';
  return `${script.description} (runs /svc/toolkit/${script.name}, proven in earlier runs.)${caution}`;
}
