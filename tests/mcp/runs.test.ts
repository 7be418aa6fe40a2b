import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { adminSession, Client, startTestServer, type TestServer } from '../api/harness.js';
import { startHttpMcpServer, type TestHttpServer } from './servers/http-server.js';
import { waitFor } from '../wait.js';
import { bundleStdioServer } from './stdio-bundle.js';

/**
 * MCP tools in real runs on the bwrap backend: an HTTP server reached from the host and a stdio server started inside
 * the run's sandbox, both built with the official SDK; the agent (the fake provider, scripted through its route) and
 * `svc mcp` in a script use the same grants.
 */
process.env.SVC_ALLOW_PRIVATE_NETWORK_TARGETS = 'true';

let t: TestServer;
let api: Client;
let providerId: string;
let http: TestHttpServer;
let stdio: { path: string; remove(): void };
let separateUsers: boolean;
const ids: Record<string, string> = {};

before(async () => {
  http = await startHttpMcpServer();
  stdio = await bundleStdioServer();
  t = await startTestServer({ SVC_ROLES: 'api,projector,runner', SVC_SANDBOX: 'bwrap' });
  api = await adminSession(t);
  const info = await api.get('/api/system/info');
  assert.equal(info.body.sandbox?.error, null, 'the bwrap backend is usable');
  separateUsers = info.body.sandbox.capabilities.separateUsers;
  providerId = (await api.post('/api/providers', { name: 'Fake', kind: 'fake' })).body.id;
  await api.patch('/api/settings', { agentModelId: (await api.get('/api/models')).body.items[0].id });
  assert.equal((await api.post('/api/secrets', { name: 'stdio-token', value: 'sekrit-value-4242' })).status, 201);
  for (const [name, body] of Object.entries({
    web: { transport: 'http', url: http.url },
    local: { transport: 'stdio', command: 'node', args: [stdio.path], env: { TEST_TOKEN: '{{secret:stdio-token}}' } },
    down: { transport: 'http', url: 'http://127.0.0.1:9/mcp' },
    off: { transport: 'http', url: http.url, enabled: false },
  })) {
    const res = await api.post('/api/mcp-servers', { name, ...body });
    assert.equal(res.status, 201, res.text);
    ids[name] = res.body.id;
  }
  assert.equal((await api.post(`/api/mcp-servers/${ids.web}/test`)).body.ok, true);
});
after(async () => {
  await t?.stop();
  await http?.close();
  stdio?.remove();
});

type Event = { type: string; payload: Record<string, any> };

async function run(
  jobBody: Record<string, unknown>,
  grants: unknown[],
  script: unknown[],
): Promise<{ run: Record<string, any>; events: Event[] }> {
  const job = await api.post('/api/jobs', { name: `mcp ${Math.random()}`, selfImprove: false, ...jobBody });
  assert.equal(job.status, 201, job.text);
  const set = await api.request('PUT', `/api/jobs/${job.body.id}/mcp-servers`, grants);
  assert.equal(set.status, 200, set.text);
  assert.equal((await api.post(`/api/providers/${providerId}/script`, { responses: script, reset: true })).status, 200);
  const runId = (await api.post(`/api/jobs/${job.body.id}/runs`, {})).body.runId as string;
  const run = await waitFor(
    `run ${runId} to end`,
    async () => {
      const r = (await api.get(`/api/runs/${runId}`)).body as Record<string, any>;
      return !['queued', 'provisioning', 'running', 'verifying'].includes(r.status) && r;
    },
    { timeoutMs: 120_000, intervalMs: 50 },
  );
  return { run, events: (await api.get(`/api/runs/${runId}/events?limit=2000`)).body as Event[] };
}

const bash = (command: string) => ({ toolCalls: [{ name: 'bash', args: { command } }] });
const finish = { toolCalls: [{ name: 'finish', args: { status: 'success', summary: 'done' } }] };
const resultOf = (events: Event[], name: string) =>
  events.filter((e) => e.type === 'tool.result' && e.payload.name === name).map((e) => String(e.payload.content));

describe('MCP tools in a run (bwrap)', () => {
  it('serves granted tools to svc mcp and the agent, refuses the rest, and records every call', async () => {
    const script = [
      'svc mcp tools; echo "rc=$?"',
      'svc mcp tools local | head -c 0; svc mcp tools nowhere; echo "rc=$?"',
      `svc mcp call web lookup '{"word":"dog"}'; echo "rc=$?"`,
      `svc mcp call web record '{"note":"x"}'; echo "rc=$?"`,
      'svc mcp call local whoami; echo "rc=$?"',
      'svc mcp call local picture; echo "rc=$?"',
      'svc mcp call local broken; echo "rc=$?"',
      'svc mcp call local stats; echo "rc=$?"',
      `echo '{"note":"from-script"}' | svc mcp call local record -; echo "rc=$?"`,
      'echo "agent sees TEST_TOKEN=${TEST_TOKEN:-unset}"; cat /proc/[0-9]*/environ 2>/dev/null | tr "\\0" "\\n" | grep -c "^TEST_TOKEN="',
    ].join('\n');
    const { run: r, events } = await run(
      { name: 'uses tools', instruction: 'Use the MCP tools.' },
      [
        { serverId: ids.web, allowedTools: ['lookup'] },
        { serverId: ids.local, allowedTools: null },
        { serverId: ids.down, allowedTools: null },
        { serverId: ids.off, allowedTools: null },
      ],
      [
        {
          toolCalls: [
            { name: 'web__lookup', args: { word: 'cat' } },
            { name: 'local__picture', args: {} },
            { name: 'web__record', args: { note: 'no' } },
          ],
        },
        bash(script),
        finish,
      ],
    );
    assert.equal(r.status, 'succeeded', r.error);

    // Connections: the HTTP server from the host, the stdio one in the sandbox; the unreachable one is noted, the
    // disabled one is not even tried.
    const connections = events.filter((e) => e.type === 'mcp.call');
    const byServer = Object.fromEntries(connections.map((e) => [e.payload.server, e.payload]));
    assert.match(byServer.web.message, /Connected to web \(HTTP, 1 tools\)/);
    assert.match(byServer.local.message, /Connected to local \(stdio, 7 tools\)/);
    assert.equal(byServer.down.ok, false);
    assert.match(byServer.down.error, /Could not connect to down/);
    assert.equal(byServer.off, undefined);

    // The agent: granted tools by their <server>__<tool> names, ungranted ones unknown.
    assert.deepEqual(resultOf(events, 'web__lookup'), ['cat: found by http']);
    assert.deepEqual(resultOf(events, 'local__picture'), ['here it is\n[image image/png, 68 bytes]']);
    const refused = events.find((e) => e.type === 'tool.result' && e.payload.name === 'web__record');
    assert.equal(refused?.payload.isError, true);

    const out = resultOf(events, 'bash')[0]!;
    const tools = JSON.parse(out.slice(out.indexOf('['), out.indexOf(']\n') + 1)) as Array<{
      server: string;
      name: string;
      readOnly: boolean;
    }>;
    assert.deepEqual(
      tools.map((x) => `${x.server}/${x.name}`),
      [
        'local/broken',
        'local/lookup',
        'local/picture',
        'local/record',
        'local/slow',
        'local/stats',
        'local/whoami',
        'web/lookup',
      ],
    );
    assert.equal(tools.find((x) => x.name === 'record')?.readOnly, false);
    assert.equal(tools.find((x) => x.name === 'lookup')?.readOnly, true);
    assert.match(out, /MCP server nowhere is not available to this job\nrc=1/);
    assert.match(out, /dog: found by http\nrc=0/);
    assert.match(out, /MCP tool record on server web not found\nrc=1/);
    const who = JSON.parse(/\{"uid".*\}/.exec(out)![0]) as { uid: number; cwd: string; token: string };
    assert.equal(who.cwd, '/tmp');
    assert.equal(who.uid, separateUsers ? 1001 : 1000, 'the mcp user where the backend has separate users');
    // The secret reached the server's environment, and the timeline shows it redacted.
    assert.notEqual(who.token, null);
    assert.ok(!JSON.stringify(events).includes('sekrit-value-4242'), 'secret values never reach the timeline');
    assert.match(out, /here it is\n\[image image\/png, 68 bytes\]\nrc=0/);
    assert.match(out, /the broken tool broke\nrc=1/);
    assert.match(out, /\{"count":3,"label":"stdio"\}\nrc=0/);
    assert.match(out, /recorded 1\nrc=0/);
    // The agent cannot read the stdio server's environment: not in its own, not through /proc.
    assert.match(out, /agent sees TEST_TOKEN=unset\n0/);
    assert.deepEqual(http.log.notes, [], 'the ungranted side-effect tool of the HTTP server was never called');

    // Every svc mcp call is on the timeline with server, tool and result.
    const calls = events.filter((e) => e.type === 'broker.call' && e.payload.endpoint === 'POST /v1/mcp/call');
    const lookup = calls.find((e) => e.payload.tool === 'lookup');
    assert.equal(lookup?.payload.server, 'web');
    assert.equal(lookup?.payload.result, 'dog: found by http');
    assert.equal(calls.find((e) => e.payload.tool === 'broken')?.payload.isError, true);
    assert.equal(calls.find((e) => e.payload.tool === 'record' && e.payload.server === 'web')?.payload.ok, false);
  });

  it('tests a stdio server in a sandbox of its own', async () => {
    const test = await api.post(`/api/mcp-servers/${ids.local}/test`);
    assert.equal(test.status, 200, test.text);
    assert.equal(test.body.ok, true, test.body.error);
    assert.equal(test.body.tools.length, 7);
    assert.equal(test.body.auth.status, 'unsupported');
  });

  it('reports a stdio server that cannot start, with its stderr', async () => {
    const broken = await api.post('/api/mcp-servers', {
      name: 'crashy',
      transport: 'stdio',
      command: 'sh',
      args: ['-c', 'echo "no such module" >&2; exit 3'],
    });
    const test = await api.post(`/api/mcp-servers/${broken.body.id}/test`);
    assert.equal(test.body.ok, false);
    assert.match(test.body.error, /exited with status 3/);
    assert.match(test.body.error, /no such module/);
  });

  it('skips stdio servers with environment variables in a root job, and says so', async () => {
    const { run: r, events } = await run(
      { name: 'root', instruction: 'x', runAsRoot: true },
      [{ serverId: ids.local, allowedTools: null }],
      [finish],
    );
    assert.equal(r.status, 'succeeded', r.error);
    const note = events.find((e) => e.type === 'mcp.call' && e.payload.server === 'local');
    assert.equal(note?.payload.skipped, true);
    assert.match(note?.payload.error, /runs as root/);
  });

  it('answers 404 to svc mcp in a job without MCP servers', async () => {
    const { events } = await run(
      { name: 'plain', instruction: 'x' },
      [],
      [bash('svc mcp tools; echo "rc=$?"'), finish],
    );
    assert.match(resultOf(events, 'bash')[0]!, /This job has no MCP servers\nrc=1/);
  });

  it('makes a shadow run inconclusive when the new main calls an MCP tool with side effects, and keeps the op', async () => {
    const job = await api.post('/api/jobs', {
      name: `shadow mcp ${Math.random()}`,
      selfImprove: false,
      instruction: 'Record a note.',
    });
    await api.request('PUT', `/api/jobs/${job.body.id}/mcp-servers`, [{ serverId: ids.web, allowedTools: null }]);
    const main = (note: string) => `#!/bin/sh\nsvc mcp call web record '{"note":"${note}"}'\n`;
    assert.equal(
      (await api.request('PUT', `/api/jobs/${job.body.id}/playbook`, { content: { main: main('first') } })).status,
      200,
    );
    const runId = (await api.post(`/api/jobs/${job.body.id}/runs`, {})).body.runId as string;
    const settled = () =>
      waitFor(
        'the run and its reflection to end',
        async () => {
          const r = (await api.get(`/api/runs/${runId}`)).body as Record<string, any>;
          const done =
            !['queued', 'provisioning', 'running', 'verifying'].includes(r.status) && r.reflection !== 'pending';
          return done && r;
        },
        { timeoutMs: 120_000, intervalMs: 50 },
      );
    const ran = await settled();
    assert.equal(ran.status, 'succeeded', ran.error);
    assert.equal(ran.mode, 'scripted');
    const update = {
      op: 'update_main',
      rationale: 'r',
      id: null,
      kind: null,
      text: null,
      when: null,
      name: null,
      content: main('second'),
    };
    await api.post(`/api/providers/${providerId}/script`, {
      responses: [{ text: JSON.stringify({ summary: 's', usedLearnings: [], ops: [update] }) }],
      reset: true,
    });
    const recordedBefore = http.log.notes.filter((n) => n.includes('second')).length;
    assert.equal((await api.post(`/api/runs/${runId}/learn`, {})).status, 202);
    const learned = await settled();
    assert.equal(learned.reflection, 'done', learned.reflectionError);
    assert.equal(learned.reflectionOps[0].status, 'applied', 'an inconclusive shadow run keeps the op');
    assert.equal(learned.reflectionOps[0].test.status, 'skipped');
    assert.match(
      learned.reflectionOps[0].test.detail,
      /^inconclusive: the main script called MCP tools with side effects \(web\.record\)/,
    );
    assert.equal(
      http.log.notes.filter((n) => n.includes('second')).length,
      recordedBefore,
      'the refused call never reached the server',
    );
  });
});
