import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AnthropicClient } from '../../adapters/models/anthropic.js';
import { OpenAiClient } from '../../adapters/models/openai.js';
import { ModelError, type Delta, type ModelRequest } from '../../adapters/models/types.js';

/**
 * The real Anthropic and OpenAI SDKs against local servers that speak their streaming wire formats: what each server
 * answers next is set per test, and what the SDK sent is kept for assertions.
 */
type Reply = (req: IncomingMessage, res: ServerResponse, body: Record<string, any>) => void;
let next: Reply;
let seen: { headers: IncomingMessage['headers']; body: Record<string, any>; url: string } | null = null;
let server: Server;
let base: string;

before(async () => {
  server = createServer((req, res) => {
    let raw = '';
    req.on('data', (d) => (raw += d));
    req.on('end', () => {
      const body = raw ? (JSON.parse(raw) as Record<string, any>) : {};
      seen = { headers: req.headers, body, url: req.url ?? '' };
      next(req, res, body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => server.close());

const sse = (res: ServerResponse, events: Array<[string | null, unknown]>, cutAfter?: number) => {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const sent = events.slice(0, cutAfter ?? events.length);
  sent.forEach(([name, data], i) => {
    const text = `${name ? `event: ${name}\n` : ''}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`;
    // Cut once the last event has left this process (write callbacks come in order), as a dropped connection would.
    const cut = cutAfter !== undefined && i === sent.length - 1 ? () => res.destroy() : undefined;
    res.write(text, cut);
  });
  if (cutAfter === undefined) res.end();
  else if (sent.length === 0) res.destroy();
};
const errorReply =
  (status: number, message: string): Reply =>
  (_q, res) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ type: 'error', error: { type: 'api_error', message } }));
  };

const request = (over: Partial<ModelRequest> = {}): ModelRequest & { deltas: Delta[] } => {
  const deltas: Delta[] = [];
  return {
    model: 'm',
    system: ['You help.'],
    messages: [{ role: 'user', text: 'Hi' }],
    tools: [
      {
        name: 'bash',
        description: 'Run',
        inputSchema: { type: 'object', properties: { command: { type: 'string' } } },
      },
    ],
    maxTokens: 100,
    effort: 'medium',
    onDelta: (d) => deltas.push(d),
    deltas,
    ...over,
  };
};

async function failure(p: Promise<unknown>): Promise<ModelError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof ModelError, String(err));
    return err;
  }
  throw new Error('expected a failure');
}

const anthropicEvents = (
  blocks: Array<[string | null, unknown]>,
  stop = 'end_turn',
): Array<[string | null, unknown]> => [
  [
    'message_start',
    {
      type: 'message_start',
      message: {
        id: 'msg_1',
        type: 'message',
        role: 'assistant',
        model: 'claude-test',
        content: [],
        stop_reason: null,
        usage: { input_tokens: 12, output_tokens: 1, cache_read_input_tokens: 3, cache_creation_input_tokens: 2 },
      },
    },
  ],
  ...blocks,
  ['message_delta', { type: 'message_delta', delta: { stop_reason: stop }, usage: { output_tokens: 7 } }],
  ['message_stop', { type: 'message_stop' }],
];

describe('anthropic adapter (real SDK, local wire server)', () => {
  const client = () => new AnthropicClient({ id: 'p', kind: 'anthropic', apiKey: 'sk-ant-test', baseUrl: base });

  it('streams text with deltas and usage, sending the key, system blocks and tools', async () => {
    next = (_q, res) =>
      sse(
        res,
        anthropicEvents([
          ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }],
          [
            'content_block_delta',
            { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hel' } },
          ],
          ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'lo' } }],
          ['content_block_stop', { type: 'content_block_stop', index: 0 }],
        ]),
      );
    const req = request();
    const r = await client().complete(req);
    assert.equal(r.text, 'Hello');
    assert.equal(r.stop, 'end_turn');
    assert.equal(r.model, 'claude-test');
    assert.deepEqual(r.usage, { input: 12, output: 7, cacheRead: 3, cacheWrite: 2, reasoning: 0 });
    assert.deepEqual(
      req.deltas.map((d) => d.text),
      ['Hel', 'lo'],
    );
    // SDK versions differ in where the key goes (x-api-key or a bearer token); either way it is the configured key.
    assert.ok(seen!.headers['x-api-key'] === 'sk-ant-test' || seen!.headers.authorization === 'Bearer sk-ant-test');
    assert.equal(seen!.url, '/v1/messages');
    assert.equal(seen!.body.stream, true);
    assert.deepEqual(seen!.body.system.at(-1).cache_control, { type: 'ephemeral' });
    assert.equal(seen!.body.tools[0].name, 'bash');
  });

  it('assembles tool calls streamed in pieces and sends tool results back as tool_result blocks', async () => {
    next = (_q, res) =>
      sse(
        res,
        anthropicEvents(
          [
            [
              'content_block_start',
              {
                type: 'content_block_start',
                index: 0,
                content_block: { type: 'tool_use', id: 'tu_1', name: 'bash', input: {} },
              },
            ],
            [
              'content_block_delta',
              { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '{"comm' } },
            ],
            [
              'content_block_delta',
              {
                type: 'content_block_delta',
                index: 0,
                delta: { type: 'input_json_delta', partial_json: 'and":"ls"}' },
              },
            ],
            ['content_block_stop', { type: 'content_block_stop', index: 0 }],
          ],
          'tool_use',
        ),
      );
    const req = request({
      messages: [
        { role: 'user', text: 'go' },
        {
          role: 'assistant',
          text: '',
          toolCalls: [{ id: 'tu_0', name: 'bash', args: { command: 'pwd' }, argsText: '{"command":"pwd"}' }],
        },
        {
          role: 'tool',
          results: [{ callId: 'tu_0', name: 'bash', content: 'exit code: 0\n/workspace', isError: false }],
        },
      ],
    });
    const r = await client().complete(req);
    assert.deepEqual(r.toolCalls, [
      { id: 'tu_1', name: 'bash', args: { command: 'ls' }, argsText: '{"command":"ls"}' },
    ]);
    assert.equal(r.stop, 'tool_use');
    assert.deepEqual(req.deltas, [{ type: 'tool_call', text: 'bash' }]);
    assert.deepEqual(seen!.body.messages[2].content[0], {
      type: 'tool_result',
      tool_use_id: 'tu_0',
      content: 'exit code: 0\n/workspace',
      is_error: false,
    });
    assert.deepEqual(seen!.body.messages[1].content[0], {
      type: 'tool_use',
      id: 'tu_0',
      name: 'bash',
      input: { command: 'pwd' },
    });
  });

  it('forces a submit tool for structured output and answers its input as JSON text', async () => {
    next = (_q, res) =>
      sse(
        res,
        anthropicEvents(
          [
            [
              'content_block_start',
              {
                type: 'content_block_start',
                index: 0,
                content_block: { type: 'tool_use', id: 'tu_9', name: 'submit', input: {} },
              },
            ],
            [
              'content_block_delta',
              { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '{"n":4}' } },
            ],
          ],
          'tool_use',
        ),
      );
    const r = await client().complete(
      request({ jsonSchema: { name: 'x', schema: { type: 'object', properties: { n: { type: 'integer' } } } } }),
    );
    assert.equal(r.text, '{"n":4}');
    assert.deepEqual(r.toolCalls, []);
    assert.deepEqual(seen!.body.tool_choice, { type: 'tool', name: 'submit' });
  });

  it('classifies 429, 529 and 500 as transient, 401 not, and a context overflow', async () => {
    for (const [status, transient] of [
      [429, true],
      [529, true],
      [500, true],
      [401, false],
    ] as const) {
      next = errorReply(status, 'nope');
      const e = await failure(client().complete(request()));
      assert.equal(e.status, status);
      assert.equal(e.transient, transient, `status ${status}`);
    }
    next = errorReply(400, 'prompt is too long: 300000 tokens > 200000 maximum');
    const e = await failure(client().complete(request()));
    assert.equal(e.contextOverflow, true);
    assert.equal(e.transient, false);
  });

  it('reports a stream cut mid-way as started (billing may have begun)', async () => {
    next = (_q, res) =>
      sse(
        res,
        anthropicEvents([
          ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }],
          [
            'content_block_delta',
            { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'par' } },
          ],
        ]),
        3,
      );
    const e = await failure(client().complete(request()));
    assert.equal(e.started, true, e.message);
    assert.equal(e.transient, true, `${e.message} status ${e.status}`);
  });
});

const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
  id: 'c1',
  object: 'chat.completion.chunk',
  created: 1,
  model: 'gpt-test',
  choices: [{ index: 0, delta, finish_reason: finish }],
});
const usageChunk = {
  id: 'c1',
  object: 'chat.completion.chunk',
  created: 1,
  model: 'gpt-test',
  choices: [],
  usage: {
    prompt_tokens: 20,
    completion_tokens: 6,
    prompt_tokens_details: { cached_tokens: 5 },
    completion_tokens_details: { reasoning_tokens: 2 },
  },
};

describe('openai adapter (real SDK, local wire server)', () => {
  const client = () => new OpenAiClient({ id: 'p', kind: 'openai', apiKey: 'sk-test', baseUrl: `${base}/v1` });

  it('streams text and usage with the key as a bearer token', async () => {
    next = (_q, res) =>
      sse(res, [
        [null, chunk({ role: 'assistant', content: 'Hi ' })],
        [null, chunk({ content: 'there' })],
        [null, chunk({}, 'stop')],
        [null, usageChunk],
        [null, '[DONE]'],
      ]);
    const req = request();
    const r = await client().complete(req);
    assert.equal(r.text, 'Hi there');
    assert.equal(r.stop, 'end_turn');
    assert.deepEqual(r.usage, { input: 15, output: 6, cacheRead: 5, cacheWrite: 0, reasoning: 2 });
    assert.equal(seen!.headers.authorization, 'Bearer sk-test');
    assert.equal(seen!.url, '/v1/chat/completions');
    assert.deepEqual(seen!.body.stream_options, { include_usage: true });
    assert.equal(seen!.body.messages[0].role, 'system');
    assert.deepEqual(
      req.deltas.map((d) => d.text),
      ['Hi ', 'there'],
    );
  });

  it('accumulates tool calls by index and sends tool results as tool messages', async () => {
    next = (_q, res) =>
      sse(res, [
        [
          null,
          chunk({
            role: 'assistant',
            tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'bash', arguments: '{"co' } }],
          }),
        ],
        [null, chunk({ tool_calls: [{ index: 0, function: { arguments: 'mmand":"ls"}' } }] })],
        [null, chunk({}, 'tool_calls')],
        [null, usageChunk],
        [null, '[DONE]'],
      ]);
    const r = await client().complete(
      request({
        messages: [
          { role: 'user', text: 'go' },
          { role: 'assistant', text: '', toolCalls: [{ id: 'call_0', name: 'bash', args: {}, argsText: '{}' }] },
          { role: 'tool', results: [{ callId: 'call_0', name: 'bash', content: 'ok', isError: false }] },
        ],
      }),
    );
    assert.deepEqual(r.toolCalls, [
      { id: 'call_1', name: 'bash', args: { command: 'ls' }, argsText: '{"command":"ls"}' },
    ]);
    assert.equal(r.stop, 'tool_use');
    assert.deepEqual(seen!.body.messages[3], { role: 'tool', tool_call_id: 'call_0', content: 'ok' });
    assert.equal(seen!.body.tools[0].function.name, 'bash');
  });

  it('asks for json_schema structured output', async () => {
    next = (_q, res) =>
      sse(res, [
        [null, chunk({ content: '{"a":1}' }, 'stop')],
        [null, '[DONE]'],
      ]);
    const r = await client().complete(request({ jsonSchema: { name: 'out', schema: { type: 'object' } } }));
    assert.equal(r.text, '{"a":1}');
    assert.equal(seen!.body.response_format.type, 'json_schema');
    assert.equal(seen!.body.tools, undefined);
  });

  it('classifies errors', async () => {
    for (const [status, transient] of [
      [429, true],
      [503, true],
      [401, false],
    ] as const) {
      next = errorReply(status, 'nope');
      const e = await failure(client().complete(request()));
      assert.equal(e.transient, transient, `status ${status}`);
    }
    next = errorReply(400, "This model's maximum context length is 128000 tokens");
    assert.equal((await failure(client().complete(request()))).contextOverflow, true);
  });
});
