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
  /** Waits between repeats of a transient model error (BEHAVIOUR §3.3). */
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

const zeroUsage = (): Usage => ({ input: 0, output: 0, cacheRead: 0, cacheWrite: 0, reasoning: 0 });
const dollars = (micro: number) => `$${(micro / 1e6).toFixed(2)}`;
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

/** Live text is sent in batches: at 2,000 characters, after 150 ms, or when its kind changes (BEHAVIOUR §3.5). */
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

/** The agent loop of BEHAVIOUR §3.3: budget checks, model call with retries, tools, until `finish`. */
export async function runAgent(input: AgentRunInput): Promise<AgentRunResult> {
  const clock = input.clock ?? Date.now;
  const delays = input.retryDelaysMs ?? [2000, 10_000, 30_000];
  const usage = zeroUsage();
  let cost = 0;
  let turns = 0;
  let nudged = false;
  let messages: Message[] = [{ role: 'user', text: input.firstMessage }];
  let lastCompactionTurn = -10;
  let overflowRetried = false;
  /** Context compaction (BEHAVIOUR §3.4): its cost counts toward the run; a failure is noted and the run goes on. */
  const compactNow = async (turn: number, promptTokens: number): Promise<boolean> => {
    const started = clock();
    try {
      const done = await compact(input.client, input.model.name, messages, input.model.contextWindow, input.signal);
      if (!done) return false;
      const callCost = costOf(done.response.usage, input.model.price);
      cost += callCost;
      for (const k of Object.keys(usage) as Array<keyof Usage>) usage[k] += done.response.usage[k];
      lastCompactionTurn = turn;
      const error = done.summary ? undefined : 'the summary was empty';
      input.timeline.record(
        'agent.compaction',
        {
          turn,
          promptTokens,
          messages: messages.length,
          summary: done.summary,
          usage: done.response.usage,
          cost: callCost,
          ...(error ? { error } : {}),
        },
        { ms: clock() - started },
      );
      if (!error) messages = done.messages;
      return !error;
    } catch (err) {
      input.timeline.record(
        'agent.compaction',
        { turn, promptTokens, messages: messages.length, summary: '', error: errorMessage(err) },
        { ms: clock() - started },
      );
      return false;
    }
  };
  const specs = input.tools.map((t) => t.spec);
  const result = (
    status: AgentRunResult['status'],
    error: string | null,
    extra: Partial<AgentRunResult> = {},
  ): AgentRunResult => ({ status, error, summary: null, outputs: {}, turns, usage, cost, ...extra });
  const stopped = () =>
    clock() >= input.deadline
      ? result('timed_out', 'the run exceeded its time limit')
      : result('cancelled', 'run was stopped');

  for (;;) {
    if (input.signal.aborted) return stopped();
    // Going on without a record would spend the model budget on a run nobody can inspect.
    if (input.timeline.failed)
      return result('failed', `the run's timeline could not be written: ${input.timeline.failed.message}`);
    if (clock() >= input.deadline) return result('timed_out', 'the run exceeded its time limit');
    if (turns >= input.maxTurns)
      return result('failed', `the run exceeded its limit of ${input.maxTurns} turn${input.maxTurns === 1 ? '' : 's'}`);
    if (input.maxCost > 0 && cost + input.extraSpend() >= input.maxCost)
      return result('failed', `the run exceeded its cost limit of ${dollars(input.maxCost)}`);

    const turn = turns + 1;
    let response: ModelResponse | null = null;
    for (let attempt = 0; response === null; attempt++) {
      const batcher = new DeltaBatcher(input.timeline);
      const started = clock();
      try {
        response = await input.client.complete({
          model: input.model.name,
          system: input.system,
          messages,
          tools: specs,
          maxTokens: 16_000,
          effort: 'medium',
          signal: input.signal,
          onDelta: (d) =>
            d.type === 'tool_call' ? (batcher.flush(), input.timeline.delta(d)) : batcher.push(d.type, d.text),
        });
        batcher.flush();
        const callCost = costOf(response.usage, input.model.price);
        cost += callCost;
        for (const k of Object.keys(usage) as Array<keyof Usage>) usage[k] += response.usage[k];
        input.timeline.record(
          'llm.call',
          {
            turn,
            latencyMs: clock() - started,
            cost: callCost,
            model: response.model,
            stop: response.stop,
            usage: response.usage,
            text: response.text,
            reasoning: response.reasoning,
            toolCalls: response.toolCalls.map((c) => ({ id: c.id, name: c.name })),
          },
          { ms: clock() - started },
        );
      } catch (err) {
        batcher.flush();
        if (input.signal.aborted) return stopped();
        const e = err instanceof ModelError ? err : new ModelError(errorMessage(err), null, true);
        input.timeline.record(
          'llm.call',
          { turn, latencyMs: clock() - started, cost: 0, model: input.model.name, error: e.message },
          { ms: clock() - started },
        );
        // A prompt too long for the window: compact once and repeat the call once.
        if (e.contextOverflow && !overflowRetried) {
          overflowRetried = true;
          if (await compactNow(turn, estimateTokens(messages))) continue;
        }
        if (!e.transient || attempt >= delays.length) return result('failed', `model call failed: ${e.message}`);
        await sleep(delays[attempt]!, input.signal);
      }
    }
    turns = turn;

    if (response.stop === 'refusal') return result('failed', 'the model refused to continue');
    messages.push({
      role: 'assistant',
      text: response.text,
      ...(response.reasoning ? { reasoning: response.reasoning } : {}),
      toolCalls: response.toolCalls,
    });
    if (response.toolCalls.length === 0) {
      if (nudged) return result('failed', 'the model stopped without calling finish');
      nudged = true;
      messages.push({
        role: 'user',
        text: 'Only the finish tool ends the run. Continue the work, or call finish with a status and a summary.',
      });
      continue;
    }
    nudged = false;

    const outcomes = await runTools(input, response);
    const results: Message = { role: 'tool', results: outcomes.map(({ result }) => result) };
    messages.push(results);
    const finished = outcomes.find((o) => o.outcome.finish)?.outcome.finish;
    if (finished) {
      input.timeline.record('finish', { ...finished });
      return finished.status === 'success'
        ? result('succeeded', null, { summary: finished.summary, outputs: finished.outputs })
        : result('failed', 'the agent reported failure', { summary: finished.summary, outputs: finished.outputs });
    }
    if (input.signal.aborted) return stopped();
    const u = response.usage;
    const appended = estimateTokens([messages[messages.length - 2]!, results]);
    const estimate = Math.max(u.input + u.cacheRead + u.cacheWrite + u.output + appended, estimateTokens(messages));
    if (
      input.model.contextWindow > 0 &&
      estimate > input.model.contextWindow * compactAt &&
      lastCompactionTurn !== turn - 1
    )
      await compactNow(turn, estimate);
  }
}

/** Calls run in order, except that consecutive read-only calls run together; results keep the call order. */
async function runTools(
  input: AgentRunInput,
  response: ModelResponse,
): Promise<Array<{ result: ToolResult; outcome: ToolOutcome }>> {
  const calls = response.toolCalls;
  const out: Array<{ result: ToolResult; outcome: ToolOutcome }> = new Array(calls.length);
  const byName = new Map(input.tools.map((t) => [t.spec.name, t]));
  const runOne = async (i: number) => {
    const call = calls[i]!;
    const tool = byName.get(call.name);
    const started = Date.now();
    input.timeline.record(
      'tool.call',
      { callId: call.id, name: call.name, args: call.args ?? call.argsText },
      { spanId: call.id },
    );
    let outcome: ToolOutcome;
    if (!tool)
      outcome = { content: `Unknown tool "${call.name}". Use one of the tools you were given.`, isError: true };
    else if (call.args === null || typeof call.args !== 'object' || Array.isArray(call.args))
      outcome = { content: `The arguments of ${call.name} are not a JSON object.`, isError: true };
    else {
      try {
        outcome = await tool.run(call.args as Record<string, unknown>, call.id, input.toolContext);
      } catch (err) {
        outcome = { content: `${call.name} failed: ${errorMessage(err)}`, isError: true };
      }
    }
    input.timeline.record(
      'tool.result',
      {
        callId: call.id,
        name: call.name,
        content: outcome.content,
        isError: outcome.isError,
        meta: outcome.meta ?? {},
        ...(outcome.finish ? { finish: true } : {}),
      },
      { spanId: call.id, ms: Date.now() - started },
    );
    out[i] = {
      result: { callId: call.id, name: call.name, content: outcome.content, isError: outcome.isError },
      outcome,
    };
  };
  for (let i = 0; i < calls.length;) {
    if (out.some((o) => o?.outcome.finish)) {
      // Calls after finish in the same batch are not run: the run is over.
      out[i] = {
        result: { callId: calls[i]!.id, name: calls[i]!.name, content: 'Not run: the run finished.', isError: true },
        outcome: { content: '', isError: true },
      };
      i++;
      continue;
    }
    const readOnly = (j: number) => byName.get(calls[j]!.name)?.readOnly === true;
    if (readOnly(i)) {
      let j = i;
      while (j < calls.length && readOnly(j)) j++;
      await Promise.all(Array.from({ length: j - i }, (_, k) => runOne(i + k)));
      i = j;
    } else {
      await runOne(i);
      i++;
    }
  }
  return out;
}
