import { Ajv, type ValidateFunction } from 'ajv';
import { DomainError } from '../domain/decider.js';
import type { CommandContext } from '../app/commands.js';
import type { JobStateAccess } from '../app/job-state.js';
import { hashToken } from '../adapters/keys.js';
import type { NetworkRule } from '../adapters/egress/address-guard.js';
import { BrokerError, invalid, providerError } from './errors.js';
import { brokerLimits, costLimitMessage, defaultFailReason } from './limits.js';
import { Semaphore } from './semaphore.js';
import { errorMessage } from '../domain/error-message.js';
import { ignoreFailure } from '../domain/ignore-failure.js';

export type LlmWhich = 'agent' | 'utility';

export interface LlmHookRequest {
  which: LlmWhich;
  system: string | null;
  prompt: string;
  schema: Record<string, unknown> | null;
  maxTokens: number;
  signal: AbortSignal;
}

export interface LlmHookAnswer {
  text: string;
  /** The answer parsed as JSON when a schema was given and the text is JSON; null otherwise. */
  json: unknown | null;
  usage: { input: number; output: number };
  /** micro-USD. */
  cost: number;
  model: string;
}

/** What the runner supplies to a run's session: the broker itself knows no models, prices, timelines or MCP servers. */
export interface RunSessionHooks {
  /** Append a timeline event to the run (type, payload, duration in ms or null). */
  timeline(type: string, payload: Record<string, unknown>, ms: number | null): void;
  /**
   * One tool-less model call. `which` picks the run's own model or the utility model. An error with `started: true`
   * (ModelError) means billing may have started: the call is charged its worst case.
   */
  llm(req: LlmHookRequest): Promise<LlmHookAnswer>;
  /** Worst-case cost in micro-USD of a call with this many input tokens and max output tokens, on that model. */
  worstCost(which: LlmWhich, inputTokens: number, outputTokens: number): number;
  /** Spend of the agent loop itself so far (micro-USD), counted with svc llm spend against costLimit. */
  agentSpend(): number;
  /** MCP: when absent, the mcp routes answer 404 not_found saying the job has no MCP servers. */
  mcpTools?(server: string | null): Promise<unknown[]>;
  /**
   * Throws DomainError not_found for an unknown server/tool pair, forbidden for a refused call (shadow runs).
   * `readOnly`: the tool is marked read-only; other calls are actions, kept on the timeline past its cap.
   */
  mcpCall?(
    server: string,
    tool: string,
    args: unknown,
  ): Promise<{ output: string; isError: boolean; readOnly?: boolean }>;
}

/** The job's network rule, for the egress proxy. */
export type EgressRule = NetworkRule;

export interface RunSessionOptions {
  runId: string;
  jobId: string;
  workspaceId: string;
  /** The run's bearer token; only its SHA-256 hash is kept. */
  token: string;
  /** micro-USD; 0 means none. */
  costLimit: number;
  /** The job's state, or a shadow run's overlay of it. */
  jobState: JobStateAccess;
  egress: EgressRule;
  hooks: RunSessionHooks;
}

/** How a broker call counts for the timeline cap (docs/sandbox.md, "The `svc` command and the broker"). */
export type CallKind = 'plain' | 'action' | 'paid' | 'state';

export interface LlmRequest {
  which: LlmWhich;
  system: string | null;
  prompt: string;
  schema: Record<string, unknown> | null;
  maxTokens: number;
}

/** Filled while an llm call runs, so a failed call is recorded with what it cost too. */
export interface LlmNote {
  model?: string;
  usage?: { input: number; output: number };
  cost: number;
}

const tooLarge = (field: string, message: string) => DomainError.validation([{ field, code: 'too_large', message }]);
const isStarted = (err: unknown) =>
  typeof err === 'object' && err !== null && (err as { started?: unknown }).started === true;
/** Why a closer's failure is ignored: what it leaves behind (a socket, a directory) answers to no token any more. */
const closerFailure = 'the session is closed: a socket or directory a closer leaves serves no run';

const ajv = new Ajv({ allErrors: true, strict: false, addUsedSchema: false, validateFormats: false, logger: false });

/**
 * Everything one live run does through the broker: its token, request slots, outputs, steps, summary, failure,
 * model spend and which of its calls reach the timeline. The runner reads the getters at the end and calls `close`.
 */
export class RunSession {
  readonly tokenHash: string;
  /** Metadata of the state events this run writes. */
  readonly ctx: CommandContext;
  private readonly slots = new Semaphore(brokerLimits.inFlight);
  private readonly outputValues = new Map<string, { value: unknown; size: number }>();
  private outputBytes = 0;
  private summaryText: string | null = null;
  private failText: string | null = null;
  private stepCount = 0;
  private lastStep: string | null = null;
  private spent = 0;
  private readonly usageTotals = { input: 0, output: 0 };
  private readonly reservations = new Map<symbol, number>();
  private closed = false;
  private callCount = 0;
  private keptActions = 0;
  private stateSet = false;
  private overflowNoted = false;
  private readonly actionList: Array<{ server: string; tool: string; args: string; ok: boolean }> = [];
  private readonly closers: Array<() => Promise<void>> = [];

  constructor(
    readonly options: RunSessionOptions,
    private readonly unregister: (session: RunSession) => void = () => undefined,
  ) {
    this.tokenHash = hashToken(options.token);
    this.ctx = {
      workspaceId: options.workspaceId,
      actor: { type: 'run', id: options.runId },
      requestId: null,
      correlationId: options.runId,
    };
  }

  get isClosed(): boolean {
    return this.closed;
  }
  /** Whether `token` is this run's token and the run is still executing. */
  holds(token: string): boolean {
    return !this.closed && hashToken(token) === this.tokenHash;
  }
  /**
   * Runs `fn` when the session closes (at once if it is closed already): the run's sockets go with it. A closer's
   * failure never fails the close (see `closerFailure`).
   */
  onClose(fn: () => Promise<void>): void {
    if (this.closed) void fn().catch(ignoreFailure(closerFailure));
    else this.closers.push(fn);
  }
  /** Outputs reported with `svc output set`, by key. */
  get outputs(): Record<string, unknown> {
    return Object.fromEntries([...this.outputValues].map(([k, v]) => [k, v.value]));
  }
  get summary(): string | null {
    return this.summaryText;
  }
  get failReason(): string | null {
    return this.failText;
  }
  get steps(): { count: number; last: string | null } {
    return { count: this.stepCount, last: this.lastStep };
  }
  /** MCP calls of tools not marked read-only, in order (the first 200), for the brief of a fallback. */
  get actions(): ReadonlyArray<{ server: string; tool: string; args: string; ok: boolean }> {
    return this.actionList;
  }
  noteAction(server: string, tool: string, args: string, ok: boolean): void {
    if (this.actionList.length < brokerLimits.actionCalls)
      this.actionList.push({ server, tool, args: args.slice(0, 300), ok });
  }
  /** The agent taking over from a main script that called `svc fail` starts without that failure. */
  clearFail(): void {
    this.failText = null;
  }
  /** micro-USD spent by `svc llm`, in-flight calls not included until they settle (or the session closes). */
  get llmSpend(): number {
    return this.spent;
  }
  get llmUsage(): { input: number; output: number } {
    return { ...this.usageTotals };
  }
  /** Broker calls made so far, recorded on the timeline or not (egress proxy connections included). */
  get calls(): number {
    return this.callCount;
  }
  /** Whether the run set a state key through the broker (a shadow run of its main is skipped then). */
  get wroteState(): boolean {
    return this.stateSet;
  }

  /** One of the run's 8 request slots, in arrival order; rejects when `signal` aborts while waiting. */
  acquire(signal?: AbortSignal): Promise<() => void> {
    return this.slots.acquire(signal);
  }

  private timeline(type: string, payload: Record<string, unknown>, ms: number | null): void {
    try {
      this.options.hooks.timeline(type, payload, ms);
    } catch {
      // The timeline is a record; a failure to write it does not fail the call.
    }
  }

  /** The first 1,000 calls; then only actions (200), paid llm calls and the first state set. */
  record(payload: Record<string, unknown>, ms: number, kind: CallKind = 'plain'): void {
    const { recordedCalls, actionCalls } = brokerLimits;
    const underCap = this.callCount < recordedCalls;
    if (!underCap && !this.overflowNoted) {
      this.overflowNoted = true;
      this.timeline(
        'log',
        {
          message: `The first ${recordedCalls} broker calls are on the timeline; later calls are left out, except MCP actions, paid svc llm calls and the first state set.`,
        },
        null,
      );
    }
    this.callCount++;
    let keep = underCap || kind === 'paid';
    if (kind === 'state' && !this.stateSet) keep = true;
    if (kind === 'action' && !underCap && this.keptActions < actionCalls) {
      this.keptActions++;
      keep = true;
    }
    if (kind === 'state') this.stateSet = true;
    if (keep) this.timeline('broker.call', payload, ms);
  }

  setOutput(key: string, value: unknown): void {
    if (key.length === 0)
      throw DomainError.validation([{ field: 'key', code: 'required', message: 'must not be empty' }]);
    // Key bytes plus the bytes of the value as JSON (a string counts with its quotes).
    const size = Buffer.byteLength(key) + Buffer.byteLength(JSON.stringify(value) ?? 'null');
    const old = this.outputValues.get(key);
    if (!old && this.outputValues.size >= brokerLimits.outputs) {
      throw tooLarge(
        'key',
        `is new, and a run reports at most ${brokerLimits.outputs} outputs (setting an existing key again replaces it)`,
      );
    }
    const total = this.outputBytes - (old?.size ?? 0) + size;
    if (total > brokerLimits.outputBytes)
      throw tooLarge('value', 'would take the run outputs beyond 1 MiB of keys and values');
    this.outputBytes = total;
    this.outputValues.set(key, { value, size });
  }

  step(name: string): void {
    if (name.trim() === '')
      throw DomainError.validation([{ field: 'name', code: 'required', message: 'must not be empty' }]);
    if (Buffer.byteLength(name) > brokerLimits.stepBytes)
      throw tooLarge('name', `is longer than ${brokerLimits.stepBytes} bytes`);
    if (this.stepCount >= brokerLimits.steps)
      throw tooLarge('name', `cannot be added: a run marks at most ${brokerLimits.steps} steps`);
    this.stepCount++;
    this.lastStep = name;
    this.timeline('script.step', { name }, null);
  }

  setSummary(summary: string): void {
    if (Buffer.byteLength(summary) > brokerLimits.summaryBytes) throw tooLarge('summary', 'is larger than 16 KiB');
    this.summaryText = summary;
  }

  fail(reason: string): void {
    const text = reason.trim() === '' ? defaultFailReason : reason;
    this.failText = [...text].slice(0, brokerLimits.failChars).join('');
  }

  /**
   * `svc llm` (docs/sandbox.md): reserve the worst case, call, and with a schema validate the answer and ask once more
   * when it does not match; settle with the actual cost, or the worst case when billing may have started.
   */
  async llm(
    req: LlmRequest,
    note: LlmNote = { cost: 0 },
  ): Promise<{
    text: string;
    json: unknown | null;
    usage: { input: number; output: number };
    cost: number;
    model: string;
  }> {
    const { hooks } = this.options;
    let validate: ValidateFunction | null = null;
    if (req.schema) {
      try {
        validate = ajv.compile(req.schema);
      } catch (err) {
        throw invalid('schema', 'invalid_schema', `is not a usable JSON Schema: ${errorMessage(err)}`);
      } finally {
        ajv.removeSchema(req.schema);
      }
    }
    const schemaChars = req.schema ? JSON.stringify(req.schema).length : 0;
    const est = Math.ceil((req.prompt.length + (req.system?.length ?? 0) + schemaChars) / 2);
    const worst = req.schema
      ? hooks.worstCost(req.which, 2 * est + req.maxTokens, 2 * req.maxTokens)
      : hooks.worstCost(req.which, est, req.maxTokens);
    const reservation = this.reserve(worst);
    const usage = { input: 0, output: 0 };
    const call = async (prompt: string) => {
      let answer: LlmHookAnswer;
      try {
        answer = await hooks.llm({ ...req, prompt, signal: AbortSignal.timeout(brokerLimits.llmTimeoutMs) });
      } catch (err) {
        if (isStarted(err)) note.cost = Math.max(note.cost, worst);
        throw providerError(err);
      }
      note.cost += answer.cost;
      note.model = answer.model;
      usage.input += answer.usage.input;
      usage.output += answer.usage.output;
      note.usage = { ...usage };
      this.usageTotals.input += answer.usage.input;
      this.usageTotals.output += answer.usage.output;
      return answer;
    };
    try {
      let answer = await call(req.prompt);
      if (!validate) return { text: answer.text, json: null, usage, cost: note.cost, model: answer.model };
      let checked = matching(answer, validate);
      if (!checked.ok) {
        const retry = `${req.prompt}\n\nYour previous answer did not match the required JSON Schema (${checked.problem}). It was:\n${answer.text}\n\nAnswer again with only JSON that matches the schema.`;
        answer = await call(retry);
        checked = matching(answer, validate);
      }
      if (!checked.ok)
        throw new BrokerError(
          502,
          'provider_error',
          `the model answered twice without JSON matching the schema (${checked.problem})`,
        );
      return { text: answer.text, json: checked.json, usage, cost: note.cost, model: answer.model };
    } finally {
      // After close() an open reservation was already charged at its worst.
      if (this.reservations.delete(reservation)) this.spent += note.cost;
    }
  }

  private reserve(worst: number): symbol {
    const limit = this.options.costLimit;
    const spent = this.spent + this.options.hooks.agentSpend();
    let reserved = 0;
    for (const r of this.reservations.values()) reserved += r;
    if (
      this.closed ||
      (limit > 0 && (spent >= limit || (this.reservations.size > 0 && spent + reserved + worst > limit)))
    ) {
      throw new DomainError('forbidden', costLimitMessage);
    }
    const token = Symbol('reservation');
    this.reservations.set(token, worst);
    return token;
  }

  /**
   * The run is over: the token stops working, later calls are refused, and calls still running are charged their
   * worst case. Answers the final `svc llm` spend. Safe to call twice.
   */
  close(): { llmSpend: number } {
    if (!this.closed) {
      this.closed = true;
      this.unregister(this);
      for (const worst of this.reservations.values()) this.spent += worst;
      this.reservations.clear();
      for (const fn of this.closers.splice(0)) void fn().catch(ignoreFailure(closerFailure));
    }
    return { llmSpend: this.spent };
  }
}

function matching(
  answer: LlmHookAnswer,
  validate: ValidateFunction,
): { ok: true; json: unknown } | { ok: false; problem: string } {
  let json = answer.json;
  if (json === null || json === undefined) {
    try {
      json = JSON.parse(answer.text) as unknown;
    } catch {
      return { ok: false, problem: 'the answer is not JSON' };
    }
  }
  if (validate(json)) return { ok: true, json };
  return {
    ok: false,
    problem: (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? 'is not valid'}`).join('; '),
  };
}
