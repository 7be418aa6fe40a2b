import Type, { type Static } from 'typebox';
import { Nullable } from './common.js';
import { Spec } from './job.js';

/** The sentence `POST /api/jobs/compile` turns into a proposed job. */
export const CompileInputBody = Type.Object(
  {
    instruction: Type.String({ minLength: 1, maxLength: 20000, description: 'The sentence to compile' }),
    askQuestions: Type.Optional(
      Type.Boolean({
        default: true,
        description: 'Let the model ask clarifying questions (`questions`) when the sentence leaves something open',
      }),
    ),
  },
  { $id: 'CompileInputBody', additionalProperties: false },
);
export type CompileInputBody = Static<typeof CompileInputBody>;

/** An MCP need matched against the registry: `serverId` is null when no server of that name is configured. */
export const CompiledMcpNeed = Type.Object(
  { server: Type.String(), why: Type.String(), serverId: Nullable(Type.String()) },
  { $id: 'CompiledMcpNeed', additionalProperties: false },
);

/** A clarifying question the model asks about the sentence, with likely answers to pick from. */
export const CompileQuestion = Type.Object(
  { question: Type.String(), options: Type.Array(Type.String()) },
  { $id: 'CompileQuestion', additionalProperties: false },
);

/**
 * A proposed job (docs/jobs.md, "Compile"), nothing saved: `spec` as the job keeps it, and the job fields it implies
 * (name, instruction, cron, timezone, network, allowed domains), ready for `POST /api/jobs`.
 */
export const CompileOutputBody = Type.Object(
  {
    name: Type.String(),
    instruction: Type.String(),
    spec: Spec,
    questions: Type.Array(CompileQuestion, { description: 'Empty when askQuestions is false or nothing is unclear' }),
    cron: Nullable(Type.String()),
    timezone: Nullable(Type.String()),
    scheduleHuman: Nullable(Type.String()),
    network: Type.Union([Type.Literal('none'), Type.Literal('internet'), Type.Literal('allowlist')]),
    allowedDomains: Nullable(Type.Array(Type.String())),
    mcp: Type.Array(CompiledMcpNeed),
    warnings: Type.Array(Type.String()),
  },
  { $id: 'CompileOutputBody', additionalProperties: false },
);
