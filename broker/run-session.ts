import { createHash } from 'node:crypto';
import { DomainError } from '../domain/decider.js';
import type { TimelineWriter } from '../server/timeline.js';
import type { CommandContext } from '../server/commands.js';
import type { JobStateAccess } from '../server/job-state.js';
import { costOf, ModelError, type ModelClient, type Price } from '../runner/models/types.js';
import type { NetworkMode } from '../runner/sandbox/types.js';

/** SPEC §8 limits of what a run reports through `svc`. */
export const sessionLimits = { outputs: 100, outputBytes: 1024 * 1024, steps: 1000, stepBytes: 200, summaryBytes: 16 * 1024, failChars: 2000, recordedCalls: 1000, actionCalls: 200 };

export interface LlmModel {
  client: ModelClient;
  name: string;
  price: Price;
}

export interface RunSessionOptions {
  runId: string;
  jobId: string;
  workspaceId: string;
  token: string;
  /** micro-USD; 0 means none. */
  costLimit: number;
  timeline: TimelineWriter;
  jobState: JobStateAccess;
  egress: { network: NetworkMode; allowedDomains: string[] | null; allowPrivateNetwork: boolean };
  models: { agent: LlmModel; utility: LlmModel };
  /** The agent loop's own spend, counted with `svc llm` against the limit. */
  agentSpend(): number;
}

export interface LlmRequest {
  which: 'agent' | 'utility';
  system: string | null;
  prompt: string;
  schema: Record<string, unknown> | null;
  maxTokens: number;
}

const tooLarge = (field: string, message: string) => DomainError.validation([{ field, code: 'too_large', message }]);
export const costLimitMessage = 'the run reached its cost limit, so svc llm is no longer available';

/** Everything one live run does through the broker: its token, outputs, steps, summary, failure and model spend. */
export class RunSession {
  readonly tokenHash: string;
  readonly outputs: Record<string, unknown> = {};
  private outputBytes = 0;
  private readonly outputSizes = new Map<string, number>();
  summary: string | null = null;
  failReason: string | null = null;
  stepCount = 0;
  lastStep: string | null = null;
  llmSpend = 0;
  readonly llmUsage = { input: 0, output: 0 };
  private readonly reservations = new Set<number>();
  private closed = false;
  private recorded = 0;
  private actions = 0;
  private stateWritten = false;
  private overflowNoted = false;
  /** At most 8 requests of a run at once (SPEC §4.6); the rest wait in order. */
  private inFlight = 0;
  private readonly waiting: Array<() => void> = [];
  readonly ctx: CommandContext;

  constructor(readonly options: RunSessionOptions) {
    this.tokenHash = createHash('sha256').update(options.token).digest('hex');
    this.ctx = { workspaceId: options.workspaceId, actor: { type: 'run', id: options.runId }, requestId: null, correlationId: options.runId };
  }

  get isClosed(): boolean {
    return this.closed;
  }

  async acquire(): Promise<() => void> {
    if (this.inFlight >= 8) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.inFlight++;
    return () => {
      this.inFlight--;
      this.waiting.shift()?.();
    };
  }

  /** SPEC §6.4: the first 1,000 calls, then only actions (200), paid llm calls and the first state write. */
  record(payload: Record<string, unknown>, ms: number, kind: 'plain' | 'action' | 'paid' | 'state' = 'plain'): void {
    const keep = this.recorded < sessionLimits.recordedCalls || (kind === 'action' && this.actions < sessionLimits.actionCalls) || kind === 'paid' || (kind === 'state' && !this.stateWritten);
    if (kind === 'action') this.actions++;
    if (kind === 'state') this.stateWritten = true;
    if (this.recorded === sessionLimits.recordedCalls && !this.overflowNoted) {
      this.overflowNoted = true;
      void this.options.timeline.append('log', { message: `The first ${sessionLimits.recordedCalls} broker calls are on the timeline; later calls are left out.` });
    }
    this.recorded++;
    if (keep) void this.options.timeline.append('broker.call', payload, { ms });
  }

  setOutput(key: string, value: unknown): void {
    if (key.length === 0) throw DomainError.validation([{ field: 'key', code: 'required', message: 'must not be empty' }]);
    const size = Buffer.byteLength(key) + Buffer.byteLength(JSON.stringify(value));
    const old = this.outputSizes.get(key);
    if (old === undefined && Object.keys(this.outputs).length >= sessionLimits.outputs) throw tooLarge('key', `a run reports at most ${sessionLimits.outputs} outputs`);
    if (this.outputBytes - (old ?? 0) + size > sessionLimits.outputBytes) throw tooLarge('value', 'a run reports at most 1 MiB of outputs');
    this.outputBytes += size - (old ?? 0);
    this.outputSizes.set(key, size);
    this.outputs[key] = value;
  }

  step(name: string): void {
    if (name.trim() === '') throw DomainError.validation([{ field: 'name', code: 'required', message: 'must not be empty' }]);
    if (Buffer.byteLength(name) > sessionLimits.stepBytes) throw tooLarge('name', 'step names are limited to 200 bytes');
    if (this.stepCount >= sessionLimits.steps) throw tooLarge('name', `a run marks at most ${sessionLimits.steps} steps`);
    this.stepCount++;
    this.lastStep = name;
    void this.options.timeline.append('script.step', { name });
  }

  setSummary(summary: string): void {
    if (Buffer.byteLength(summary) > sessionLimits.summaryBytes) throw tooLarge('summary', 'the summary is limited to 16 KiB');
    this.summary = summary;
  }

  fail(reason: string): void {
    this.failReason = (reason.trim() || 'the script reported a failure').slice(0, sessionLimits.failChars);
  }

  /** BEHAVIOUR §5.3: reserve the worst case, call, settle with the actual cost (or the worst when billing may have started). */
  async llm(req: LlmRequest): Promise<{ text: string; model: string; usage: { input: number; output: number }; cost: number }> {
    const model = this.options.models[req.which];
    const est = Math.ceil((req.prompt.length + (req.system?.length ?? 0) + (req.schema ? JSON.stringify(req.schema).length : 0)) / 2);
    const worst = req.schema
      ? costOf({ input: 2 * est + req.maxTokens, output: 2 * req.maxTokens, cacheRead: 0, cacheWrite: 0 }, model.price)
      : costOf({ input: est, output: req.maxTokens, cacheRead: 0, cacheWrite: 0 }, model.price);
    const limit = this.options.costLimit;
    const spent = this.llmSpend + this.options.agentSpend();
    const reserved = [...this.reservations].reduce((a, b) => a + b, 0);
    if (this.closed || (limit > 0 && (spent >= limit || (this.reservations.size > 0 && spent + reserved + worst > limit)))) {
      throw new DomainError('forbidden', costLimitMessage);
    }
    const token = worst + Math.random() / 1e6; // distinct entries in the set even for equal worst costs
    this.reservations.add(token);
    let charged = 0;
    try {
      const messages = [{ role: 'user' as const, text: req.prompt }];
      const response = await model.client.complete({
        model: model.name, system: req.system ? [req.system] : [], messages, tools: [], maxTokens: req.maxTokens, effort: 'low', signal: AbortSignal.timeout(5 * 60_000),
        ...(req.schema ? { jsonSchema: { name: 'answer', schema: req.schema } } : {}),
      });
      charged = costOf(response.usage, model.price);
      this.llmUsage.input += response.usage.input;
      this.llmUsage.output += response.usage.output;
      return { text: response.text, model: response.model, usage: { input: response.usage.input, output: response.usage.output }, cost: charged };
    } catch (err) {
      if (err instanceof ModelError && err.started) charged = worst;
      throw err;
    } finally {
      // After close() the reservation was already charged at its worst.
      if (this.reservations.delete(token)) this.llmSpend += charged;
    }
  }

  /** The run is over: later calls are refused, and calls still running are charged their worst case. */
  close(): { llmSpend: number } {
    if (!this.closed) {
      this.closed = true;
      for (const r of this.reservations) this.llmSpend += Math.floor(r);
      this.reservations.clear();
    }
    return { llmSpend: this.llmSpend };
  }
}
