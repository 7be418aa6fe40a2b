import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { systemContext, type CommandContext } from '../../app/commands.js';
import { jobDecider, jobStreamId } from '../../domain/job.js';
import { waitFor } from '../wait.js';
import { createToken, foreignJobAndRun, serverWithFakeModel, userSession, type Client } from './harness.js';

/**
 * The service's own MCP server (docs/mcp-server.md) driven by the official SDK's client over Streamable HTTP, against
 * a running server with the fake model: every tool used for real, with the token's role and workspace.
 */
const server = serverWithFakeModel();
let ownerToken = '';
let memberToken = '';
let memberId = '';
let member: Client;
let foreignJob = '';
let foreignRun = '';
const otherWorkspace = 'another-workspace';
const foreignCtx: CommandContext = { ...systemContext, workspaceId: otherWorkspace };

const open: McpClient[] = [];

async function connect(token: string): Promise<McpClient> {
  const client = new McpClient({ name: 'svc-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${server.t.url}/api/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  open.push(client);
  return client;
}

type Result = CallToolResult & { structuredContent?: Record<string, any> };

async function call(client: McpClient, name: string, args: Record<string, unknown> = {}): Promise<Result> {
  return (await client.callTool({ name, arguments: args })) as Result;
}

/** A tool call that must succeed: its structured answer. */
async function ok(client: McpClient, name: string, args: Record<string, unknown> = {}): Promise<Record<string, any>> {
  const r = await call(client, name, args);
  assert.notEqual(r.isError, true, `${name}: ${JSON.stringify(r.content)}`);
  const text = (r.content[0] as { text: string }).text;
  assert.deepEqual(JSON.parse(text), r.structuredContent, 'the text is the structured answer');
  return r.structuredContent!;
}

/** A tool call that must fail as a tool error (not a protocol error): its code and fields. */
async function refused(client: McpClient, name: string, args: Record<string, unknown>) {
  const r = await call(client, name, args);
  assert.equal(r.isError, true, `${name} should fail: ${JSON.stringify(r.content)}`);
  return r.structuredContent as { code: string; message: string; fields?: { field: string; code: string }[] };
}

async function script(responses: unknown[]) {
  const pushed = await server.api.post(`/api/providers/${server.providerId}/script`, { responses, reset: true });
  assert.equal(pushed.status, 200, pushed.text);
}

const finalStatuses = ['succeeded', 'failed', 'timed_out', 'cancelled', 'skipped'];

async function runEnds(client: McpClient, runId: string): Promise<Record<string, any>> {
  // As long as the harness gives a run (finishedRun): a sandbox starts slowly on a loaded machine.
  return waitFor(
    `run ${runId} to end`,
    async () => {
      const run = await ok(client, 'get_run', { id: runId });
      return finalStatuses.includes(run.status) ? run : undefined;
    },
    { timeoutMs: 120_000 },
  );
}

describe('the MCP server', () => {
  after(async () => {
    for (const c of open) await c.close();
  });
  before(async () => {
    ownerToken = (await createToken(server.api, 'owner mcp')).token;
    const m = await userSession(server.t, server.api, 'member@example.com');
    member = m.client;
    memberId = m.userId;
    memberToken = (await createToken(member, 'member mcp')).token;
    const s = server.t.server.services;
    ({ jobId: foreignJob, runId: foreignRun } = await foreignJobAndRun(server.t, otherWorkspace));
    // The foreign run must not run: it is cancelled at once, so the runner never spends a sandbox on it.
    await s.engine.waitFor(await s.runs.cancel(otherWorkspace, foreignRun, foreignCtx));
  });

  describe('tools', () => {
    it('lists its tools with annotations and the input schemas of the API', async () => {
      const client = await connect(ownerToken);
      assert.equal(client.getServerVersion()?.name, 'svc');
      const { tools } = await client.listTools();
      const byName = new Map(tools.map((t) => [t.name, t]));
      assert.deepEqual([...byName.keys()].sort(), [
        'cancel_run',
        'compile_job',
        'create_job',
        'get_job',
        'get_run',
        'list_jobs',
        'list_mcp_servers',
        'list_runs',
        'run_job',
        'search_docs',
        'set_job_mcp_servers',
        'update_job',
      ]);
      for (const t of tools) {
        assert.equal(typeof t.annotations?.readOnlyHint, 'boolean', t.name);
        assert.equal(typeof t.annotations?.destructiveHint, 'boolean', t.name);
        assert.equal(typeof t.annotations?.idempotentHint, 'boolean', t.name);
        assert.ok(t.description && t.description.length > 20, t.name);
        assert.equal(t.inputSchema.type, 'object');
        assert.equal(JSON.stringify(t.inputSchema).includes('$id'), false, `${t.name}: no schema ids leak`);
      }
      for (const name of ['list_jobs', 'get_job', 'get_run', 'list_runs', 'list_mcp_servers', 'search_docs'])
        assert.equal(byName.get(name)!.annotations!.readOnlyHint, true, name);
      for (const name of ['create_job', 'update_job', 'run_job', 'cancel_run', 'set_job_mcp_servers'])
        assert.equal(byName.get(name)!.annotations!.readOnlyHint, false, name);
      assert.equal(byName.get('cancel_run')!.annotations!.destructiveHint, true);
      assert.equal(byName.get('set_job_mcp_servers')!.annotations!.destructiveHint, true);
      assert.equal(byName.get('create_job')!.annotations!.destructiveHint, false);
      // The job fields are the API's: the same bounds as POST /api/jobs.
      const create = byName.get('create_job')!.inputSchema as { properties: Record<string, any>; required: string[] };
      assert.equal(create.properties.name.maxLength, 200);
      assert.equal(create.properties.instruction.maxLength, 20000);
      assert.deepEqual([...create.required].sort(), ['instruction', 'name']);
      const list = byName.get('list_runs')!.inputSchema as { properties: Record<string, any> };
      assert.equal(list.properties.pageSize.maximum, 100);
    });

    it('creates, compiles, updates and runs a job, and follows the run to its end', async () => {
      const client = await connect(ownerToken);
      const compiled = await ok(client, 'compile_job', { instruction: 'Every day at 7am report the answer' });
      assert.equal(compiled.cron, '0 7 * * *');
      assert.deepEqual(compiled.questions, []);
      const open = await ok(client, 'compile_job', { instruction: 'Report the answer' });
      assert.equal(open.questions.length, 1, 'a sentence without a schedule asks how often');
      const quiet = await ok(client, 'compile_job', { instruction: 'Report the answer', askQuestions: false });
      assert.deepEqual(quiet.questions, []);

      const job = await ok(client, 'create_job', {
        name: 'MCP job',
        instruction: 'Report the answer with `svc output set answer 42`.',
        selfImprove: false,
        spec: { outputs: [{ name: 'answer', type: 'number' }] },
      });
      assert.ok(job.id);
      assert.equal((await server.api.get(`/api/jobs/${job.id}`)).body.name, 'MCP job', 'saved like POST /api/jobs');
      assert.equal((await ok(client, 'get_job', { id: job.id })).instruction, job.instruction);
      const listed = await ok(client, 'list_jobs', { search: 'mcp job', pageSize: 5 });
      assert.deepEqual(
        listed.items.map((j: { id: string }) => j.id),
        [job.id],
      );
      assert.equal(listed.pageSize, 5);
      const renamed = await ok(client, 'update_job', {
        id: job.id,
        name: 'MCP job, renamed',
        instruction: 'Report the answer with `svc output set answer 42`, please.',
        rebuildSpec: false,
      });
      assert.equal(renamed.name, 'MCP job, renamed');
      assert.deepEqual(renamed.spec, job.spec, 'rebuildSpec: false keeps the spec');
      assert.equal(renamed.selfImprove, false, 'fields not given stay');

      await script([
        { toolCalls: [{ name: 'bash', args: { command: 'svc output set answer 42' } }] },
        { toolCalls: [{ name: 'finish', args: { status: 'success', summary: 'The answer is 42.' } }] },
      ]);
      const started = await ok(client, 'run_job', {
        id: job.id,
        input: { question: 'what' },
        instructions: 'Be brief.',
      });
      assert.equal(started.status, 'queued');
      const run = await runEnds(client, started.runId);
      assert.equal(run.status, 'succeeded', run.error);
      assert.equal(run.summary, 'The answer is 42.');
      assert.deepEqual(run.outputs, { answer: 42 });
      assert.equal(run.trigger, 'api', 'a token starts runs with trigger api');
      const http = (await server.api.get(`/api/runs/${started.runId}`)).body;
      assert.deepEqual(http.input, { question: 'what' });
      assert.equal(http.instructions, 'Be brief.');

      const runs = await ok(client, 'list_runs', { job: job.id, status: 'succeeded' });
      assert.deepEqual(
        runs.items.map((r: { id: string }) => r.id),
        [started.runId],
      );
      assert.equal(runs.total, 1);
    });

    it('cancels a live run, and refuses to cancel it twice', async () => {
      const client = await connect(ownerToken);
      const job = await ok(client, 'create_job', { name: 'Slow job', instruction: 'Wait.', selfImprove: false });
      await script([{ toolCalls: [{ name: 'bash', args: { command: 'sleep 120' } }] }]);
      const started = await ok(client, 'run_job', { id: job.id });
      await waitFor(
        'the run to be running',
        async () => (await ok(client, 'get_run', { id: started.runId })).status === 'running',
        { timeoutMs: 120_000 },
      );
      await ok(client, 'cancel_run', { id: started.runId });
      const run = await runEnds(client, started.runId);
      assert.equal(run.status, 'cancelled');
      const again = await refused(client, 'cancel_run', { id: started.runId });
      assert.equal(again.code, 'conflict');
    });

    it("lists the workspace's MCP servers and sets a job's", async () => {
      const client = await connect(memberToken);
      const registered = await member.post('/api/mcp-servers', {
        name: 'chat',
        transport: 'stdio',
        command: 'chat-server',
      });
      assert.equal(registered.status, 201, registered.text);
      const servers = await ok(client, 'list_mcp_servers', { search: 'chat' });
      assert.deepEqual(
        servers.items.map((s: { id: string; name: string }) => [s.id, s.name]),
        [[registered.body.id, 'chat']],
      );
      const job = await ok(client, 'create_job', { name: 'Chatty', instruction: 'Post hello.' });
      const set = await ok(client, 'set_job_mcp_servers', {
        id: job.id,
        servers: [{ serverId: registered.body.id, allowedTools: ['post'] }],
      });
      assert.deepEqual(set.servers, [{ serverId: registered.body.id, serverName: 'chat', allowedTools: ['post'] }]);
      assert.deepEqual(
        (await member.get(`/api/jobs/${job.id}/mcp-servers`)).body,
        set.servers,
        'the same grants the HTTP route answers',
      );
      const cleared = await ok(client, 'set_job_mcp_servers', { id: job.id, servers: [] });
      assert.deepEqual(cleared.servers, []);
    });

    it("acts as the token's user and role: a member's token and an admin's see the same workspace", async () => {
      const asMember = await connect(memberToken);
      const asOwner = await connect(ownerToken);
      assert.equal((await asMember.listTools()).tools.length, 12, 'every tool mirrors a route open to members');
      const job = await ok(asMember, 'create_job', { name: 'Member job', instruction: 'Say hi.', selfImprove: false });
      assert.equal((await ok(asOwner, 'get_job', { id: job.id })).name, 'Member job');
      await script([{ toolCalls: [{ name: 'finish', args: { status: 'success', summary: 'hi' } }] }]);
      const started = await ok(asMember, 'run_job', { id: job.id });
      await runEnds(asOwner, started.runId);
      const http = (await server.api.get(`/api/runs/${started.runId}`)).body;
      assert.equal(http.triggeredBy, memberId, "the run is the member's");
      assert.equal(http.trigger, 'api');
    });

    it("answers another workspace's job and run as not found, and changes nothing", async () => {
      const client = await connect(memberToken);
      const calls: [string, Record<string, unknown>][] = [
        ['get_job', { id: foreignJob }],
        ['update_job', { id: foreignJob, name: 'Taken over' }],
        ['run_job', { id: foreignJob }],
        ['set_job_mcp_servers', { id: foreignJob, servers: [] }],
        ['get_run', { id: foreignRun }],
        ['cancel_run', { id: foreignRun }],
      ];
      for (const [name, args] of calls) assert.equal((await refused(client, name, args)).code, 'not_found', name);
      const runs = await ok(client, 'list_runs', { job: foreignJob });
      assert.equal(runs.total, 0);
      const s = server.t.server.services;
      const { state } = await s.bus.load(jobStreamId(foreignJob), jobDecider);
      assert.ok(state.status === 'active' && state.config.name === 'Foreign job', 'the foreign job is unchanged');
    });

    it('answers bad arguments as a tool error naming the field', async () => {
      const client = await connect(ownerToken);
      const cases: [string, Record<string, unknown>, string][] = [
        ['create_job', { name: '', instruction: 'x' }, 'name'],
        ['create_job', { name: 'x', instruction: 'x', bogus: 1 }, 'bogus'],
        ['create_job', { name: 'x', instruction: 'x', limits: { cpus: 1000 } }, 'limits.cpus'],
        ['create_job', { name: 'x', instruction: 'x'.repeat(20001) }, 'instruction'],
        ['list_jobs', { pageSize: 1000 }, 'pageSize'],
        ['list_runs', { sort: 'nonsense' }, 'sort'],
        ['get_job', {}, 'id'],
        ['get_run', { id: 'x'.repeat(101) }, 'id'],
        ['search_docs', { query: 'q'.repeat(201) }, 'query'],
        [
          'set_job_mcp_servers',
          { id: 'x', servers: Array(101).fill({ serverId: 's', allowedTools: null }) },
          'servers',
        ],
        ['run_job', { id: 'x', instructions: 'i'.repeat(10001) }, 'instructions'],
      ];
      for (const [name, args, field] of cases) {
        const error = await refused(client, name, args);
        assert.equal(error.code, 'validation_failed', `${name} ${field}`);
        assert.ok(
          error.fields?.some((f) => f.field === field),
          `${name}: ${JSON.stringify(error.fields)} should name ${field}`,
        );
      }
      // A job the decider refuses (an allowlist without domains) is refused the same way, and nothing is created.
      const before = (await server.api.get('/api/jobs')).body.total;
      const error = await refused(client, 'create_job', { name: 'x', instruction: 'x', network: 'allowlist' });
      assert.equal(error.code, 'validation_failed');
      assert.equal((await server.api.get('/api/jobs')).body.total, before);
      // An unknown tool is the protocol's error, not a tool's.
      await assert.rejects(call(client, 'drop_tables'), /Unknown tool/);
    });

    it('searches its docs and API reference, with sources and snippets', async () => {
      const client = await connect(memberToken);
      const found = await ok(client, 'search_docs', { query: 'webhook rate limit', limit: 3 });
      assert.equal(found.results.length, 3);
      assert.match(found.results[0].source, /^docs\/api\.md#|^openapi:/);
      assert.ok(found.results.every((r: { snippet: string }) => r.snippet.length > 0 && r.snippet.length < 400));
      assert.ok(found.results[0].score >= found.results[2].score, 'ranked');
      const api = await ok(client, 'search_docs', { query: 'rotate webhook token' });
      assert.ok(
        api.results.some((r: { source: string }) => r.source === 'openapi:POST /api/jobs/{id}/webhook-token'),
        JSON.stringify(api.results.map((r: { source: string }) => r.source)),
      );
      assert.deepEqual((await ok(client, 'search_docs', { query: '%%% ***' })).results, [], 'no words, no results');
    });
  });

  describe('the endpoint over HTTP', () => {
    const initialize = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    };
    const post = (headers: Record<string, string>, body: string = JSON.stringify(initialize)) =>
      fetch(`${server.t.url}/api/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
        body,
      });

    it('refuses a missing, wrong or non-API credential with 401 and a challenge naming the metadata', async () => {
      const metadata = `${server.t.url}/.well-known/oauth-protected-resource/api/mcp`;
      const cookie = member.credential && 'cookie' in member.credential ? member.credential.cookie : '';
      assert.ok(cookie);
      const hook = await server.api.post<{ id: string }>('/api/jobs', { name: 'hooked', instruction: 'x' });
      const webhookToken = (await server.api.post(`/api/jobs/${hook.body.id}/webhook-token`)).body.token as string;
      for (const [name, headers, error] of [
        ['no credential', {}, false],
        ['a session cookie', { cookie }, false],
        ['a bad token', { authorization: 'Bearer svc_nope' }, true],
        ['a webhook token', { authorization: `Bearer ${webhookToken}` }, true],
        ['a Basic header', { authorization: 'Basic YWRtaW46YWRtaW4=' }, true],
      ] as const) {
        const res = await post(headers);
        assert.equal(res.status, 401, name);
        const challenge = res.headers.get('www-authenticate') ?? '';
        assert.match(challenge, /^Bearer /, name);
        assert.ok(challenge.includes(`resource_metadata="${metadata}"`), `${name}: ${challenge}`);
        assert.equal(challenge.includes('error="invalid_token"'), error, name);
        const body = (await res.json()) as { code: string };
        assert.equal(body.code, error ? 'invalid_token' : 'not_signed_in', name);
      }
      // The SDK's client sees the refusal too.
      await assert.rejects(connect('svc_nope'));
    });

    it('serves the protected resource metadata (RFC 9728) without credentials', async () => {
      const res = await fetch(`${server.t.url}/.well-known/oauth-protected-resource/api/mcp`);
      assert.equal(res.status, 200);
      const doc = (await res.json()) as Record<string, unknown>;
      assert.equal(doc.resource, `${server.t.url}/api/mcp`);
      assert.deepEqual(doc.bearer_methods_supported, ['header']);
      assert.equal(doc.authorization_servers, undefined, 'no authorization server until identity offers OAuth');
    });

    it('answers GET and DELETE with 405 (stateless), and keeps the body limit', async () => {
      for (const method of ['GET', 'DELETE']) {
        const res = await fetch(`${server.t.url}/api/mcp`, {
          method,
          headers: { authorization: `Bearer ${ownerToken}` },
        });
        assert.equal(res.status, 405, method);
        assert.equal(res.headers.get('allow'), 'POST');
        assert.equal(((await res.json()) as { code: string }).code, 'method_not_allowed');
      }
      const huge = JSON.stringify({ ...initialize, params: { ...initialize.params, pad: 'x'.repeat(1024 * 1024) } });
      const res = await post({ authorization: `Bearer ${ownerToken}` }, huge);
      assert.equal(res.status, 400, 'over 1 MiB');
      assert.equal(((await res.json()) as { message: string }).message, 'The request body is too large');
      const batch = Array.from({ length: 21 }, (_v, i) => ({
        jsonrpc: '2.0',
        id: i,
        method: 'tools/call',
        params: { name: 'list_jobs', arguments: {} },
      }));
      const many = await post({ authorization: `Bearer ${ownerToken}` }, JSON.stringify(batch));
      assert.equal(many.status, 400, 'a batch is bounded');
      const refusal = (await many.json()) as { code: string; fields: { field: string }[] };
      assert.equal(refusal.code, 'validation_failed');
      assert.equal(refusal.fields[0]!.field, 'body');
      const nested = await post({ authorization: `Bearer ${ownerToken}` }, '['.repeat(100) + ']'.repeat(100));
      assert.equal(nested.status, 400, 'the JSON shape limits apply too');
      assert.equal(((await nested.json()) as { code: string }).code, 'invalid_request_body');
    });

    it('answers a plain JSON-RPC initialize with the headers every answer carries', async () => {
      const res = await post({ authorization: `Bearer ${ownerToken}`, 'x-request-id': 'mcp-raw-1' });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('x-request-id'), 'mcp-raw-1');
      assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
      assert.equal(res.headers.get('mcp-session-id'), null, 'stateless: no session');
      const body = (await res.json()) as { result: { serverInfo: { name: string } } };
      assert.equal(body.result.serverInfo.name, 'svc');
    });
  });
});
