// The in-sandbox svc client commands (docs/sandbox.md, "The `svc` command and the broker") against a broker stand-in
// on 127.0.0.1.
import { after, before, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildSvc, FakeBroker, freePort, run, svcBin, type RunOptions } from './harness.js';

const token = 'tok-0123456789abcdef';
const broker = new FakeBroker();
let url = '';
let dir = '';

const svc = (args: string[], options: RunOptions = {}) =>
  run(args, { ...options, env: { SVC_BROKER_URL: url, SVC_TOKEN: token, ...(options.env ?? {}) } });
const text = (b: Buffer) => b.toString('utf8');

before(async () => {
  buildSvc();
  url = await broker.listen();
  dir = mkdtempSync(join(tmpdir(), 'svc-test-'));
});
after(async () => {
  await broker.close();
  rmSync(dir, { recursive: true, force: true });
});
beforeEach(() => {
  broker.seen.length = 0;
  broker.reply = () => ({ body: { ok: true } });
});

describe('the binary', () => {
  it('is a statically linked ELF executable (no interpreter, no dynamic section)', () => {
    const elf = readFileSync(svcBin);
    assert.deepEqual([...elf.subarray(0, 4)], [0x7f, 0x45, 0x4c, 0x46]);
    assert.equal(elf[4], 2, '64-bit');
    assert.equal(elf.readUInt16LE(16), 2, 'ET_EXEC, not a PIE needing a loader');
    const phoff = Number(elf.readBigUInt64LE(0x20));
    const phentsize = elf.readUInt16LE(0x36);
    const phnum = elf.readUInt16LE(0x38);
    const types = Array.from({ length: phnum }, (_, i) => elf.readUInt32LE(phoff + i * phentsize));
    assert.ok(!types.includes(3), 'no PT_INTERP');
    assert.ok(!types.includes(2), 'no PT_DYNAMIC');
    let described = '';
    try {
      described = execFileSync('file', ['-b', svcBin], { encoding: 'utf8' });
    } catch {
      described = 'statically linked (file(1) not installed)';
    }
    assert.match(described, /statically linked/);
  });
});

describe('help and usage', () => {
  it('svc help and svc --help list every command on stdout', async () => {
    for (const args of [['help'], ['--help']]) {
      const r = await run(args);
      assert.equal(r.code, 0);
      for (const c of [
        'state get',
        'state set',
        'state list',
        'output set',
        'step',
        'summary',
        'fail',
        'llm',
        'mcp tools',
        'mcp call',
        'help',
      ])
        assert.ok(text(r.stdout).includes(`svc ${c}`), c);
      assert.equal(r.stderr.length, 0);
    }
  });

  it('no arguments prints the help on stderr and exits 2; an unknown command exits 2', async () => {
    const none = await run([]);
    assert.equal(none.code, 2);
    assert.equal(none.stdout.length, 0);
    assert.match(text(none.stderr), /svc state get/);
    const unknown = await svc(['frobnicate']);
    assert.equal(unknown.code, 2);
    assert.match(text(unknown.stderr), /unknown command frobnicate/);
    assert.equal(broker.seen.length, 0);
  });

  it('usage errors exit 2 without a request, even outside a sandbox', async () => {
    for (const args of [
      ['step'],
      ['state'],
      ['state', 'get'],
      ['state', 'get', 'a', 'b'],
      ['state', 'set'],
      ['state', 'set', 'k', 'v', 'x'],
      ['state', 'list', 'x'],
      ['output', 'set'],
      ['output', 'get', 'k'],
      ['mcp'],
      ['mcp', 'call', 's'],
      ['mcp', 'call', 's', 't', '{}', 'x'],
      ['mcp', 'tools', 'a', 'b'],
      ['llm', '--bogus', 'x', 'hi'],
      ['llm', '--model'],
      ['llm', '   '],
    ]) {
      const inside = await svc(args);
      assert.equal(inside.code, 2, args.join(' '));
      assert.match(text(inside.stderr), /usage/, args.join(' '));
      const outside = await run(args);
      assert.equal(outside.code, 2, `${args.join(' ')} outside`);
    }
    assert.equal(broker.seen.length, 0);
  });
});

describe('outside a sandbox', () => {
  it('fails with exit 1 and says that SVC_BROKER_URL and SVC_TOKEN are not set', async () => {
    for (const env of [
      {},
      { SVC_BROKER_URL: url },
      { SVC_TOKEN: token },
      { SVC_BROKER_URL: '', SVC_TOKEN: token },
      { SVC_BROKER_URL: url, SVC_TOKEN: '' },
    ]) {
      for (const args of [['state', 'get', 'k'], ['state', 'set', 'k'], ['llm', 'hi'], ['fail'], ['mcp', 'tools']]) {
        const r = await run(args, { env, keepStdinOpen: true, timeoutMs: 3000 });
        assert.equal(r.code, 1, `${args.join(' ')} with ${JSON.stringify(env)}`);
        assert.match(text(r.stderr), /SVC_BROKER_URL and SVC_TOKEN are not set.*inside a run's sandbox/);
        assert.equal(r.stdout.length, 0);
      }
    }
    assert.equal(broker.seen.length, 0);
  });
});

describe('requests', () => {
  it('carry the bearer token, JSON content type, Connection: close and a Content-Length', async () => {
    const r = await svc(['step', 'one']);
    assert.equal(r.code, 0);
    const h = broker.last.headers;
    assert.equal(h.authorization, `Bearer ${token}`);
    assert.equal(h['content-type'], 'application/json');
    assert.equal(h.connection, 'close');
    assert.equal(h['content-length'], String(broker.last.body.length));
    assert.equal(h['transfer-encoding'], undefined);
    await svc(['state', 'list']);
    assert.equal(broker.last.headers['content-length'], '0');
  });

  it('localhost means 127.0.0.1, and a path in the URL is a prefix', async () => {
    const port = new URL(url).port;
    broker.reply = () => ({ body: { key: 'k', value: 'v', found: true } });
    const r = await svc(['state', 'get', 'k'], { env: { SVC_BROKER_URL: `http://localhost:${port}/base/` } });
    assert.equal(r.code, 0, text(r.stderr));
    assert.equal(broker.last.url, '/base/v1/state/k');
    assert.equal(broker.last.headers.host, `localhost:${port}`);
  });

  it('a URL with a host name (no DNS in a static binary) fails with exit 1', async () => {
    const r = await svc(['state', 'get', 'k'], { env: { SVC_BROKER_URL: 'http://broker.example:8081' } });
    assert.equal(r.code, 1);
    assert.match(text(r.stderr), /^svc: cannot reach the broker at http:\/\/broker\.example:8081: .*IPv4/);
  });

  it('an unreachable broker fails with exit 1 and the reason', async () => {
    const port = await freePort();
    const r = await svc(['state', 'get', 'k'], { env: { SVC_BROKER_URL: `http://127.0.0.1:${port}` } });
    assert.equal(r.code, 1);
    assert.equal(text(r.stderr), `svc: cannot reach the broker at http://127.0.0.1:${port}: Connection refused\n`);
    assert.equal(r.stdout.length, 0);
  });

  it('an error answer prints its message and exits 1, for 4xx and 5xx', async () => {
    for (const status of [400, 401, 403, 404, 409, 500, 502]) {
      broker.reply = () => ({
        status,
        body: { code: 'x', message: `the broker said no (${status})`, requestId: 'r1' },
      });
      for (const args of [
        ['state', 'get', 'k'],
        ['state', 'set', 'k', 'v'],
        ['state', 'list'],
        ['output', 'set', 'k', 'v'],
        ['step', 's'],
        ['summary', 's'],
        ['llm', 'p'],
        ['mcp', 'tools'],
        ['mcp', 'call', 's', 't'],
      ]) {
        const r = await svc(args);
        assert.equal(r.code, 1, `${args.join(' ')} ${status}`);
        assert.equal(text(r.stderr), `svc: the broker said no (${status})\n`);
        assert.equal(r.stdout.length, 0);
      }
    }
    broker.reply = () => ({ status: 502, raw: '<html>bad gateway</html>' });
    const r = await svc(['state', 'list']);
    assert.equal(r.code, 1);
    assert.equal(text(r.stderr), 'svc: the broker answered HTTP 502\n');
  });

  it('a broker that closes without answering is a failure', async () => {
    const { createServer } = await import('node:net');
    const s = createServer((c) => c.on('data', () => c.end()));
    await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
    const port = (s.address() as { port: number }).port;
    const r = await svc(['state', 'list'], { env: { SVC_BROKER_URL: `http://127.0.0.1:${port}` } });
    s.close();
    assert.equal(r.code, 1);
    assert.match(text(r.stderr), /closed the connection without an answer/);
  });

  it('reads chunked answers, small and large', async () => {
    broker.reply = () => ({ chunks: ['{"key":"k",', '"value":"chun', 'ked","found":true}'] });
    let r = await svc(['state', 'get', 'k']);
    assert.equal(r.code, 0, text(r.stderr));
    assert.equal(text(r.stdout), 'chunked\n');
    const big: Record<string, string> = {};
    for (let i = 0; i < 300; i++) big[`key${i}`] = 'x'.repeat(10000) + i;
    const entries = Object.entries(big);
    broker.reply = () => ({
      chunks: ['{', ...entries.map(([k, v], i) => `${i ? ',' : ''}${JSON.stringify(k)}:${JSON.stringify(v)}`), '}'],
      chunkDelayMs: 0,
    });
    r = await svc(['state', 'list']);
    assert.equal(r.code, 0, text(r.stderr));
    assert.deepEqual(JSON.parse(text(r.stdout)), big);
    assert.ok(text(r.stdout).endsWith('}\n'));
  });

  it('a Content-Length answer that is cut short is a failure', async () => {
    const { createServer } = await import('node:net');
    const s = createServer((c) =>
      c.once('data', () => c.end('HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{"key":"k"')),
    );
    await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
    const port = (s.address() as { port: number }).port;
    const r = await svc(['state', 'get', 'k'], { env: { SVC_BROKER_URL: `http://127.0.0.1:${port}` } });
    s.close();
    assert.equal(r.code, 1);
    assert.match(text(r.stderr), /cut off/);
  });
  it('reads answers after an interim 100 Continue, and answers framed by the end of the connection', async () => {
    const { createServer } = await import('node:net');
    const answers = [
      'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 31\r\n\r\n{"found":true,"value":"after"}\n',
      'HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n{"found":true,"value":"until eof"}',
    ];
    const s = createServer((c) => {
      let got = '';
      c.on('data', (d: Buffer) => {
        got += d.toString('latin1');
        if (got.includes('\r\n\r\n')) c.end(answers.shift() ?? '');
      });
      c.on('error', () => undefined);
    });
    await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
    const env = { SVC_BROKER_URL: `http://127.0.0.1:${(s.address() as { port: number }).port}` };
    try {
      const first = await svc(['state', 'get', 'k'], { env });
      assert.deepEqual([first.code, text(first.stdout)], [0, 'after\n']);
      const second = await svc(['state', 'get', 'k'], { env });
      assert.deepEqual([second.code, text(second.stdout)], [0, 'until eof\n']);
    } finally {
      s.close();
    }
  });

  it('sends a value of several MiB from stdin whole', async () => {
    const big = `${'0123456789abcdef'.repeat(256 * 1024)}tail`;
    const r = await svc(['state', 'set', 'big'], { stdin: `${big}\n` });
    assert.equal(r.code, 0, text(r.stderr));
    assert.deepEqual(broker.last.json, { value: big });
  });
});

describe('svc state', () => {
  it('get prints the value and a newline; the key is URL-encoded', async () => {
    broker.reply = () => ({ body: { key: 'a b/c', value: 'hello', found: true } });
    const r = await svc(['state', 'get', 'a b/cé?&']);
    assert.equal(r.code, 0);
    assert.equal(text(r.stdout), 'hello\n');
    assert.equal(broker.last.method, 'GET');
    assert.equal(broker.last.url, '/v1/state/a%20b%2Fc%C3%A9%3F%26');
    assert.equal(decodeURIComponent(broker.last.url.slice('/v1/state/'.length)), 'a b/cé?&');
  });

  it('get of a missing key prints nothing and exits 1', async () => {
    broker.reply = () => ({ body: { key: 'nope', value: null, found: false } });
    const r = await svc(['state', 'get', 'nope']);
    assert.equal(r.code, 1);
    assert.equal(r.stdout.length, 0);
    assert.equal(r.stderr.length, 0);
  });

  it('get decodes JSON escapes: unicode, surrogate pairs, control characters', async () => {
    broker.reply = () => ({
      raw: '{"key":"k","value":"caf\\u00e9 \\ud83c\\udf0d \\u0001\\t\\"q\\" \\\\ \\/ \\n","found":true}',
    });
    const r = await svc(['state', 'get', 'k']);
    assert.equal(r.code, 0);
    assert.deepEqual(r.stdout, Buffer.from('café 🌍 \u0001\t"q" \\ / \n\n'));
  });

  it('set sends the value as a JSON string, from the argument or from stdin', async () => {
    let r = await svc(['state', 'set', 'k', 'v1']);
    assert.equal(r.code, 0);
    assert.equal(r.stdout.length, 0);
    assert.equal(broker.last.method, 'PUT');
    assert.equal(broker.last.url, '/v1/state/k');
    assert.deepEqual(broker.last.json, { value: 'v1' });
    r = await svc(['state', 'set', 'k', '-'], { stdin: 'from stdin\n\n' });
    assert.equal(r.code, 0);
    assert.deepEqual(broker.last.json, { value: 'from stdin' });
    r = await svc(['state', 'set', 'k'], { stdin: 'line 1\r\nline 2\r\n\r\n' });
    assert.equal(r.code, 0);
    assert.deepEqual(broker.last.json, { value: 'line 1\r\nline 2' });
    r = await svc(['state', 'set', 'k'], { stdin: '' });
    assert.deepEqual(broker.last.json, { value: '' });
    r = await svc(['state', 'set', 'k', 'arg keeps its newline\n']);
    assert.deepEqual(broker.last.json, { value: 'arg keeps its newline\n' });
    r = await svc(['state', 'set', 'k'], { stdin: 'lone cr stays\r' });
    assert.deepEqual(broker.last.json, { value: 'lone cr stays\r' });
  });

  it('values with every control character, quotes, backslashes and UTF-8 round-trip', async () => {
    const tricky =
      Array.from({ length: 32 }, (_, i) => String.fromCharCode(i)).join('') + '"\\/\u007f é ü 中文 🌍 \u2028\u2029 end';
    let r = await svc(['state', 'set', 'k', tricky.slice(1)]); // argv cannot hold NUL
    assert.equal(r.code, 0, text(r.stderr));
    assert.deepEqual(broker.last.json, { value: tricky.slice(1) });
    r = await svc(['state', 'set', 'k'], { stdin: Buffer.from(tricky, 'utf8') });
    assert.deepEqual(broker.last.json, { value: tricky });
    broker.reply = () => ({ body: { key: 'k', value: tricky, found: true } });
    r = await svc(['state', 'get', 'k']);
    assert.deepEqual(r.stdout, Buffer.from(`${tricky}\n`, 'utf8'));
  });

  it('list prints the answer as received', async () => {
    const raw = '{"a":"1","b":"x\\ny","c":"é"}';
    broker.reply = () => ({ raw });
    const r = await svc(['state', 'list']);
    assert.equal(r.code, 0);
    assert.equal(text(r.stdout), `${raw}\n`);
    assert.equal(broker.last.method, 'GET');
    assert.equal(broker.last.url, '/v1/state');
  });
});

describe('svc output, step, summary, fail', () => {
  it('output set sends the raw text; the broker decides whether it is JSON', async () => {
    let r = await svc(['output', 'set', 'count', '42']);
    assert.equal(r.code, 0);
    assert.equal(broker.last.method, 'POST');
    assert.equal(broker.last.url, '/v1/output');
    assert.deepEqual(broker.last.json, { key: 'count', text: '42' });
    r = await svc(['output', 'set', 'obj', '-'], { stdin: '{"a": [1, 2]}\n' });
    assert.deepEqual(broker.last.json, { key: 'obj', text: '{"a": [1, 2]}' });
    r = await svc(['output', 'set', 'name'], { stdin: 'plain text\n' });
    assert.equal(r.code, 0);
    assert.deepEqual(broker.last.json, { key: 'name', text: 'plain text' });
  });

  it('step joins its arguments with spaces', async () => {
    const r = await svc(['step', 'fetch', 'the', 'feed']);
    assert.equal(r.code, 0);
    assert.equal(r.stdout.length, 0);
    assert.equal(broker.last.url, '/v1/step');
    assert.deepEqual(broker.last.json, { name: 'fetch the feed' });
  });

  it('summary takes its text from arguments, or stdin when omitted or -', async () => {
    await svc(['summary', '**done**', 'ok']);
    assert.equal(broker.last.url, '/v1/summary');
    assert.deepEqual(broker.last.json, { summary: '**done** ok' });
    await svc(['summary'], { stdin: '# Report\n\n- a\n' });
    assert.deepEqual(broker.last.json, { summary: '# Report\n\n- a' });
    await svc(['summary', '-'], { stdin: 'dash\n' });
    assert.deepEqual(broker.last.json, { summary: 'dash' });
  });

  it('fail records the reason (or the default) and exits 1', async () => {
    let r = await svc(['fail', 'the', 'feed', 'was', 'empty']);
    assert.equal(r.code, 1);
    assert.equal(broker.last.url, '/v1/fail');
    assert.deepEqual(broker.last.json, { reason: 'the feed was empty' });
    assert.equal(r.stdout.length, 0);
    r = await svc(['fail']);
    assert.equal(r.code, 1);
    assert.deepEqual(broker.last.json, { reason: 'the script reported a failure' });
    broker.reply = () => ({ status: 500, body: { code: 'internal_error', message: 'boom', requestId: 'r' } });
    r = await svc(['fail', 'x']);
    assert.equal(r.code, 1);
    assert.equal(text(r.stderr), 'svc: boom\n');
  });
});

describe('svc llm', () => {
  beforeEach(() => {
    broker.reply = () => ({ body: { output: 'the answer', text: 'the answer', json: null, usage: {}, cost: 0 } });
  });

  it('sends the defaults and prints the output and a newline', async () => {
    const r = await svc(['llm', 'what', 'is', 'this?']);
    assert.equal(r.code, 0, text(r.stderr));
    assert.equal(text(r.stdout), 'the answer\n');
    assert.equal(broker.last.url, '/v1/llm');
    assert.deepEqual(broker.last.json, {
      model: 'utility',
      system: null,
      prompt: 'what is this?',
      schemaText: null,
      maxTokens: 4096,
    });
  });

  it('takes flags before and after the prompt; -- ends the flags', async () => {
    await svc(['llm', '--model', 'agent', 'sum', 'up', '--system', 'be brief', '--max-tokens', '200']);
    assert.deepEqual(broker.last.json, {
      model: 'agent',
      system: 'be brief',
      prompt: 'sum up',
      schemaText: null,
      maxTokens: 200,
    });
    await svc(['llm', '--model=agent', '--max-tokens=16000', 'x']);
    assert.deepEqual(broker.last.json, {
      model: 'agent',
      system: null,
      prompt: 'x',
      schemaText: null,
      maxTokens: 16000,
    });
    await svc(['llm', '--model', 'utility', '--', '--model', 'agent', '-']);
    assert.deepEqual(broker.last.json, {
      model: 'utility',
      system: null,
      prompt: '--model agent -',
      schemaText: null,
      maxTokens: 4096,
    });
  });

  it('any model other than agent is utility; max tokens outside 1..16000 or not a number is 4096', async () => {
    await svc(['llm', '--model', 'gpt-9', 'x']);
    assert.equal((broker.last.json as { model: string }).model, 'utility');
    for (const bad of ['0', '-5', '16001', 'abc', '12x', '', '99999999999999999999', '1.5']) {
      await svc(['llm', '--max-tokens', bad, 'x']);
      assert.equal((broker.last.json as { maxTokens: number }).maxTokens, 4096, bad);
    }
    await svc(['llm', '--max-tokens', '1', 'x']);
    assert.equal((broker.last.json as { maxTokens: number }).maxTokens, 1);
  });

  it('reads the prompt from stdin when none is given or it is -; an empty prompt is a usage error', async () => {
    let r = await svc(['llm', '--system', 'sys'], { stdin: 'from stdin\n' });
    assert.equal(r.code, 0);
    assert.deepEqual(broker.last.json, {
      model: 'utility',
      system: 'sys',
      prompt: 'from stdin',
      schemaText: null,
      maxTokens: 4096,
    });
    r = await svc(['llm', '-'], { stdin: 'dash prompt' });
    assert.equal((broker.last.json as { prompt: string }).prompt, 'dash prompt');
    const before = broker.seen.length;
    r = await svc(['llm'], { stdin: '\n\n' });
    assert.equal(r.code, 2);
    assert.match(text(r.stderr), /needs a prompt/);
    r = await svc(['llm', '']);
    assert.equal(r.code, 2);
    assert.equal(broker.seen.length, before);
  });

  it('sends the schema file raw; an unreadable file exits 2 without a request', async () => {
    const schema = join(dir, 'schema.json');
    writeFileSync(schema, '{ "type": "object",\n  "properties": { "n": { "type": "number" } } }\n');
    broker.reply = () => ({ body: { output: '{\n  "n": 1\n}', json: { n: 1 } } });
    let r = await svc(['llm', '--schema', schema, 'count']);
    assert.equal(r.code, 0);
    assert.equal(text(r.stdout), '{\n  "n": 1\n}\n');
    assert.equal((broker.last.json as { schemaText: string }).schemaText, readFileSync(schema, 'utf8'));
    const before = broker.seen.length;
    r = await svc(['llm', '--schema', join(dir, 'missing.json'), 'count']);
    assert.equal(r.code, 2);
    assert.match(text(r.stderr), /cannot read the schema file/);
    r = await svc(['llm', '--schema', dir, 'count']);
    assert.equal(r.code, 2);
    assert.equal(broker.seen.length, before);
  });

  it('a schema the broker finds not JSON exits 2; not an object exits 1', async () => {
    const schema = join(dir, 'bad.json');
    writeFileSync(schema, '{nope');
    broker.reply = () => ({
      status: 400,
      body: {
        code: 'validation_failed',
        message: 'schema is not valid JSON',
        fields: [{ field: 'schema', code: 'invalid_json', message: 'is not valid JSON' }],
        requestId: 'r',
      },
    });
    let r = await svc(['llm', '--schema', schema, 'x']);
    assert.equal(r.code, 2);
    assert.equal(text(r.stderr), 'svc: schema is not valid JSON\n');
    assert.equal((broker.last.json as { schemaText: string }).schemaText, '{nope');
    broker.reply = () => ({
      status: 400,
      body: {
        code: 'validation_failed',
        message: 'schema must be a JSON object at its top level',
        fields: [{ field: 'schema', code: 'not_object', message: 'must be an object' }],
        requestId: 'r',
      },
    });
    r = await svc(['llm', '--schema', schema, 'x']);
    assert.equal(r.code, 1);
    assert.equal(text(r.stderr), 'svc: schema must be a JSON object at its top level\n');
    broker.reply = () => ({
      status: 403,
      body: {
        code: 'forbidden',
        message: 'the run reached its cost limit, so svc llm is no longer available',
        requestId: 'r',
      },
    });
    r = await svc(['llm', 'x']);
    assert.equal(r.code, 1);
    assert.match(text(r.stderr), /no longer available/);
  });
});

describe('svc mcp', () => {
  it('tools prints the JSON array; a server name is URL-encoded', async () => {
    const tools =
      '[{"server":"gh","name":"search","description":"Search","inputSchema":{"type":"object"},"readOnly":true}]';
    broker.reply = () => ({ raw: tools });
    let r = await svc(['mcp', 'tools']);
    assert.equal(r.code, 0);
    assert.equal(text(r.stdout), `${tools}\n`);
    assert.equal(broker.last.method, 'GET');
    assert.equal(broker.last.url, '/v1/mcp/tools');
    r = await svc(['mcp', 'tools', 'my server']);
    assert.equal(broker.last.url, '/v1/mcp/tools?server=my%20server');
  });

  it('call sends the raw arguments text; none sends {} and does not read stdin', async () => {
    broker.reply = () => ({ body: { output: 'result text', isError: false } });
    let r = await svc(['mcp', 'call', 'gh', 'search'], { keepStdinOpen: true, timeoutMs: 3000 });
    assert.equal(r.code, 0);
    assert.equal(text(r.stdout), 'result text\n');
    assert.equal(broker.last.method, 'POST');
    assert.equal(broker.last.url, '/v1/mcp/call');
    assert.deepEqual(broker.last.json, { server: 'gh', tool: 'search', argumentsText: '{}' });
    r = await svc(['mcp', 'call', 'gh', 'search', '{"q": "svc"}'], { keepStdinOpen: true, timeoutMs: 3000 });
    assert.deepEqual(broker.last.json, { server: 'gh', tool: 'search', argumentsText: '{"q": "svc"}' });
    r = await svc(['mcp', 'call', 'gh', 'search', '-'], { stdin: '{"q":\n "from stdin"}\n' });
    assert.deepEqual(broker.last.json, { server: 'gh', tool: 'search', argumentsText: '{"q":\n "from stdin"}' });
  });

  it('prints the output with one newline at most; a tool error prints it and exits 1', async () => {
    broker.reply = () => ({ body: { output: 'ends with newline\n', isError: false } });
    let r = await svc(['mcp', 'call', 's', 't']);
    assert.equal(text(r.stdout), 'ends with newline\n');
    broker.reply = () => ({ body: { output: 'the tool failed: rate limited', isError: true } });
    r = await svc(['mcp', 'call', 's', 't']);
    assert.equal(r.code, 1);
    assert.equal(text(r.stdout), 'the tool failed: rate limited\n');
    broker.reply = () => ({
      status: 404,
      body: { code: 'not_found', message: 'MCP tool t on server s not found', requestId: 'r' },
    });
    r = await svc(['mcp', 'call', 's', 't']);
    assert.equal(r.code, 1);
    assert.equal(text(r.stderr), 'svc: MCP tool t on server s not found\n');
  });
});
