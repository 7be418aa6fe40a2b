import { describeCron, isValidTimezone, validateCron } from './cron.js';
import { domainError, normalizeDomain } from './domains.js';

/**
 * Compiling a sentence into a proposed job (docs/jobs.md, "Compile"): the model's instructions and answer schema, and
 * the server's checks of the answer. Pure: the route calls the model and passes what it needs in.
 */

/** The name the answer schema goes by; the fake provider answers it deterministically. */
export const compileSchemaName = 'compiled_job';

const str = { type: 'string' };
const strings = { type: 'array', items: str };
const ioFields = {
  type: 'array',
  items: {
    type: 'object',
    properties: { name: str, type: str, description: str },
    required: ['name', 'type', 'description'],
    additionalProperties: false,
  },
};

/** Strict structured output: every property required, nothing else allowed. */
export const compileAnswerSchema: Record<string, unknown> = {
  type: 'object',
  properties: {
    name: str,
    title: str,
    goal: str,
    schedule: {
      anyOf: [
        {
          type: 'object',
          properties: { cron: str, timezone: str, human: str },
          required: ['cron', 'timezone', 'human'],
          additionalProperties: false,
        },
        { type: 'null' },
      ],
    },
    successCriteria: strings,
    inputs: ioFields,
    outputs: ioFields,
    mcp: {
      type: 'array',
      items: {
        type: 'object',
        properties: { server: str, why: str },
        required: ['server', 'why'],
        additionalProperties: false,
      },
    },
    network: { type: 'string', enum: ['none', 'internet', 'allowlist'] },
    allowedDomains: strings,
    dockerfile: { anyOf: [str, { type: 'null' }] },
    sideEffects: strings,
    warnings: strings,
    questions: {
      type: 'array',
      items: {
        type: 'object',
        properties: { question: str, options: strings },
        required: ['question', 'options'],
        additionalProperties: false,
      },
    },
  },
  required: [
    'name',
    'title',
    'goal',
    'schedule',
    'successCriteria',
    'inputs',
    'outputs',
    'mcp',
    'network',
    'allowedDomains',
    'dockerfile',
    'sideEffects',
    'warnings',
    'questions',
  ],
  additionalProperties: false,
};

export const compileSystemPrompt = [
  'You turn one sentence describing recurring or one-off work into a job definition for an automation service.',
  'Each run of the job happens in a fresh Linux sandbox where an agent with a shell does the work; state it needs between runs is kept in the built-in job state, so never propose external storage for that.',
  'Rules:',
  '- name: short, at most 60 characters. title and goal restate the work plainly.',
  '- schedule: only when the work recurs; a 5-field cron expression, the timezone the sentence implies (UTC when none), and a short human reading. null otherwise.',
  '- successCriteria: checkable statements about a good run.',
  '- inputs and outputs: small structured values only.',
  '- mcp: the tool servers the work needs, using the names of the configured MCP servers listed in the message when one fits.',
  "- network: 'none' only when the work is clearly offline; 'allowlist' with allowedDomains when the sentence names the sites; else 'internet'.",
  '- dockerfile: null unless tools beyond a standard Debian image are needed (FROM the default image).',
  '- sideEffects: what the job changes outside its sandbox (messages sent, records written). warnings: anything unclear or risky.',
].join('\n');

/** The rule for `questions`, by whether the caller wants them (docs/jobs.md, "Compile"). */
export const compileQuestionsRule = {
  ask: '- questions: when the sentence leaves open something that changes the job (how often, where results go, which account), up to 3 short clarifying questions, each with 2 to 4 likely answers as options; [] when the sentence is clear enough.',
  skip: '- questions: always [].',
} as const;

/** The system prompt: the rules above, and whether to ask clarifying questions. */
export function compileSystemPromptFor(askQuestions: boolean): string {
  return `${compileSystemPrompt}\n${askQuestions ? compileQuestionsRule.ask : compileQuestionsRule.skip}`;
}

/** The user message: the sentence, today's date in UTC, and the configured MCP server names. */
export function compileUserMessage(instruction: string, now: number, serverNames: string[]): string {
  const day = new Date(now);
  const weekday = day.toLocaleDateString('en-US', { weekday: 'long', timeZone: 'UTC' });
  return [
    instruction,
    '',
    `Today is ${weekday}, ${day.toISOString().slice(0, 10)} (UTC).`,
    `Configured MCP servers: ${serverNames.length ? serverNames.join(', ') : 'none configured'}.`,
  ].join('\n');
}

export interface CompileAnswer {
  name: string;
  title: string;
  goal: string;
  schedule: { cron: string; timezone: string; human: string } | null;
  successCriteria: string[];
  inputs: Array<{ name: string; type: string; description: string }>;
  outputs: Array<{ name: string; type: string; description: string }>;
  mcp: Array<{ server: string; why: string }>;
  network: 'none' | 'internet' | 'allowlist';
  allowedDomains: string[];
  dockerfile: string | null;
  sideEffects: string[];
  warnings: string[];
  questions: Array<{ question: string; options: string[] }>;
}

export interface CompileContext {
  instruction: string;
  servers: Array<{ id: string; name: string; enabled: boolean }>;
  /** Networks the active sandbox backend offers; null when this process does not know (no runner role). */
  networks: string[] | null;
  imageBuilds: boolean | null;
  /** False: questions the model asks anyway are dropped. */
  askQuestions: boolean;
}

const clip = (s: unknown, max: number) => (typeof s === 'string' ? s.slice(0, max) : '');
const list = (v: unknown, max: number) =>
  Array.isArray(v)
    ? v
        .filter((x): x is string => typeof x === 'string')
        .slice(0, 100)
        .map((x) => x.slice(0, max))
    : [];
const fields = (v: unknown) =>
  (Array.isArray(v) ? v : [])
    .filter((f): f is Record<string, unknown> => !!f && typeof f === 'object')
    .slice(0, 100)
    .map((f) => ({
      name: clip(f.name, 100),
      type: clip(f.type, 100) || 'string',
      description: clip(f.description, 2000),
    }))
    .filter((f, i, all) => f.name !== '' && all.findIndex((g) => g.name === f.name) === i);

/**
 * Checks and completes the model's answer: bounds as JobFields has them, the schedule re-checked, allowed domains
 * cleaned, MCP needs matched to the registry (case-insensitive), and warnings appended for what the workspace cannot
 * give the job: an unknown or disabled server, a network or a Dockerfile the sandbox backend does not offer.
 */
export function finishCompile(raw: unknown, ctx: CompileContext) {
  const a = (raw && typeof raw === 'object' ? raw : {}) as Partial<Record<keyof CompileAnswer, unknown>>;
  const warnings = list(a.warnings, 2000);
  let schedule: CompileAnswer['schedule'] = null;
  const s = a.schedule as Record<string, unknown> | null | undefined;
  if (s && typeof s === 'object') {
    const cron = clip(s.cron, 100).trim();
    const timezone = clip(s.timezone, 100).trim() || 'UTC';
    const problem = validateCron(cron) ?? (isValidTimezone(timezone) ? null : `${timezone} is not an IANA timezone`);
    if (problem) warnings.push(`The proposed schedule is invalid: ${problem}`);
    else schedule = { cron, timezone, human: clip(s.human, 500) || describeCron(cron) };
  }
  let network: CompileAnswer['network'] = a.network === 'none' || a.network === 'allowlist' ? a.network : 'internet';
  const allowedDomains = [
    ...new Set(
      list(a.allowedDomains, 253)
        .map(normalizeDomain)
        .filter((d) => domainError(d) === null),
    ),
  ];
  if (network === 'allowlist' && allowedDomains.length === 0) network = 'internet';
  if (ctx.networks && !ctx.networks.includes(network))
    warnings.push(`network: ${network} is not supported by the active sandbox adapter.`);
  const dockerfile = typeof a.dockerfile === 'string' && a.dockerfile.trim() ? a.dockerfile.slice(0, 65536) : null;
  if (dockerfile && ctx.imageBuilds === false)
    warnings.push('Dockerfiles need a sandbox adapter that can build images.');
  const byName = new Map(ctx.servers.map((x) => [x.name.toLowerCase(), x]));
  const mcp = (Array.isArray(a.mcp) ? a.mcp : []).slice(0, 100).flatMap((n: unknown) => {
    const need = (n && typeof n === 'object' ? n : {}) as Record<string, unknown>;
    const wanted = clip(need.server, 100).trim();
    if (!wanted) return [];
    const match = byName.get(wanted.toLowerCase()) ?? null;
    if (!match) warnings.push(`Mentions ${wanted}, but no MCP server with that name is configured.`);
    else if (!match.enabled) warnings.push(`The MCP server ${match.name} is disabled.`);
    return [{ server: match?.name ?? wanted, why: clip(need.why, 2000), serverId: match?.id ?? null }];
  });
  const title = clip(a.title, 200);
  const name = (
    clip(a.name, 200).trim() ||
    title.trim() ||
    ctx.instruction.trim().split(/\s+/).slice(0, 6).join(' ')
  ).slice(0, 200);
  const spec = {
    title,
    goal: clip(a.goal, 20000),
    schedule,
    successCriteria: list(a.successCriteria, 2000),
    inputs: fields(a.inputs),
    outputs: fields(a.outputs),
    mcp: mcp.map(({ server, why }) => ({ server, why })),
    network: network === 'none' ? ('none' as const) : ('internet' as const),
    dockerfile,
    sideEffects: list(a.sideEffects, 2000),
    warnings: warnings.slice(0, 100),
  };
  const questions = !ctx.askQuestions
    ? []
    : (Array.isArray(a.questions) ? a.questions : [])
        .filter((q): q is Record<string, unknown> => !!q && typeof q === 'object')
        .map((q) => ({ question: clip(q.question, 500).trim(), options: list(q.options, 200).slice(0, 6) }))
        .filter((q) => q.question !== '')
        .slice(0, 5);
  return {
    name,
    instruction: ctx.instruction,
    spec,
    questions,
    cron: schedule?.cron ?? null,
    timezone: schedule?.timezone ?? null,
    scheduleHuman: schedule?.human ?? null,
    network,
    allowedDomains: network === 'allowlist' ? allowedDomains : null,
    mcp,
    warnings: spec.warnings,
  };
}
