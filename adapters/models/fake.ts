import { reflectionSchemaName } from '../../domain/reflection.js';
import { fakeReflection } from './fake-reflection.js';
import { instructionHeading } from '../../domain/agent-prompt.js';
import { compileSchemaName, compileSystemPromptFor } from '../../domain/compile.js';
import {
  ModelError,
  type Message,
  type ModelClient,
  type ModelRequest,
  type ModelResponse,
  type ToolCall,
} from './types.js';

/** One scripted answer of the fake provider (the provider that needs no network, for demos and tests). */
export interface FakeResponse {
  text?: string;
  reasoning?: string;
  toolCalls?: Array<{ name: string; args: unknown }>;
  stop?: string;
  usage?: { input: number; output: number };
  delayMs?: number;
  error?: string;
  errorStatus?: number;
}

/** Script queues per fake provider, for this process. */
export class FakeScripts {
  private readonly queues = new Map<string, FakeResponse[]>();
  push(providerId: string, responses: FakeResponse[], reset = false): number {
    const q = reset ? [] : (this.queues.get(providerId) ?? []);
    q.push(...responses);
    this.queues.set(providerId, q);
    return q.length;
  }
  pending(providerId: string): number {
    return this.queues.get(providerId)?.length ?? 0;
  }
  shift(providerId: string): FakeResponse | undefined {
    return this.queues.get(providerId)?.shift();
  }
}
export const fakeScripts = new FakeScripts();

let callCounter = 0;
const tokens = (text: string) => Math.ceil(text.length / 4);

/** The instruction under the job block's heading, up to the next `## ` heading. */
export function instructionFrom(system: string[]): string {
  for (const block of system) {
    const at = block.indexOf(`${instructionHeading}\n`);
    if (at < 0) continue;
    const rest = block.slice(at + instructionHeading.length + 1);
    const end = rest.search(/^## /m);
    return end < 0 ? rest : rest.slice(0, end);
  }
  return '';
}

/** Shell commands an instruction quotes, in order: fenced code blocks (whole) and inline backtick spans. */
export function quotedCommands(instruction: string): string[] {
  const out: Array<{ at: number; cmd: string }> = [];
  const fence = /```[a-zA-Z]*\n([\s\S]*?)```/g;
  let masked = instruction;
  for (const m of instruction.matchAll(fence)) {
    const cmd = m[1]!.trim();
    if (cmd) out.push({ at: m.index!, cmd });
    masked = masked.slice(0, m.index!) + ' '.repeat(m[0].length) + masked.slice(m.index! + m[0].length);
  }
  for (const m of masked.matchAll(/`([^`\n]+)`/g)) {
    const cmd = m[1]!.trim();
    if (cmd) out.push({ at: m.index!, cmd });
  }
  return out.sort((a, b) => a.at - b.at).map((c) => c.cmd);
}

function messageText(m: Message): string {
  if (m.role === 'user') return m.text;
  if (m.role === 'assistant') return m.text + m.toolCalls.map((c) => c.argsText).join('');
  return m.results.map((r) => r.content).join('');
}

function minimalFor(schema: Record<string, unknown>): unknown {
  switch (schema.type) {
    case 'object': {
      const props = (schema.properties ?? {}) as Record<string, Record<string, unknown>>;
      const required = (schema.required ?? []) as string[];
      return Object.fromEntries(required.map((k) => [k, minimalFor(props[k] ?? {})]));
    }
    case 'array':
      return [];
    case 'string':
      return Array.isArray(schema.enum) ? schema.enum[0] : '';
    case 'number':
    case 'integer':
      return 0;
    case 'boolean':
      return false;
    default:
      return null;
  }
}

const weekdays = ['sunday', 'monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday'];

/** The schedule a sentence states in plain words, as cron: "every day at 7am", "every monday", "every 15 minutes"… */
function scheduleOf(sentence: string): { cron: string; human: string } | null {
  const s = sentence.toLowerCase();
  const at = /\bat (\d{1,2})(?::(\d{2}))?\s*(am|pm)?\b/.exec(s);
  let hour = at ? Number(at[1]) % 24 : 9;
  if (at?.[3] === 'pm' && hour < 12) hour += 12;
  if (at?.[3] === 'am' && hour === 12) hour = 0;
  const minute = at?.[2] ? Number(at[2]) : 0;
  const time = `${String(hour).padStart(2, '0')}:${String(minute).padStart(2, '0')}`;
  const every = /\bevery (\d+) minutes?\b/.exec(s);
  if (every) return { cron: `*/${every[1]} * * * *`, human: `every ${every[1]} minutes` };
  if (/\b(every|each) hour\b|\bhourly\b/.test(s)) return { cron: '0 * * * *', human: 'every hour' };
  const day = weekdays.findIndex((d) => new RegExp(`\\b(every|each|on) ${d}s?\\b`).test(s));
  if (day >= 0) return { cron: `${minute} ${hour} * * ${day}`, human: `every ${weekdays[day]} at ${time}` };
  if (/\b(every|each) weekday\b|\bon weekdays\b/.test(s))
    return { cron: `${minute} ${hour} * * 1-5`, human: `weekdays at ${time}` };
  if (/\b(every|each) (day|morning|evening|night)\b|\bdaily\b/.test(s))
    return { cron: `${minute} ${hour} * * *`, human: `every day at ${time}` };
  return null;
}

/**
 * Compile without a model (the compile route's answer shape), deterministic in the sentence: a name from its first words,
 * a schedule from plain words, a timezone when one is named, the sites it names as an allow-list, and the
 * configured MCP servers it mentions (or `<name> MCP`), so a fresh install can try compile offline.
 */
function compileFrom(message: string, askQuestions: boolean): Record<string, unknown> {
  const sentence = message.split('\n\nToday is ')[0]!.trim();
  const configured = /^Configured MCP servers: (.*)\.$/m.exec(message)?.[1] ?? '';
  const names = configured === 'none configured' ? [] : configured.split(', ').filter(Boolean);
  const words = sentence
    .replace(/[^\p{L}\p{N}\s-]/gu, ' ')
    .split(/\s+/)
    .filter(Boolean);
  const name =
    words
      .slice(0, 6)
      .join(' ')
      .replace(/^./, (c) => c.toUpperCase())
      .slice(0, 60) || 'New job';
  const when = scheduleOf(sentence);
  const timezone = /\b([A-Z][a-z]+\/[A-Z][A-Za-z_]+)\b/.exec(sentence)?.[1] ?? 'UTC';
  const domains = [
    ...new Set([...sentence.matchAll(/\b((?:[a-z0-9-]+\.)+[a-z]{2,})\b/gi)].map((m) => m[1]!.toLowerCase())),
  ];
  const offline = /\b(offline|no network|without (the )?(network|internet))\b/i.test(sentence);
  const mentioned = names.filter((n) => new RegExp(`\\b${n.replace(/[-]/g, '\\-')}\\b`, 'i').test(sentence));
  const asked = [...sentence.matchAll(/\b([A-Za-z0-9_-]+) MCP\b/gi)]
    .map((m) => m[1]!)
    .filter((n) => !mentioned.some((x) => x.toLowerCase() === n.toLowerCase()));
  return {
    name,
    title: name,
    goal: sentence,
    schedule: when ? { ...when, timezone } : null,
    successCriteria: ['The run finishes with a summary of what it did.'],
    inputs: [],
    outputs: [],
    mcp: [...mentioned, ...asked].map((server) => ({ server, why: `The instruction mentions ${server}.` })),
    network: offline ? 'none' : domains.length ? 'allowlist' : 'internet',
    allowedDomains: offline ? [] : domains,
    dockerfile: null,
    sideEffects: [],
    warnings: [],
    // Without a schedule word, how often is the open question (asked only when the prompt asks for questions).
    questions:
      askQuestions && !when
        ? [{ question: 'How often should this run?', options: ['Only when started', 'Every day', 'Every week'] }]
        : [],
  };
}

/** With an empty queue: run the quoted commands one bash call at a time, then finish with their output. */
function deterministic(req: ModelRequest): { text: string; toolCalls: Array<{ name: string; args: unknown }> } {
  if (req.jsonSchema?.name === compileSchemaName) {
    const first = req.messages.find((m) => m.role === 'user');
    const ask = req.system.includes(compileSystemPromptFor(true));
    return { text: JSON.stringify(compileFrom(first?.role === 'user' ? first.text : '', ask)), toolCalls: [] };
  }
  if (req.jsonSchema?.name === reflectionSchemaName)
    return { text: fakeReflection(req, quotedCommands), toolCalls: [] };
  if (req.jsonSchema) return { text: JSON.stringify(minimalFor(req.jsonSchema.schema)), toolCalls: [] };
  const commands = quotedCommands(instructionFrom(req.system));
  const calls = req.messages
    .flatMap((m) => (m.role === 'assistant' ? m.toolCalls : []))
    .filter((c) => c.name === 'bash');
  if (calls.length < commands.length && req.tools.some((t) => t.name === 'bash')) {
    const command = commands[calls.length]!;
    return { text: `Running \`${command}\`.`, toolCalls: [{ name: 'bash', args: { command } }] };
  }
  const results = new Map(
    req.messages.flatMap((m) => (m.role === 'tool' ? m.results : [])).map((r) => [r.callId, r.content]),
  );
  const lines: string[] = [];
  let failed = false;
  calls.forEach((c, i) => {
    const content = results.get(c.id) ?? '';
    if (!content.startsWith('exit code: 0')) failed = true;
    lines.push(`${i + 1}. \`${(c.args as { command?: string })?.command ?? ''}\`\n\n\`\`\`\n${content.trim()}\n\`\`\``);
  });
  const summary =
    commands.length === 0
      ? 'The instruction quotes no command, so there was nothing to run.'
      : `Ran ${calls.length} command(s):\n\n${lines.join('\n\n')}`;
  return {
    text: failed ? 'A command failed.' : 'Done.',
    toolCalls: [{ name: 'finish', args: { status: failed ? 'failure' : 'success', summary } }],
  };
}

const wait = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(new ModelError('the call was cancelled', null, false));
    const t = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(t);
        reject(new ModelError('the call was cancelled', null, false));
      },
      { once: true },
    );
  });

/** The product's fake provider: scripted answers first, else a small deterministic agent. Usage ≈ 4 chars a token. */
export class FakeClient implements ModelClient {
  constructor(
    private readonly providerId: string,
    private readonly scripts: FakeScripts = fakeScripts,
  ) {}

  async complete(req: ModelRequest): Promise<ModelResponse> {
    const scripted = this.scripts.shift(this.providerId);
    const answer = scripted ?? deterministic(req);
    const delay = scripted?.delayMs ?? 0;
    const chunks = (answer.text ?? '').split(/(?<=\s)/).filter(Boolean);
    if (delay > 0) await wait(chunks.length > 1 ? delay / 2 : delay, req.signal);
    if (scripted?.error !== undefined) {
      const status = scripted.errorStatus ?? 500;
      throw new ModelError(
        `fake API error (status ${status}): ${scripted.error}`,
        status,
        status === 429 || status === 529 || status >= 500,
      );
    }
    if (scripted?.reasoning) req.onDelta?.({ type: 'reasoning', text: scripted.reasoning });
    for (const chunk of chunks) {
      req.onDelta?.({ type: 'text', text: chunk });
      if (delay > 0 && chunks.length > 1) await wait(delay / 2 / (chunks.length - 1), req.signal);
    }
    const toolCalls: ToolCall[] = (answer.toolCalls ?? []).map((c) => {
      req.onDelta?.({ type: 'tool_call', text: c.name });
      return {
        id: `fake_call_${++callCounter}`,
        name: c.name,
        args: c.args ?? {},
        argsText: JSON.stringify(c.args ?? {}),
      };
    });
    const inputText = req.system.join('\n') + req.messages.map(messageText).join('\n');
    const outputText = (answer.text ?? '') + toolCalls.map((c) => c.argsText).join('');
    return {
      text: answer.text ?? '',
      reasoning: scripted?.reasoning ?? '',
      toolCalls,
      stop: scripted?.stop ?? (toolCalls.length > 0 ? 'tool_use' : 'end_turn'),
      usage: {
        input: scripted?.usage?.input ?? tokens(inputText),
        output: scripted?.usage?.output ?? tokens(outputText),
        cacheRead: 0,
        cacheWrite: 0,
        reasoning: 0,
      },
      model: req.model,
    };
  }
}
