import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DomainError } from '../../domain/decider.js';
import { agentToolNames, maxResultChars, renderToolResult } from '../../domain/mcp-result.js';
import type { McpServerConfig } from '../../domain/mcp-server.js';
import { McpConnection } from '../../adapters/mcp/connection.js';
import { guardedFetch, targetAllowed } from '../../adapters/egress/guarded-fetch.js';
import { RunMcp, shadowRefusal } from '../../adapters/mcp/run-tools.js';
import { startHttpMcpServer, type TestHttpServer } from './servers/http-server.js';

/** The MCP client parts against a real SDK server on loopback: timeouts, garbage, shadow refusals, names, sizes. */
let mcp: TestHttpServer;
let garbage: Server;
let garbageUrl: string;
const fetch = guardedFetch(true);
const http = (url: string, name = 'web'): McpServerConfig => ({
  name,
  description: '',
  transport: 'http',
  command: null,
  args: [],
  env: {},
  url,
  headers: {},
  oauth: null,
  enabled: true,
});

before(async () => {
  mcp = await startHttpMcpServer({ extraTools: 200 });
  garbage = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<html>hello</html>'));
  await new Promise<void>((r) => garbage.listen(0, '127.0.0.1', r));
  garbageUrl = `http://127.0.0.1:${(garbage.address() as AddressInfo).port}/mcp`;
});
after(async () => {
  await mcp.close();
  garbage.close();
});

describe('MCP connections', () => {
  it('lists 200 tools and more', async () => {
    const started = Date.now();
    const c = await McpConnection.open(http(mcp.url), { sandbox: null, fetch });
    assert.equal(c.tools.length, 207);
    assert.ok(Date.now() - started < 5000);
    await c.close();
  });

  it('fails a server that hangs within its timeout, and one that answers garbage, with clear errors', async () => {
    const t0 = Date.now();
    await assert.rejects(
      McpConnection.open(http(mcp.hangUrl), { sandbox: null, fetch, connectTimeoutMs: 500 }),
      /did not answer within/,
    );
    assert.ok(Date.now() - t0 < 3000, `gave up after ${Date.now() - t0} ms`);
    await assert.rejects(
      McpConnection.open(http(garbageUrl), { sandbox: null, fetch, connectTimeoutMs: 2000 }),
      /could not connect to/,
    );
  });

  it('times out a slow call without blocking other calls', async () => {
    const c = await McpConnection.open(http(mcp.url), { sandbox: null, fetch, callTimeoutMs: 300 });
    const [slow, quick] = await Promise.all([c.call('slow', { ms: 3000 }), c.call('lookup', { word: 'fast' })]);
    assert.equal(slow.isError, true);
    assert.match(slow.output, /failed the call of slow: .*timed out/i);
    assert.deepEqual(quick, { output: 'fast: found by http', isError: false });
    await c.close();
  });

  it('refuses private and loopback targets unless the operator allows them; metadata never', async () => {
    assert.equal(targetAllowed('127.0.0.1', false), false);
    assert.equal(targetAllowed('127.0.0.1', true), true);
    assert.equal(targetAllowed('10.1.2.3', true), true);
    assert.equal(targetAllowed('169.254.169.254', true), false);
    assert.equal(targetAllowed('93.184.216.34', false), true);
    await assert.rejects(
      McpConnection.open(http(mcp.url), { sandbox: null, fetch: guardedFetch(false) }),
      /does not connect to/,
    );
  });
});

describe("a run's MCP set", () => {
  const timeline: Array<{ type: string; payload: Record<string, unknown> }> = [];
  const set = (shadow: boolean) =>
    new RunMcp([{ id: 's1', name: 'web', config: http(mcp.url), allowedTools: ['lookup', 'record', 'picture'] }], {
      shadow,
      runAsRoot: false,
      connect: { fetch },
      timeline: (type, payload) => timeline.push({ type, payload }),
    });

  it('refuses actions in a shadow run, records the refusal, and lets read-only tools through', async () => {
    const run = set(true);
    await run.connect(null);
    assert.equal((await run.call('web', 'lookup', { word: 'x' })).output, 'x: found by http');
    await assert.rejects(
      run.call('web', 'record', { note: 'shadow' }),
      (err: unknown) => err instanceof DomainError && err.code === 'forbidden' && err.message === shadowRefusal,
    );
    assert.deepEqual(run.refused, [{ server: 'web', tool: 'record' }]);
    assert.ok(!mcp.log.notes.includes('shadow'), 'the side effect never happened');
    await run.close();
  });

  it('counts actions, filters by grants and names tools for the agent', async () => {
    const run = set(false);
    await run.connect(null);
    assert.deepEqual(
      (await run.tools(null)).map((t) => t.name),
      ['lookup', 'picture', 'record'],
    );
    assert.equal((await run.call('web', 'record', { note: 'real' })).output, `recorded ${mcp.log.notes.length}`);
    assert.deepEqual(run.actions, [{ server: 'web', tool: 'record' }]);
    await assert.rejects(run.call('web', 'broken', {}), /MCP tool broken on server web not found/);
    assert.deepEqual(
      run.agentTools().map((t) => t.agentName),
      ['web__lookup', 'web__picture', 'web__record'],
    );
    assert.match(
      String(timeline.find((e) => e.type === 'mcp.call')?.payload.message),
      /Connected to web \(HTTP, 3 tools\)/,
    );
    await run.close();
  });
});

describe('results and names', () => {
  it('renders parts, placeholders and structured-only results, and cuts long ones with a marker', () => {
    assert.deepEqual(
      renderToolResult({
        content: [
          { type: 'text', text: 'a' },
          { type: 'audio', data: 'AAAA', mimeType: 'audio/wav' },
          { type: 'resource', resource: { uri: 'file:///x', blob: 'AAAA', mimeType: 'application/pdf' } },
          { type: 'resource', resource: { uri: 'file:///t', text: 'inline' } },
        ],
      }),
      {
        output: 'a\n[audio audio/wav, 3 bytes]\n[resource file:///x application/pdf, 3 bytes]\ninline',
        isError: false,
      },
    );
    assert.deepEqual(renderToolResult({ content: [], structuredContent: { n: 1 } }), {
      output: '{"n":1}',
      isError: false,
    });
    assert.equal(renderToolResult({ content: [{ type: 'text', text: 'bad' }], isError: true }).isError, true);
    const long = renderToolResult({ content: [{ type: 'text', text: 'x'.repeat(maxResultChars * 2) }] });
    assert.ok(long.output.length < maxResultChars + 100);
    assert.match(long.output, /the result had 200000 characters; the rest was cut\]$/);
  });

  it('sanitises agent tool names to 64 characters and keeps distinct tools apart', () => {
    const names = agentToolNames([
      { server: 'my.server', tool: 'do it!' },
      { server: 's', tool: 'a'.repeat(80) },
      { server: 's', tool: `${'a'.repeat(80)}b` },
    ]);
    assert.equal(names[0], 'my_server__do_it_');
    assert.equal(names[1]!.length, 64);
    assert.equal(names[2]!.length, 64);
    assert.notEqual(names[1], names[2]);
    for (const n of names) assert.match(n, /^[A-Za-z0-9_-]{1,64}$/);
  });
});
