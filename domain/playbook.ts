import { DomainError, FieldErrors, type Decider, type DomainEvent } from './decider.js';
import { hasFrom } from './playbook-dockerfile.js';
import {
  completeScript,
  HeaderError,
  isValidScriptName,
  parseScriptHeader,
  toolName,
  type ArgSpec,
} from './playbook-header.js';
import { parseVerify } from './playbook-verify.js';
import { playbookBudget, playbookTokens } from './playbook-render.js';
import {
  playbookLimits,
  type AppliedOp,
  type ContentInput,
  type Learning,
  type PlaybookAuthor,
  type PlaybookContent,
  type Script,
} from './playbook-types.js';
import { streamCategory } from './stream.js';

/**
 * A job's playbook (docs/playbooks.md, "Versions and saves"): numbered, immutable versions in a stream of their own
 * per job. The event at revision r is version r + 1, so "the edit started from version v" is exactly "append
 * expecting revision v − 1": two concurrent saves can never both become the same version, and none is lost.
 */

export type { Verify } from './playbook-verify.js';

export type { PlaybookContent } from './playbook-types.js';

export const playbookStream = streamCategory<PlaybookEvent>('playbook');
export const playbookStreamId = playbookStream.id;

export const emptyContent = (): PlaybookContent => ({
  learnings: [],
  toolkit: [],
  dockerfile: null,
  setup: null,
  main: null,
  verify: null,
});

/** Empty: no learning that is not retired, no toolkit script and no main script. Its runs explore. */
export function isEmptyPlaybook(c: PlaybookContent): boolean {
  return !c.learnings.some((l) => l.status !== 'retired') && c.toolkit.length === 0 && c.main === null;
}

const bytes = (s: string) => Buffer.byteLength(s);
const blankToNull = (s: string | null | undefined) => (s === undefined || s === null || s.trim() === '' ? null : s);

/** `Deploy Notes` → `deploy_notes`; the default kind is `fact`. */
export function normalizeKind(kind: string | null | undefined): string {
  const k = (kind ?? '').trim().toLowerCase().replace(/\s+/g, '_');
  return k === '' ? 'fact' : k;
}

/** The id a new learning gets: `L` plus one more than the highest numeric id in use. */
export function nextLearningId(learnings: readonly Pick<Learning, 'id'>[]): string {
  let max = 0;
  for (const l of learnings) {
    const m = /^L(\d+)$/i.exec(l.id);
    if (m) max = Math.max(max, Number(m[1]));
  }
  return `L${max + 1}`;
}

/** Header-derived `args` in the form the API shows them: `{"limit": "integer?"}`. */
export const argsText = (args: Record<string, ArgSpec>): Record<string, string> =>
  Object.fromEntries(Object.entries(args).map(([n, a]) => [n, a.optional ? `${a.type}?` : a.type]));

/** Answers `/svc/input.json`-reference problems of a main script, or null. */
export function mainInputProblem(main: string, declaresInputs: boolean): string | null {
  return declaresInputs && !main.includes('/svc/input.json')
    ? 'must read the run input from /svc/input.json, because the job declares inputs'
    : null;
}

/**
 * Reads a script the way every save and op does: the header must parse, a header name must match the script's name,
 * a toolkit script needs a description; the shebang is filled in and a trailing newline ensured.
 * Throws `HeaderError` with the problem.
 */
export function readScript(
  name: string,
  content: string,
  language?: string | null,
  sources: string[] | null = null,
): Script {
  const header = parseScriptHeader(content);
  if (header.name !== null && header.name !== name)
    throw new HeaderError(`svc:name says "${header.name}" but the script is named "${name}"`);
  if (header.description === null)
    throw new HeaderError('a toolkit script needs a "svc:description" header line saying what it does');
  const done = completeScript(content, header, language);
  return {
    name,
    description: header.description,
    language: done.language,
    args: argsText(header.args),
    sideEffects: header.sideEffects,
    content: done.content,
    sources,
    calls: 0,
    failures: 0,
  };
}

/** Reads a main script: its header must parse if it has one; the shebang is filled in. Throws `HeaderError`. */
export function readMain(content: string): string {
  return completeScript(content, parseScriptHeader(content)).content;
}

export interface SaveRules {
  /** The job declares run inputs (`spec.inputs`): main must read /svc/input.json. */
  declaresInputs: boolean;
}

/**
 * The save pipeline's normalize and validate steps (docs/playbooks.md, "Versions and saves") for content a person
 * sends: every problem is reported at once, with the field it concerns (`content.toolkit[1].content`). Answers the
 * content to store.
 */
export function validateContent(input: ContentInput, rules: SaveRules): PlaybookContent {
  const errors = new FieldErrors();
  const f = (path: string) => `content.${path}`;

  const learnings: Learning[] = [];
  const ids = new Set<string>();
  const rawLearnings = input.learnings ?? [];
  if (rawLearnings.length > playbookLimits.learnings)
    errors.add(f('learnings'), 'too_long', `must have at most ${playbookLimits.learnings} items`);
  rawLearnings.forEach((l, i) => {
    const at = (k: string) => f(`learnings[${i}].${k}`);
    const text = l.text.trim();
    if (text === '') errors.add(at('text'), 'required', 'must not be empty');
    if (text.length > playbookLimits.learningText)
      errors.add(at('text'), 'too_long', `must be at most ${playbookLimits.learningText} characters`);
    const kind = normalizeKind(l.kind);
    if (kind.length > playbookLimits.learningKind)
      errors.add(at('kind'), 'too_long', `must be at most ${playbookLimits.learningKind} characters`);
    const when = blankToNull(l.when)?.trim() ?? null;
    if (when !== null && when.length > playbookLimits.learningWhen)
      errors.add(at('when'), 'too_long', `must be at most ${playbookLimits.learningWhen} characters`);
    if (l.id !== undefined) {
      if (!/^[A-Za-z0-9_-]+$/.test(l.id)) errors.add(at('id'), 'invalid', 'may hold only letters, digits, _ and -');
      if (ids.has(l.id.toLowerCase())) errors.add(at('id'), 'duplicate', `"${l.id}" is used by another learning`);
      ids.add(l.id.toLowerCase());
    }
    const learning: Learning = {
      id: l.id ?? '',
      kind,
      text,
      hits: 0,
      status: l.status ?? 'active',
      sources: l.sources ? l.sources.slice(-playbookLimits.sources) : null,
    };
    if (when !== null) learning.when = when;
    learnings.push(learning);
  });
  // Learnings added without an id get the next free ones, in order: counted up from one scan, since a scan per
  // learning made a body of 1,000 new learnings cost a third of a second (docs/design.md, "Validation cost").
  let next = Number(nextLearningId(learnings).slice(1));
  for (const l of learnings) if (l.id === '') l.id = `L${next++}`;

  const toolkit: Script[] = [];
  const tools = new Map<string, string>();
  const rawToolkit = input.toolkit ?? [];
  if (rawToolkit.length > playbookLimits.scripts)
    errors.add(f('toolkit'), 'too_long', `must have at most ${playbookLimits.scripts} scripts`);
  rawToolkit.forEach((s, i) => {
    const at = (k: string) => f(`toolkit[${i}].${k}`);
    if (!isValidScriptName(s.name)) {
      errors.add(
        at('name'),
        'invalid',
        'must be letters, digits, _ . or -, start with a letter or digit, be at most 64 characters and not contain ..',
      );
      return;
    }
    const tool = toolName(s.name);
    const other = tools.get(tool);
    if (other !== undefined)
      errors.add(
        at('name'),
        'duplicate',
        other === s.name
          ? `"${s.name}" is used by another script`
          : `"${s.name}" and "${other}" would be the same tool (${tool})`,
      );
    tools.set(tool, s.name);
    if (s.content.trim() === '') return errors.add(at('content'), 'required', 'must not be empty');
    if (bytes(s.content) > playbookLimits.scriptBytes)
      return errors.add(at('content'), 'too_large', 'must be at most 64 KiB');
    try {
      toolkit.push(
        readScript(s.name, s.content, s.language ?? null, s.sources ? s.sources.slice(-playbookLimits.sources) : null),
      );
    } catch (err) {
      if (!(err instanceof HeaderError)) throw err;
      errors.add(at('content'), 'invalid_header', err.message);
    }
  });

  let main = blankToNull(input.main);
  if (main !== null) {
    if (bytes(main) > playbookLimits.mainBytes) errors.add(f('main'), 'too_large', 'must be at most 64 KiB');
    const problem = mainInputProblem(main, rules.declaresInputs);
    if (problem) errors.add(f('main'), 'missing_input', problem);
    try {
      main = readMain(main);
    } catch (err) {
      if (!(err instanceof HeaderError)) throw err;
      errors.add(f('main'), 'invalid_header', err.message);
    }
  }

  const setup = blankToNull(input.setup);
  if (setup !== null && bytes(setup) > playbookLimits.setupBytes)
    errors.add(f('setup'), 'too_large', 'must be at most 16 KiB');
  const dockerfile = blankToNull(input.dockerfile);
  if (dockerfile !== null) {
    if (bytes(dockerfile) > playbookLimits.dockerfileBytes)
      errors.add(f('dockerfile'), 'too_large', 'must be at most 16 KiB');
    else if (!hasFrom(dockerfile)) errors.add(f('dockerfile'), 'invalid', 'must contain a FROM line');
  }

  const { verify, problems } = parseVerify(input.verify);
  for (const p of problems) errors.add(p.path === '' ? f('verify') : f(`verify.${p.path}`), 'invalid', p.message);

  errors.throwIfAny();
  const content: PlaybookContent = { learnings, toolkit, dockerfile, setup, main, verify };
  const tokens = playbookTokens(content);
  if (tokens > playbookBudget) {
    throw DomainError.validation([
      {
        field: 'content',
        code: 'over_budget',
        message: `renders to about ${tokens} tokens; the playbook's budget is ${playbookBudget}. Shorten or retire some learnings.`,
      },
    ]);
  }
  return content;
}

/** Content without statistics, as versions store it. */
export function withoutStats(c: PlaybookContent): PlaybookContent {
  return {
    ...c,
    learnings: c.learnings.map((l) => ({ ...l, hits: 0 })),
    toolkit: c.toolkit.map((s) => ({ ...s, calls: 0, failures: 0 })),
  };
}

export interface PlaybookVersionSaved {
  jobId: string;
  workspaceId: string;
  version: number;
  content: PlaybookContent;
  summary: string;
  author: PlaybookAuthor;
  /** The user or token that saved it, for edits and rollbacks. */
  authorId: string | null;
  sourceRunId: string | null;
  ops: AppliedOp[] | null;
  dockerfileHash: string | null;
  /** The job graduated at this version: reflection applied propose_main, or main appeared where there was none. */
  graduated: boolean;
  rolledBackFrom: number | null;
  createdAt: number;
}

export type PlaybookEvent = DomainEvent<'PlaybookVersionSaved', PlaybookVersionSaved>;

export interface PlaybookState {
  /** 0: the implicit empty playbook. */
  version: number;
  content: PlaybookContent;
  workspaceId: string | null;
}

export interface SavePlaybook {
  type: 'SavePlaybook';
  jobId: string;
  workspaceId: string;
  content: PlaybookContent;
  /** The version the change started from; null saves on top of whatever is latest. */
  baseVersion: number | null;
  summary: string;
  author: PlaybookAuthor;
  authorId: string | null;
  sourceRunId: string | null;
  ops: AppliedOp[] | null;
  dockerfileHash: string | null;
  /** Reflection applied a propose_main. */
  proposedMain: boolean;
  rolledBackFrom: number | null;
  now: number;
}

export type PlaybookCommand = SavePlaybook;

export function staleVersion(latest: number, base: number): DomainError {
  return new DomainError(
    'conflict',
    `The playbook changed since it was loaded: version ${latest} is the latest, the change started from version ${base}. Reload it and make the change again.`,
  );
}

export const playbookDecider: Decider<PlaybookCommand, PlaybookEvent, PlaybookState> = {
  initialState: { version: 0, content: emptyContent(), workspaceId: null },
  evolve(_state, event) {
    return { version: event.data.version, content: event.data.content, workspaceId: event.data.workspaceId };
  },
  decide(command, state) {
    if (state.workspaceId !== null && state.workspaceId !== command.workspaceId) throw DomainError.notFound('Job');
    if (command.baseVersion !== null && command.baseVersion !== state.version)
      throw staleVersion(state.version, command.baseVersion);
    const content = withoutStats(command.content);
    const graduated = command.proposedMain || (content.main !== null && state.content.main === null);
    return [
      {
        type: 'PlaybookVersionSaved',
        data: {
          jobId: command.jobId,
          workspaceId: command.workspaceId,
          version: state.version + 1,
          content,
          summary: command.summary,
          author: command.author,
          authorId: command.authorId,
          sourceRunId: command.sourceRunId,
          ops: command.ops,
          dockerfileHash: command.dockerfileHash,
          graduated,
          rolledBackFrom: command.rolledBackFrom,
          createdAt: command.now,
        },
      },
    ];
  },
};
