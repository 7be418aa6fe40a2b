import Type, { type Static } from 'typebox';
import { Envelope, Nullable, bounds, listQueryProperties, type Agrees, type Same } from './common.js';
import { playbookLimits } from '../domain/playbook-types.js';
import type * as domain from '../domain/playbook-types.js';

export { playbookLimits };

export const LearningStatus = Type.Union([Type.Literal('active'), Type.Literal('retired')]);

export const Learning = Type.Object(
  {
    id: Type.String({ description: 'L1, L2, …: unique within the playbook' }),
    kind: Type.String({ description: 'Lowercase, at most 32 characters; `fact` by default' }),
    text: Type.String({ description: 'At most 600 characters' }),
    hits: Type.Integer({
      minimum: 0,
      description: 'How often reflection said a run used it; kept beside the versions, not in them',
    }),
    status: LearningStatus,
    sources: Nullable(Type.Array(Type.String(), { description: 'Runs it came from, newest last (at most 5)' })),
    when: Type.Optional(Type.String({ description: 'When it applies' })),
  },
  { $id: 'Learning', additionalProperties: false },
);
export type Learning = Static<typeof Learning>;

const ArgTypes = Type.Record(Type.String(), Type.String(), {
  description:
    'Argument name → type (`string`, `integer`, `number`, `boolean`, `object`, `array`, `?` for optional), from the svc:args header',
});

/**
 * A toolkit script. Its description, language, args and side effects are read from its header (docs/playbooks.md,
 * "Script headers").
 */
export const Script = Type.Object(
  {
    name: Type.String({ description: 'File name under /svc/toolkit; the agent calls it as the tool toolkit__<name>' }),
    description: Type.String(),
    language: Type.String({ description: 'python, node, bash or sh, from the shebang' }),
    args: ArgTypes,
    sideEffects: Type.Union([Type.Literal('none'), Type.Literal('external')]),
    content: Type.String(),
    sources: Nullable(Type.Array(Type.String())),
    calls: Type.Integer({ minimum: 0, description: 'Calls in finished runs; kept beside the versions' }),
    failures: Type.Integer({ minimum: 0, description: 'Calls that exited non-zero' }),
  },
  { $id: 'Script', additionalProperties: false },
);
export type Script = Static<typeof Script>;

export const VerifyDto = Type.Object(
  {
    checks: Type.Array(Type.String(), { maxItems: 20 }),
    llm: Type.Boolean(),
    varies: Type.Array(Type.String(), { maxItems: 20 }),
  },
  { $id: 'Verify', additionalProperties: false },
);

/**
 * Playbook content (docs/playbooks.md, "Content"). Answers always carry lists (empty rather than null) and `verify`
 * (null when unset).
 */
export const Content = Type.Object(
  {
    learnings: Nullable(Type.Array(Learning)),
    toolkit: Nullable(Type.Array(Script)),
    dockerfile: Nullable(Type.String()),
    setup: Nullable(Type.String()),
    main: Nullable(Type.String()),
    verify: Type.Optional(Nullable(VerifyDto)),
  },
  { $id: 'Content', additionalProperties: false },
);
export type Content = Static<typeof Content>;

/**
 * What an edit sends. It accepts what GET answered (so a client can send it back), but only names and texts count:
 * statistics are ignored and header-derived fields are read again from the scripts.
 */
export const LearningInput = Type.Object(
  {
    id: Type.Optional(Type.String({ minLength: 1, maxLength: 32, description: 'Left out: the next free L<n>' })),
    kind: Type.Optional(Type.String({ maxLength: 100 })),
    text: Type.String({ maxLength: 4000 }),
    hits: Type.Optional(Type.Integer(bounds.counter)),
    status: Type.Optional(LearningStatus),
    sources: Type.Optional(Nullable(Type.Array(Type.String({ maxLength: 100 }), { maxItems: 100 }))),
    when: Type.Optional(Nullable(Type.String({ maxLength: 1000 }))),
  },
  { $id: 'LearningInput', additionalProperties: false },
);
export type LearningInput = Static<typeof LearningInput>;

export const ScriptInput = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    content: Type.String({ maxLength: 1024 * 1024 }),
    description: Type.Optional(Type.String({ maxLength: 2000 })),
    language: Type.Optional(
      Type.String({ maxLength: 20, description: 'Used only to add a shebang to a script without one' }),
    ),
    args: Type.Optional(Type.Record(Type.String(), Type.String({ maxLength: 200 }), { maxProperties: 100 })),
    sideEffects: Type.Optional(Type.String({ maxLength: 20 })),
    sources: Type.Optional(Nullable(Type.Array(Type.String({ maxLength: 100 }), { maxItems: 100 }))),
    calls: Type.Optional(Type.Integer(bounds.counter)),
    failures: Type.Optional(Type.Integer(bounds.counter)),
  },
  { $id: 'ScriptInput', additionalProperties: false },
);
export type ScriptInput = Static<typeof ScriptInput>;

export const ContentInput = Type.Object(
  {
    learnings: Type.Optional(Nullable(Type.Array(LearningInput, { maxItems: 1000 }))),
    toolkit: Type.Optional(Nullable(Type.Array(ScriptInput, { maxItems: 100 }))),
    dockerfile: Type.Optional(Nullable(Type.String({ maxLength: 1024 * 1024 }))),
    setup: Type.Optional(Nullable(Type.String({ maxLength: 1024 * 1024 }))),
    main: Type.Optional(Nullable(Type.String({ maxLength: 1024 * 1024 }))),
    verify: Type.Optional(
      Type.Unknown({
        description:
          '{checks, llm, varies} or null: the checks a scripted run must pass, whether a model judges it too, the outputs that may vary',
      }),
    ),
  },
  { $id: 'ContentInput', additionalProperties: false },
);
export type ContentInput = Static<typeof ContentInput>;

export const OpTest = Type.Object(
  {
    status: Type.Union([Type.Literal('passed'), Type.Literal('failed'), Type.Literal('skipped')]),
    detail: Type.String(),
    output: Type.Optional(Type.String()),
  },
  { $id: 'OpTest', additionalProperties: false },
);
export type OpTest = Static<typeof OpTest>;

/** One op of a reflection and what became of it (docs/playbooks.md, "Ops"). */
export const AppliedOp = Type.Object(
  {
    status: Type.Union([Type.Literal('applied'), Type.Literal('held'), Type.Literal('rejected')]),
    op: Type.String({
      description:
        'add_learning, update_learning, retire_learning, upsert_script, delete_script, set_setup, set_dockerfile, propose_main, update_main or set_verify',
    }),
    rationale: Type.String(),
    id: Nullable(Type.String()),
    kind: Nullable(Type.String()),
    text: Nullable(Type.String()),
    when: Nullable(Type.String()),
    name: Nullable(Type.String()),
    content: Nullable(Type.String()),
    flags: Type.Optional(Nullable(Type.Array(Type.String()))),
    reason: Type.Optional(Type.String()),
    target: Type.Optional(Type.String()),
    test: Type.Optional(OpTest),
  },
  { $id: 'AppliedOp', additionalProperties: false },
);
export type AppliedOp = Static<typeof AppliedOp>;

export const PlaybookAuthor = Type.Union(
  [Type.Literal('user'), Type.Literal('reflection'), Type.Literal('rollback'), Type.Literal('compile')],
  { $id: 'PlaybookAuthor' },
);
export type PlaybookAuthor = Static<typeof PlaybookAuthor>;

const versionFields = {
  version: Type.Integer({ minimum: 0 }),
  summary: Nullable(Type.String()),
  author: Nullable(PlaybookAuthor),
  authorId: Nullable(
    Type.String({ description: 'The user or token that saved it; null for reflection and the system' }),
  ),
  sourceRunId: Nullable(Type.String({ description: 'The run reflection learned from' })),
  dockerfileHash: Nullable(Type.String({ description: 'sha256 hex of the trimmed Dockerfile' })),
  createdAt: Nullable(Type.Integer({ description: 'Null for version 0, the implicit empty playbook' })),
};

/** The current playbook of a job, with its statistics merged in and its size against the budget. */
export const PlaybookDto = Type.Object(
  {
    jobId: Type.String(),
    ...versionFields,
    content: Content,
    tokens: Type.Integer({ description: 'Estimated tokens of the rendered playbook (characters / 4, rounded up)' }),
    budget: Type.Integer({ description: 'Token budget of the rendered playbook (3,000)' }),
  },
  { $id: 'PlaybookDto', additionalProperties: false },
);
export type PlaybookDto = Static<typeof PlaybookDto>;

export const PlaybookVersionDto = Type.Object(
  { ...versionFields, opCount: Type.Integer({ description: 'Ops of the reflection that made it (0 for edits)' }) },
  { $id: 'PlaybookVersionDto', additionalProperties: false },
);
export type PlaybookVersionDto = Static<typeof PlaybookVersionDto>;

export const PlaybookVersionDetailDto = Type.Object(
  {
    ...versionFields,
    content: Content,
    /** Content of the version before (the empty playbook for version 1), for diffs; null for version 0. */
    previous: Nullable(Content),
    ops: Nullable(Type.Array(AppliedOp)),
  },
  { $id: 'PlaybookVersionDetailDto', additionalProperties: false },
);
export type PlaybookVersionDetailDto = Static<typeof PlaybookVersionDetailDto>;

export const PlaybookVersionEnvelope = Envelope(PlaybookVersionDto, 'PlaybookVersionEnvelope');
export type PlaybookVersionEnvelope = Static<typeof PlaybookVersionEnvelope>;

export const PlaybookVersionListQuery = Type.Object({ ...listQueryProperties }, { additionalProperties: false });
export type PlaybookVersionListQuery = Static<typeof PlaybookVersionListQuery>;

export const PlaybookVersionParams = Type.Object(
  { id: Type.String({ minLength: 1, maxLength: 100 }), version: Type.Integer(bounds.counter) },
  { additionalProperties: false },
);
export type PlaybookVersionParams = Static<typeof PlaybookVersionParams>;

export const PlaybookPutBody = Type.Object(
  {
    content: ContentInput,
    summary: Type.Optional(Type.String({ maxLength: 500, description: 'Defaults to "Edited by hand"' })),
    baseVersion: Type.Optional(
      Type.Integer({ ...bounds.counter, description: 'The version the edit started from; another answers 409' }),
    ),
  },
  { $id: 'PlaybookPutBody', additionalProperties: false },
);
export type PlaybookPutBody = Static<typeof PlaybookPutBody>;

export const RollbackBody = Type.Object(
  {
    version: Type.Integer({ ...bounds.counter, description: '0 is the empty playbook' }),
    baseVersion: Type.Optional(
      Type.Integer({ ...bounds.counter, description: 'The version the caller last saw; another answers 409' }),
    ),
  },
  { $id: 'RollbackBody', additionalProperties: false },
);
export type RollbackBody = Static<typeof RollbackBody>;

// The API carries the domain's playbook parts exactly (docs/events.md, "Stored shapes").
export type PlaybookSchemasAgree = [
  Agrees<Same<Learning, domain.Learning>>,
  Agrees<Same<Script, domain.Script>>,
  Agrees<Same<LearningInput, domain.LearningInput>>,
  Agrees<Same<ScriptInput, domain.ScriptInput>>,
  Agrees<Same<ContentInput, domain.ContentInput>>,
  Agrees<Same<OpTest, domain.OpTest>>,
  Agrees<Same<AppliedOp, domain.AppliedOp>>,
  Agrees<Same<PlaybookAuthor, domain.PlaybookAuthor>>,
];
