/**
 * The model port: one request/answer shape for every provider kind (anthropic, openai, fake). The agent loop,
 * reflection, compile and `svc llm` speak only this.
 */

export type ProviderKind = 'anthropic' | 'openai' | 'fake';

export interface ToolSpec {
  name: string;
  description: string;
  /** JSON Schema of the arguments (an object schema). */
  inputSchema: Record<string, unknown>;
}

export interface ToolCall {
  id: string;
  name: string;
  /** Parsed arguments; `null` when the model sent text that is not valid JSON (see argsText). */
  args: unknown;
  argsText: string;
}

export interface ToolResult {
  callId: string;
  name: string;
  content: string;
  isError: boolean;
}

export type Message =
  | { role: 'user'; text: string }
  | { role: 'assistant'; text: string; reasoning?: string; toolCalls: ToolCall[] }
  | { role: 'tool'; results: ToolResult[] };

export interface Usage {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  reasoning: number;
}

export type Delta = { type: 'text' | 'reasoning'; text: string } | { type: 'tool_call'; text: string };

export interface ModelRequest {
  /** The provider's model name (ModelDto.model). */
  model: string;
  /** System prompt blocks, stable first (each may be marked cacheable by the adapter). */
  system: string[];
  messages: Message[];
  tools: ToolSpec[];
  maxTokens: number;
  effort: 'low' | 'medium' | 'high';
  /** When set, the answer's text must be JSON matching this schema (native structured output, else a forced tool). */
  jsonSchema?: { name: string; schema: Record<string, unknown> };
  signal?: AbortSignal;
  onDelta?: (delta: Delta) => void;
}

export interface ModelResponse {
  text: string;
  reasoning: string;
  toolCalls: ToolCall[];
  /** `end_turn`, `tool_use`, `max_tokens`, `refusal`, or the provider's own word. */
  stop: string;
  usage: Usage;
  /** The model name the provider reported. */
  model: string;
}

/** A failed model call. `transient` errors (429, 529, 5xx, connection failures) are worth repeating. */
export class ModelError extends Error {
  constructor(
    message: string,
    readonly status: number | null,
    readonly transient: boolean,
    /** The prompt did not fit the context window (HTTP 400/413 saying so). */
    readonly contextOverflow: boolean = false,
    /** The provider may have started answering (billing may have started). */
    readonly started: boolean = false,
  ) {
    super(message);
    this.name = 'ModelError';
  }
}

export interface ProviderConfig {
  id: string;
  kind: ProviderKind;
  apiKey: string | null;
  baseUrl: string | null;
}

export interface ModelClient {
  complete(request: ModelRequest): Promise<ModelResponse>;
}

/** micro-USD per 1M tokens. */
export interface Price {
  in: number;
  out: number;
  cacheRead: number;
  cacheWrite: number;
}

/** (in·p_in + out·p_out + cacheRead·p_cr + cacheWrite·p_cw) / 1e6, in micro-USD, rounded up. */
export function costOf(usage: Pick<Usage, 'input' | 'output' | 'cacheRead' | 'cacheWrite'>, price: Price): number {
  const micro =
    usage.input * price.in +
    usage.output * price.out +
    usage.cacheRead * price.cacheRead +
    usage.cacheWrite * price.cacheWrite;
  return Math.ceil(micro / 1e6);
}
