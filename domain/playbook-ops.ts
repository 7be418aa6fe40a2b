import { redactor } from './redact.js';
import { dockerfileFlags, hasFrom } from './playbook-dockerfile.js';
import { HeaderError, isValidScriptName, parseScriptHeader, toolName } from './playbook-header.js';
import { parseVerify } from './playbook-verify.js';
import {
  mainInputProblem,
  nextLearningId,
  normalizeKind,
  readMain,
  readScript,
  type PlaybookContent,
} from './playbook.js';
import { playbookBudget, playbookTokens } from './playbook-render.js';
import { playbookLimits, type AppliedOp, type Learning, type PlaybookOp } from './playbook-types.js';

/**
 * Reflection's ops (docs/playbooks.md, "Ops"), each validated and applied on a scratch copy of the playbook: an op
 * that breaks a rule is `rejected` with a reason, one that needs a person's eyes (a secret value, credential-shaped
 * text, a risky Dockerfile) is `held` and not applied, the rest are `applied`, possibly with warnings. One bad op
 * never blocks the others. Pure: the content passed in is never modified.
 */

export type OpName =
  | 'add_learning'
  | 'update_learning'
  | 'retire_learning'
  | 'upsert_script'
  | 'delete_script'
  | 'set_setup'
  | 'set_dockerfile'
  | 'propose_main'
  | 'update_main'
  | 'set_verify';

export type { PlaybookOp } from './playbook-types.js';

export interface OpContext {
  /** The run reflection learns from: recorded as a source of learnings and scripts. */
  runId: string | null;
  /** The job's secret values: text holding one (6 characters or more) is held, and the record is redacted. */
  secretValues: readonly string[];
  /** The job declares run inputs: main must read /svc/input.json. */
  declaresInputs: boolean;
  /** The job's base image: a Dockerfile may start from it without review. */
  jobImage: string | null;
  /** Null when the server found the job eligible to graduate (`graduationBlocker`); otherwise the reason it is not. */
  graduationBlocked: string | null;
}

export interface OpOutcome {
  /** The content after the op: the same object when the op was not applied. */
  content: PlaybookContent;
  result: AppliedOp;
}

/** Flags starting with this block an op: it is held for a person to review. */
export const needsReviewPrefix = 'needs review';
export const minSecretLength = 6;

const credentialShapes: Array<[RegExp, string]> = [
  [/\bsk-[A-Za-z0-9_-]{16,}/, 'an API key (sk-…)'],
  [/\b(ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}/, 'a GitHub token'],
  [/\bgithub_pat_[A-Za-z0-9_]{20,}/, 'a GitHub token'],
  [/\bxox[a-z]-[A-Za-z0-9-]{10,}/, 'a Slack token'],
  [/\bAKIA[0-9A-Z]{16}\b/, 'an AWS access key'],
  [/-----BEGIN [A-Z ]*PRIVATE KEY-----/, 'a private key'],
  [/\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/, 'a JWT'],
];

/** Blocking flags for text a playbook would keep: a job secret's value, or something shaped like a credential. */
export function reviewFlags(text: string, secretValues: readonly string[]): string[] {
  const flags: string[] = [];
  if (secretValues.some((v) => v.length >= minSecretLength && text.includes(v)))
    flags.push(`${needsReviewPrefix}: it contains the value of one of the job's secrets`);
  for (const [pattern, what] of credentialShapes) {
    if (pattern.test(text)) flags.push(`${needsReviewPrefix}: it contains text that looks like ${what}`);
  }
  return [...new Set(flags)];
}

const urlWarning = 'it mentions a URL: check where the URL came from before relying on it';
export const isBlocking = (flags: readonly string[]) => flags.some((f) => f.startsWith(needsReviewPrefix));

class Rejection extends Error {}
const reject = (reason: string): never => {
  throw new Rejection(reason);
};
const bytes = (s: string) => Buffer.byteLength(s);
const blank = (s: string | null) => s === null || s.trim() === '';

function findLearning(c: PlaybookContent, id: string | null): Learning {
  if (blank(id)) reject('the op needs the id of a learning');
  const found = c.learnings.find((l) => l.id.toLowerCase() === id!.trim().toLowerCase());
  return found ?? reject(`there is no learning ${id}`);
}

function checkLearningFields(op: PlaybookOp): { kind: string | null; when: string | null } {
  const kind = op.kind === null ? null : normalizeKind(op.kind);
  if (kind !== null && kind.length > playbookLimits.learningKind)
    reject(`the kind must be at most ${playbookLimits.learningKind} characters`);
  const when = blank(op.when) ? null : op.when!.trim();
  if (when !== null && when.length > playbookLimits.learningWhen)
    reject(`"when" must be at most ${playbookLimits.learningWhen} characters`);
  return { kind, when };
}

const addSource = (sources: string[] | null, runId: string | null) =>
  runId === null ? sources : [...(sources ?? []).filter((s) => s !== runId), runId].slice(-playbookLimits.sources);

interface Applied {
  content: PlaybookContent;
  target?: string;
  /** Texts to check for secrets and credentials. */
  review: string[];
  warnings?: string[];
  extraFlags?: string[];
}

function mainText(op: PlaybookOp, ctx: OpContext): string {
  if (blank(op.content)) reject('the op needs the script as content');
  const main = op.content!;
  if (bytes(main) > playbookLimits.mainBytes) reject('main must be at most 64 KiB');
  const problem = mainInputProblem(main, ctx.declaresInputs);
  if (problem) reject(`main ${problem}`);
  try {
    return readMain(main);
  } catch (err) {
    if (err instanceof HeaderError) reject(`main's header does not parse: ${err.message}`);
    throw err;
  }
}

function decide(c: PlaybookContent, op: PlaybookOp, ctx: OpContext): Applied {
  switch (op.op as OpName) {
    case 'add_learning': {
      const text = (op.text ?? '').trim();
      if (text === '') reject('add_learning needs a text');
      if (text.length > playbookLimits.learningText)
        reject(`a learning must be at most ${playbookLimits.learningText} characters`);
      const same = c.learnings.find((l) => l.status === 'active' && l.text.trim().toLowerCase() === text.toLowerCase());
      if (same)
        reject(`learning ${same.id} already says this; use update_learning to change it instead of adding a copy`);
      const { kind, when } = checkLearningFields(op);
      const id = nextLearningId(c.learnings);
      const learning: Learning = {
        id,
        kind: kind ?? 'fact',
        text,
        hits: 0,
        status: 'active',
        sources: ctx.runId === null ? null : [ctx.runId],
      };
      if (when !== null) learning.when = when;
      return {
        content: { ...c, learnings: [...c.learnings, learning] },
        target: id,
        review: [text, when ?? ''],
        warnings: /https?:\/\//i.test(text) ? [urlWarning] : [],
      };
    }
    case 'update_learning': {
      const current = findLearning(c, op.id);
      const text = blank(op.text) ? null : op.text!.trim();
      if (text !== null && text.length > playbookLimits.learningText)
        reject(`a learning must be at most ${playbookLimits.learningText} characters`);
      const { kind, when } = checkLearningFields(op);
      const next: Learning = {
        ...current,
        text: text ?? current.text,
        kind: kind ?? current.kind,
        status: 'active',
        sources: addSource(current.sources, ctx.runId),
      };
      if (when !== null) next.when = when;
      return {
        content: { ...c, learnings: c.learnings.map((l) => (l === current ? next : l)) },
        target: current.id,
        review: [text ?? '', when ?? ''],
        warnings: text !== null && /https?:\/\//i.test(text) ? [urlWarning] : [],
      };
    }
    case 'retire_learning': {
      const current = findLearning(c, op.id);
      if (current.status === 'retired') reject(`learning ${current.id} is already retired`);
      return {
        content: {
          ...c,
          learnings: c.learnings.map((l) => (l === current ? { ...l, status: 'retired' as const } : l)),
        },
        target: current.id,
        review: [],
      };
    }
    case 'upsert_script': {
      if (blank(op.content)) reject('upsert_script needs the script as content');
      const content = op.content!;
      if (bytes(content) > playbookLimits.scriptBytes) reject('a script must be at most 64 KiB');
      let headerName: string | null;
      try {
        headerName = parseScriptHeader(content).name;
      } catch (err) {
        if (err instanceof HeaderError) reject(`the header does not parse: ${err.message}`);
        throw err;
      }
      const opName = blank(op.name) ? null : op.name!.trim();
      if (opName !== null && headerName !== null && opName !== headerName)
        reject(`the op names the script "${opName}" but its svc:name says "${headerName}"`);
      const name = opName ?? headerName ?? reject('the script needs a name, in the op or in an svc:name header line');
      if (!isValidScriptName(name))
        reject(
          `"${name}" is not a valid script name (letters, digits, _ . -, starting with a letter or digit, at most 64, no ..)`,
        );
      const existing = c.toolkit.find((s) => s.name === name);
      const clash = c.toolkit.find((s) => s.name !== name && toolName(s.name) === toolName(name));
      if (clash) reject(`"${name}" would be the same tool as the script "${clash.name}" (${toolName(name)})`);
      if (!existing && c.toolkit.length >= playbookLimits.scripts)
        reject(`the toolkit already has ${playbookLimits.scripts} scripts; delete or merge one first`);
      let script;
      try {
        script = readScript(name, content, null, addSource(existing?.sources ?? null, ctx.runId));
      } catch (err) {
        if (err instanceof HeaderError) reject(err.message);
        throw err;
      }
      const toolkit = existing
        ? c.toolkit.map((s) => (s === existing ? { ...script, calls: s.calls, failures: s.failures } : s))
        : [...c.toolkit, script];
      return { content: { ...c, toolkit }, target: name, review: [content] };
    }
    case 'delete_script': {
      const name = (op.name ?? '').trim();
      if (!c.toolkit.some((s) => s.name === name))
        reject(name === '' ? 'delete_script needs the name of a script' : `there is no script "${name}"`);
      return { content: { ...c, toolkit: c.toolkit.filter((s) => s.name !== name) }, target: name, review: [] };
    }
    case 'set_setup': {
      const setup = blank(op.content) ? null : op.content!;
      if (setup !== null && bytes(setup) > playbookLimits.setupBytes) reject('the setup script must be at most 16 KiB');
      return { content: { ...c, setup }, target: 'setup', review: [setup ?? ''] };
    }
    case 'set_dockerfile': {
      const dockerfile = blank(op.content) ? null : op.content!;
      if (dockerfile !== null) {
        if (bytes(dockerfile) > playbookLimits.dockerfileBytes) reject('the Dockerfile must be at most 16 KiB');
        if (!hasFrom(dockerfile)) reject('the Dockerfile must contain a FROM line');
      }
      return {
        content: { ...c, dockerfile },
        target: 'dockerfile',
        review: [dockerfile ?? ''],
        extraFlags: dockerfile === null ? [] : dockerfileFlags(dockerfile, ctx.jobImage, c.dockerfile),
      };
    }
    case 'propose_main': {
      if (ctx.graduationBlocked !== null) reject(`propose_main is not allowed yet: ${ctx.graduationBlocked}`);
      const main = mainText(op, ctx);
      return { content: { ...c, main }, target: 'main', review: [main] };
    }
    case 'update_main': {
      if (c.main === null)
        reject('the job has no main script to update; a first main script comes through propose_main');
      const main = mainText(op, ctx);
      return { content: { ...c, main }, target: 'main', review: [main] };
    }
    case 'set_verify': {
      let value: unknown = null;
      if (!blank(op.content)) {
        try {
          value = JSON.parse(op.content!);
        } catch {
          reject(
            'set_verify takes its value as JSON text in content, such as {"checks": ["exit_code == 0"], "llm": false, "varies": []}',
          );
        }
      }
      const { verify, problems } = parseVerify(value);
      if (problems.length > 0)
        reject(
          `verify is not valid: ${problems.map((p) => (p.path ? `${p.path} ${p.message}` : p.message)).join('; ')}`,
        );
      return { content: { ...c, verify }, target: 'verify', review: [] };
    }
    default:
      return reject(
        `"${op.op}" is not an op; use one of add_learning, update_learning, retire_learning, upsert_script, delete_script, set_setup, set_dockerfile, propose_main, update_main, set_verify`,
      );
  }
}

/** Applies one op to `content` (never modified) and says what became of it. */
export function applyOp(content: PlaybookContent, op: PlaybookOp, ctx: OpContext): OpOutcome {
  // What is recorded about the op never keeps a secret value, even when the op is held because of one.
  const clean = redactor(ctx.secretValues.filter((v) => v.length >= minSecretLength));
  const str = (s: string | null) => (s === null ? null : clean(s));
  const base: AppliedOp = {
    status: 'rejected',
    op: op.op,
    rationale: clean(op.rationale ?? ''),
    id: str(op.id),
    kind: str(op.kind),
    text: str(op.text),
    when: str(op.when),
    name: str(op.name),
    content: str(op.content),
  };
  try {
    const applied = decide(content, op, ctx);
    const flags = [
      ...applied.review.flatMap((t) => reviewFlags(t, ctx.secretValues)),
      ...(applied.extraFlags ?? []),
      ...(applied.warnings ?? []),
    ];
    const unique = [...new Set(flags)];
    const target = applied.target === undefined ? {} : { target: applied.target };
    if (isBlocking(unique)) {
      return {
        content,
        result: {
          ...base,
          status: 'held',
          ...target,
          flags: unique,
          reason: 'held for a person to review before it is applied',
        },
      };
    }
    return {
      content: applied.content,
      result: { ...base, status: 'applied', ...target, flags: unique.length > 0 ? unique : null },
    };
  } catch (err) {
    if (!(err instanceof Rejection)) throw err;
    return { content, result: { ...base, status: 'rejected', reason: clean(err.message) } };
  }
}

/** Applies ops in order, each to the result of the ones before it. */
export function applyOps(
  content: PlaybookContent,
  ops: readonly PlaybookOp[],
  ctx: OpContext,
): { content: PlaybookContent; results: AppliedOp[] } {
  const results: AppliedOp[] = [];
  let current = content;
  for (const op of ops) {
    const outcome = applyOp(current, op, ctx);
    current = outcome.content;
    results.push(outcome.result);
  }
  return { content: current, results };
}

/** Tokens over the playbook budget (0 when within it): reflection's second attempt names the excess. */
export function tokensOverBudget(content: PlaybookContent): number {
  return Math.max(0, playbookTokens(content) - playbookBudget);
}
