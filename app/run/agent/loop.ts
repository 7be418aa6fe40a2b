import {
  costOf,
  ModelError,
  type Message,
  type ModelClient,
  type ModelResponse,
  type Price,
  type ToolResult,
  type Usage,
} from '../../../adapters/models/types.js';
import type { TimelineWriter } from '../../timeline.js';
import type { Tool, ToolContext, ToolOutcome } from './tools.js';
import { compact, compactAt, estimateTokens } from './compaction.js';
import { errorMessage } from '../../../domain/error-message.js';
import { costLimitMessage, stopMessages, turnLimitMessage } from '../../../domain/run-stop.js';

export interface AgentRunInput {
  client: ModelClient;
  model: { name: string; price: Price; contextWindow: number };
  system: string[];
  firstMessage: string;
  tools: Tool[];
  toolContext: ToolContext;
  maxTurns: number;
  /** micro-USD; 0 means no limit. */
  maxCost: number;
  deadline: number;
  signal: AbortSignal;
  /** Spend of `svc llm` calls so far, counted with the agent's own against maxCost. */
  extraSpend(): number;
  timeline: TimelineWriter;
  clock?: () => number;
  /** Waits between repeats of a transient model error (docs/runs.md, "The agent phase"). */
  retryDelaysMs?: number[];
}

export interface AgentRunResult {
  status: 'succeeded' | 'failed' | 'cancelled' | 'timed_out';
  error: string | null;
  summary: string | null;
  outputs: Record<string, unknown>;
  turns: number;
  usage: Usage;
  cost: number;
}

type ToolRun = { result: ToolResult; outcome: ToolOutcome };

const zeroUsage = (): Usage => ({ input: 0, output: 0, cacheRead: 0, cacheWrite: 0, reasoning: 0 });
const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(t);
        resolve();
      },
      { once: true },
    );
  });

/** Live text is sent in batches: at 2,000 characters, after 150 ms, or when its kind changes. */
class DeltaBatcher {
  private type: string | null = null;
  private text = '';
  private timer: NodeJS.Timeout | null = null;
  constructor(private readonly timeline: TimelineWriter) {}
  push(type: string, text: string): void {
    if (this.type !== null && this.type !== type) this.flush();
    this.type = type;
    this.text += text;
    if (this.text.length > 2000) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), 150);
  }
  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.type && this.text) this.timeline.delta({ type: this.type, text: this.text });
    this.text = '';
  }
}

/** The agent loop (docs/runs.md, "The agent phase"): budget checks, model call with retries, tools, until `finish`. */
export async function runAgent(input: AgentRunInput): Promise<AgentRunResult> {
  return new AgentLoop(input).run();
}

/** One agent run's state: the conversation, what it cost, and the turns taken. */
class AgentLoop {
  private readonly clock: () => number;
  private readonly usage = zeroUsage();
  private cost = 0;
  private turns = 0;
  private nudged = false;
  private messages: Message[];
  private lastCompactionTurn = -10;
  private overflowRetried = false;

  constructor(private readonly input: AgentRunInput) {
    this.clock = input.clock ?? Date.now;
    this.messages = [{ role: 'user', text: input.firstMessage }];
  }

  async run(): Promise<AgentRunResult> {
    for (;;) {
      const limit = this.limitReached();
      if (limit) return limit;
      const turn = this.turns + 1;
      const response = await this.call(turn);
      if ('status' in response) return response;
      this.turns = turn;
      const ended = await this.answer(response, turn);
      if (ended) return ended;
    }
  }

  private result(
    status: AgentRunResult['status'],
    error: string | null,
    extra: Partial<AgentRunResult> = {},
  ): AgentRunResult {
    const { turns, usage, cost } = this;
    return { status, error, summary: null, outputs: {}, turns, usage, cost, ...extra };
  }

  private stopped(): AgentRunResult {
    return this.clock() >= this.input.deadline
      ? this.result('timed_out', stopMessages.timeout)
      : this.result('cancelled', stopMessages.stopped);
  }

  /** The run's end when a limit is reached before the next turn. */
  private limitReached(): AgentRunResult | null {
    const { input } = this;
    if (input.signal.aborted) return this.stopped();
    // Going on without a record would spend the model budget on a run nobody can inspect.
    if (input.timeline.failed)
      return this.result('failed', `the run's timeline could not be written: ${input.timeline.failed.message}`);
    if (this.clock() >= input.deadline) return this.result('timed_out', stopMessages.timeout);
    if (this.turns >= input.maxTurns) return this.result('failed', turnLimitMessage(input.maxTurns));
    if (input.maxCost > 0 && this.cost + input.extraSpend() >= input.maxCost)
      return this.result('failed', costLimitMessage(input.maxCost));
    return null;
  }

  private spend(usage: Usage, price: Price): number {
    const callCost = costOf(usage, price);
    this.cost += callCost;
    for (const k of Object.keys(this.usage) as Array<keyof Usage>) this.usage[k] += usage[k];
    return callCost;
  }

  /** The model's answer for this turn, repeated on transient errors; or the run's end. */
  private async call(turn: number): Promise<ModelResponse | AgentRunResult> {
    const delays = this.input.retryDelaysMs ?? [2000, 10_000, 30_000];
    for (let attempt = 0; ; attempt++) {
      const answered = await this.callOnce(turn);
      if (!(answered instanceof ModelError)) return answered;
      if (this.input.signal.aborted) return this.stopped();
      // A prompt too long for the window: compact once and repeat the call once.
      if (answered.contextOverflow && !this.overflowRetried) {
        this.overflowRetried = true;
        // The repeat counts as an attempt, as a transient error's does.
        if (await this.compactNow(turn, estimateTokens(this.messages))) continue;
      }
      if (!answered.transient || attempt >= delays.length)
        return this.result('failed', `model call failed: ${answered.message}`);
      await sleep(delays[attempt]!, this.input.signal);
    }
  }

  /** One model call, streamed to the timeline as it comes and recorded as `llm.call`; a failure is answered. */
  private async callOnce(turn: number): Promise<ModelResponse | ModelError> {
    const { input, clock } = this;
    const batcher = new DeltaBatcher(input.timeline);
    const started = clock();
    try {
      const response = await input.client.complete({
        model: input.model.name,
        system: input.system,
        messages: this.messages,
        tools: input.tools.map((t) => t.spec),
        maxTokens: 16_000,
        effort: 'medium',
        signal: input.signal,
        onDelta: (d) =>
          d.type === 'tool_call' ? (batcher.flush(), input.timeline.delta(d)) : batcher.push(d.type, d.text),
      });
      batcher.flush();
      const cost = this.spend(response.usage, input.model.price);
      const { model, stop, usage, text, reasoning } = response;
      const toolCalls = response.toolCalls.map((c) => ({ id: c.id, name: c.name }));
      const latencyMs = clock() - started;
      const entry = { turn, latencyMs, cost, model, stop, usage, text, reasoning, toolCalls };
      input.timeline.record('llm.call', entry, { ms: clock() - started });
      return response;
    } catch (err) {
      batcher.flush();
      const e = err instanceof ModelError ? err : new ModelError(errorMessage(err), null, true);
      // A call the stop signal cut off is no failure of the model's: the caller ends the run as stopped.
      if (input.signal.aborted) return e;
      const entry = { turn, latencyMs: clock() - started, cost: 0, model: input.model.name, error: e.message };
      input.timeline.record('llm.call', entry, { ms: clock() - started });
      return e;
    }
  }

  /** What the model answered: a refusal, text without tools (nudged once), or tool calls; null to go on. */
  private async answer(response: ModelResponse, turn: number): Promise<AgentRunResult | null> {
    if (response.stop === 'refusal') return this.result('failed', 'the model refused to continue');
    const { text, reasoning, toolCalls } = response;
    this.messages.push({ role: 'assistant', text, ...(reasoning ? { reasoning } : {}), toolCalls });
    if (toolCalls.length === 0) {
      if (this.nudged) return this.result('failed', 'the model stopped without calling finish');
      this.nudged = true;
      this.messages.push({
        role: 'user',
        text: 'Only the finish tool ends the run. Continue the work, or call finish with a status and a summary.',
      });
      return null;
    }
    this.nudged = false;
    const outcomes = await runTools(this.input, response);
    const results: Message = { role: 'tool', results: outcomes.map(({ result }) => result) };
    this.messages.push(results);
    const finished = outcomes.find((o) => o.outcome.finish)?.outcome.finish;
    if (finished) {
      this.input.timeline.record('finish', { ...finished });
      const { summary, outputs } = finished;
      return finished.status === 'success'
        ? this.result('succeeded', null, { summary, outputs })
        : this.result('failed', 'the agent reported failure', { summary, outputs });
    }
    if (this.input.signal.aborted) return this.stopped();
    await this.compactIfFull(response, results, turn);
    return null;
  }

  /** Compacts when the context passes its threshold, but not on two turns in a row. */
  private async compactIfFull(response: ModelResponse, results: Message, turn: number): Promise<void> {
    const u = response.usage;
    const appended = estimateTokens([this.messages[this.messages.length - 2]!, results]);
    const estimate = Math.max(
      u.input + u.cacheRead + u.cacheWrite + u.output + appended,
      estimateTokens(this.messages),
    );
    const window = this.input.model.contextWindow;
    if (window > 0 && estimate > window * compactAt && this.lastCompactionTurn !== turn - 1)
      await this.compactNow(turn, estimate);
  }

  /** Context compaction: its cost counts toward the run; a failure is noted and the run goes on. */
  private async compactNow(turn: number, promptTokens: number): Promise<boolean> {
    const { input, clock } = this;
    const started = clock();
    const messages = this.messages.length;
    try {
      const done = await compact(
        input.client,
        input.model.name,
        this.messages,
        input.model.contextWindow,
        input.signal,
      );
      if (!done) return false;
      const cost = this.spend(done.response.usage, input.model.price);
      this.lastCompactionTurn = turn;
      const error = done.summary ? undefined : 'the summary was empty';
      const { summary, response } = done;
      const entry = { turn, promptTokens, messages, summary, usage: response.usage, cost, ...(error ? { error } : {}) };
      input.timeline.record('agent.compaction', entry, { ms: clock() - started });
      if (!error) this.messages = done.messages;
      return !error;
    } catch (err) {
      const entry = { turn, promptTokens, messages, summary: '', error: errorMessage(err) };
      input.timeline.record('agent.compaction', entry, { ms: clock() - started });
      return false;
    }
  }
}

/** Calls run in order, except that consecutive read-only calls run together; results keep the call order. */
async function runTools(input: AgentRunInput, response: ModelResponse): Promise<ToolRun[]> {
  const calls = response.toolCalls;
  const out: ToolRun[] = new Array<ToolRun>(calls.length);
  const byName = new Map(input.tools.map((t) => [t.spec.name, t]));
  const readOnly = (j: number) => byName.get(calls[j]!.name)?.readOnly === true;
  for (let i = 0; i < calls.length;) {
    if (out.some((o) => o?.outcome.finish)) {
      // Calls after finish in the same batch are not run: the run is over.
      const call = calls[i]!;
      out[i] = {
        result: { callId: call.id, name: call.name, content: 'Not run: the run finished.', isError: true },
        outcome: { content: '', isError: true },
      };
      i++;
      continue;
    }
    let j = i + 1;
    if (readOnly(i)) while (j < calls.length && readOnly(j)) j++;
    const batch = Array.from({ length: j - i }, (_, k) => i + k);
    await Promise.all(batch.map(async (k) => (out[k] = await runTool(input, byName.get(calls[k]!.name), calls[k]!))));
    i = j;
  }
  return out;
}

/** One tool call, recorded as `tool.call` and `tool.result`; what the tool throws is its error result. */
async function runTool(
  input: AgentRunInput,
  tool: Tool | undefined,
  call: ModelResponse['toolCalls'][number],
): Promise<ToolRun> {
  const started = Date.now();
  const args = call.args ?? call.argsText;
  input.timeline.record('tool.call', { callId: call.id, name: call.name, args }, { spanId: call.id });
  let outcome: ToolOutcome;
  if (!tool) outcome = { content: `Unknown tool "${call.name}". Use one of the tools you were given.`, isError: true };
  else if (call.args === null || typeof call.args !== 'object' || Array.isArray(call.args))
    outcome = { content: `The arguments of ${call.name} are not a JSON object.`, isError: true };
  else {
    try {
      outcome = await tool.run(call.args as Record<string, unknown>, call.id, input.toolContext);
    } catch (err) {
      outcome = { content: `${call.name} failed: ${errorMessage(err)}`, isError: true };
    }
  }
  const { content, isError } = outcome;
  const recorded = { callId: call.id, name: call.name, content, isError, meta: outcome.meta ?? {} };
  input.timeline.record(
    'tool.result',
    { ...recorded, ...(outcome.finish ? { finish: true } : {}) },
    { spanId: call.id, ms: Date.now() - started },
  );
  return { result: { callId: call.id, name: call.name, content, isError }, outcome };
}
