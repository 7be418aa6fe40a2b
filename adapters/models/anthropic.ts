import Anthropic from '@anthropic-ai/sdk';
import { toModelError } from './errors.js';
import type { Message, ModelClient, ModelRequest, ModelResponse, ProviderConfig, ToolCall } from './types.js';

type Block = Record<string, unknown>;

function toMessages(messages: Message[]): Array<{ role: 'user' | 'assistant'; content: Block[] }> {
  return messages.map((m) => {
    if (m.role === 'user') return { role: 'user', content: [{ type: 'text', text: m.text }] };
    if (m.role === 'tool')
      return {
        role: 'user',
        content: m.results.map((r) => ({
          type: 'tool_result',
          tool_use_id: r.callId,
          content: r.content,
          is_error: r.isError,
        })),
      };
    const content: Block[] = [];
    if (m.text) content.push({ type: 'text', text: m.text });
    for (const c of m.toolCalls) content.push({ type: 'tool_use', id: c.id, name: c.name, input: c.args ?? {} });
    return { role: 'assistant', content: content.length ? content : [{ type: 'text', text: '' }] };
  });
}

/** Anthropic Messages API through the official SDK, streamed. Retries are the caller's (maxRetries 0). */
export class AnthropicClient implements ModelClient {
  private readonly sdk: Anthropic;

  constructor(config: ProviderConfig) {
    this.sdk = new Anthropic({
      apiKey: config.apiKey ?? '',
      ...(config.baseUrl ? { baseURL: config.baseUrl } : {}),
      maxRetries: 0,
    });
  }

  async complete(req: ModelRequest): Promise<ModelResponse> {
    const system = req.system.map((text, i) => ({
      type: 'text' as const,
      text,
      ...(i === req.system.length - 1 ? { cache_control: { type: 'ephemeral' as const } } : {}),
    }));
    const tools = req.jsonSchema
      ? [{ name: 'submit', description: 'Submit the answer.', input_schema: req.jsonSchema.schema }]
      : req.tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.inputSchema }));
    let started = false;
    try {
      const stream = await this.sdk.messages.create(
        {
          model: req.model,
          max_tokens: req.maxTokens,
          system,
          messages: toMessages(req.messages),
          ...(tools.length ? { tools } : {}),
          ...(req.jsonSchema ? { tool_choice: { type: 'tool', name: 'submit' } } : {}),
          stream: true,
        } as unknown as Anthropic.MessageCreateParamsStreaming,
        { signal: req.signal },
      );
      let text = '';
      let reasoning = '';
      let stop = 'end_turn';
      let model = req.model;
      const usage = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, reasoning: 0 };
      const blocks = new Map<number, { kind: string; id?: string; name?: string; json: string }>();
      // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the SDK's stream events, read field by field below
      for await (const ev of stream as AsyncIterable<Record<string, any>>) {
        started = true;
        switch (ev.type) {
          case 'message_start': {
            const u = ev.message?.usage ?? {};
            model = ev.message?.model ?? model;
            usage.input = u.input_tokens ?? 0;
            usage.cacheRead = u.cache_read_input_tokens ?? 0;
            usage.cacheWrite = u.cache_creation_input_tokens ?? 0;
            usage.output = u.output_tokens ?? 0;
            break;
          }
          case 'content_block_start': {
            const b = ev.content_block ?? {};
            blocks.set(ev.index, { kind: b.type, id: b.id, name: b.name, json: '' });
            if (b.type === 'tool_use' && !req.jsonSchema) req.onDelta?.({ type: 'tool_call', text: b.name });
            if (b.type === 'text' && b.text) text += b.text;
            break;
          }
          case 'content_block_delta': {
            const d = ev.delta ?? {};
            if (d.type === 'text_delta') {
              text += d.text;
              req.onDelta?.({ type: 'text', text: d.text });
            } else if (d.type === 'thinking_delta') {
              reasoning += d.thinking;
              req.onDelta?.({ type: 'reasoning', text: d.thinking });
            } else if (d.type === 'input_json_delta') {
              const b = blocks.get(ev.index);
              if (b) b.json += d.partial_json;
            }
            break;
          }
          case 'message_delta':
            if (ev.delta?.stop_reason) stop = ev.delta.stop_reason;
            if (ev.usage?.output_tokens !== undefined) usage.output = ev.usage.output_tokens;
            if (ev.usage?.input_tokens) usage.input = ev.usage.input_tokens;
            break;
          case 'error':
            throw Object.assign(new Error(ev.error?.message ?? 'stream error'), {
              status: ev.error?.type === 'overloaded_error' ? 529 : 500,
            });
          default:
            break;
        }
      }
      const toolCalls: ToolCall[] = [];
      for (const b of blocks.values()) {
        if (b.kind !== 'tool_use') continue;
        let args: unknown = {};
        try {
          args = b.json ? (JSON.parse(b.json) as unknown) : {};
        } catch {
          args = null;
        }
        if (req.jsonSchema && b.name === 'submit') text = b.json || '{}';
        else toolCalls.push({ id: b.id ?? '', name: b.name ?? '', args, argsText: b.json || '{}' });
      }
      return {
        text,
        reasoning,
        toolCalls,
        stop: req.jsonSchema && stop === 'tool_use' ? 'end_turn' : stop,
        usage,
        model,
      };
    } catch (err) {
      throw toModelError(err, started, req.signal?.aborted ?? false);
    }
  }
}
