import OpenAI from 'openai';
import { toModelError } from './errors.js';
import type { Message, ModelClient, ModelRequest, ModelResponse, ProviderConfig, ToolCall } from './types.js';

const stops: Record<string, string> = {
  stop: 'end_turn',
  tool_calls: 'tool_use',
  length: 'max_tokens',
  content_filter: 'refusal',
};

function toMessages(system: string[], messages: Message[]): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [{ role: 'system', content: system.join('\n\n') }];
  for (const m of messages) {
    if (m.role === 'user') out.push({ role: 'user', content: m.text });
    else if (m.role === 'tool')
      for (const r of m.results)
        out.push({ role: 'tool', tool_call_id: r.callId, content: r.isError ? `Error: ${r.content}` : r.content });
    else
      out.push({
        role: 'assistant',
        content: m.text || null,
        ...(m.toolCalls.length
          ? {
              tool_calls: m.toolCalls.map((c) => ({
                id: c.id,
                type: 'function',
                function: { name: c.name, arguments: c.argsText },
              })),
            }
          : {}),
      });
  }
  return out;
}

/** OpenAI Chat Completions (any compatible base URL) through the official SDK, streamed. */
export class OpenAiClient implements ModelClient {
  private readonly sdk: OpenAI;

  constructor(config: ProviderConfig) {
    this.sdk = new OpenAI({
      apiKey: config.apiKey ?? 'none',
      ...(config.baseUrl ? { baseURL: config.baseUrl } : {}),
      maxRetries: 0,
    });
  }

  async complete(req: ModelRequest): Promise<ModelResponse> {
    let started = false;
    try {
      const stream = await this.sdk.chat.completions.create(
        {
          model: req.model,
          messages: toMessages(req.system, req.messages),
          max_completion_tokens: req.maxTokens,
          stream: true,
          stream_options: { include_usage: true },
          ...(req.tools.length && !req.jsonSchema
            ? {
                tools: req.tools.map((t) => ({
                  type: 'function',
                  function: { name: t.name, description: t.description, parameters: t.inputSchema },
                })),
              }
            : {}),
          ...(req.jsonSchema
            ? {
                response_format: {
                  type: 'json_schema',
                  json_schema: { name: req.jsonSchema.name, schema: req.jsonSchema.schema, strict: true },
                },
              }
            : {}),
        } as unknown as OpenAI.ChatCompletionCreateParamsStreaming,
        { signal: req.signal },
      );
      let text = '';
      let reasoning = '';
      let stop = 'end_turn';
      let model = req.model;
      const usage = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, reasoning: 0 };
      const calls = new Map<number, { id: string; name: string; args: string }>();
      // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the SDK's stream chunks, read field by field below
      for await (const chunk of stream as AsyncIterable<Record<string, any>>) {
        started = true;
        if (chunk.model) model = chunk.model;
        const choice = chunk.choices?.[0];
        const d = choice?.delta ?? {};
        if (typeof d.content === 'string' && d.content) {
          text += d.content;
          req.onDelta?.({ type: 'text', text: d.content });
        }
        if (typeof d.reasoning_content === 'string' && d.reasoning_content) {
          reasoning += d.reasoning_content;
          req.onDelta?.({ type: 'reasoning', text: d.reasoning_content });
        }
        for (const tc of d.tool_calls ?? []) {
          const prev = calls.get(tc.index);
          if (!prev) {
            calls.set(tc.index, { id: tc.id ?? '', name: tc.function?.name ?? '', args: tc.function?.arguments ?? '' });
            if (tc.function?.name) req.onDelta?.({ type: 'tool_call', text: tc.function.name });
          } else {
            prev.args += tc.function?.arguments ?? '';
            if (tc.id) prev.id = tc.id;
          }
        }
        if (choice?.finish_reason) stop = stops[choice.finish_reason] ?? choice.finish_reason;
        if (chunk.usage) {
          const cached = chunk.usage.prompt_tokens_details?.cached_tokens ?? 0;
          usage.input = (chunk.usage.prompt_tokens ?? 0) - cached;
          usage.cacheRead = cached;
          usage.output = chunk.usage.completion_tokens ?? 0;
          usage.reasoning = chunk.usage.completion_tokens_details?.reasoning_tokens ?? 0;
        }
      }
      const toolCalls: ToolCall[] = [...calls.values()].map((c) => {
        let args: unknown;
        try {
          args = c.args ? (JSON.parse(c.args) as unknown) : {};
        } catch {
          args = null;
        }
        return { id: c.id, name: c.name, args, argsText: c.args || '{}' };
      });
      return { text, reasoning, toolCalls, stop, usage, model };
    } catch (err) {
      throw toModelError(err, started, req.signal?.aborted ?? false);
    }
  }
}
