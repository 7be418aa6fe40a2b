import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { adminSession, Client, createToken, startTestServer, type TestServer } from '../api/harness.js';

/** `POST /api/jobs/compile` with the fake provider: deterministic from the sentence, or scripted through its route. */
let t: TestServer;
let api: Client;
let providerId = '';
let chatId = '';

before(async () => {
  t = await startTestServer({ SVC_ROLES: 'api,projector' });
  api = (await createToken(await adminSession(t))).client;
});
after(async () => t?.stop());

const compile = (instruction: unknown) => api.post('/api/jobs/compile', { instruction });

describe('compile', () => {
  it('answers 422 while no model is configured', async () => {
    const res = await compile('Check the weather every day.');
    assert.equal(res.status, 422);
    assert.equal(res.body.code, 'unsupported');
    assert.match(res.body.message, /utility model/);
  });

  it('validates the sentence', async () => {
    for (const bad of ['', '   ', 'x'.repeat(20001), 42]) {
      const res = await compile(bad);
      assert.equal(res.status, 400, JSON.stringify(bad));
      assert.equal(res.body.fields[0].field, 'instruction');
    }
  });

  it('compiles a sentence deterministically with the fake provider, matching MCP servers of the registry', async () => {
    const admin = await adminSession(t, 'admin@example.com');
    providerId = (await admin.post('/api/providers', { name: 'Fake', kind: 'fake' })).body.id;
    await admin.patch('/api/settings', { agentModelId: (await admin.get('/api/models')).body.items[0].id });
    chatId = (await api.post('/api/mcp-servers', { name: 'team-chat', transport: 'stdio', command: 'chat-server' }))
      .body.id;

    const sentence = 'Every monday at 8am Europe/Berlin post the weather from wttr.in to Team-Chat';
    const res = await compile(sentence);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.name, 'Every monday at 8am Europe Berlin');
    assert.equal(res.body.instruction, sentence);
    assert.equal(res.body.cron, '0 8 * * 1');
    assert.equal(res.body.timezone, 'Europe/Berlin');
    assert.equal(res.body.scheduleHuman, 'every monday at 08:00');
    assert.deepEqual(res.body.spec.schedule, {
      cron: '0 8 * * 1',
      timezone: 'Europe/Berlin',
      human: 'every monday at 08:00',
    });
    assert.equal(res.body.network, 'allowlist');
    assert.deepEqual(res.body.allowedDomains, ['wttr.in']);
    assert.deepEqual(res.body.mcp, [
      { server: 'team-chat', why: 'The instruction mentions team-chat.', serverId: chatId },
    ]);
    assert.deepEqual(res.body.spec.mcp, [{ server: 'team-chat', why: 'The instruction mentions team-chat.' }]);
    assert.deepEqual(res.body.warnings, []);
    assert.deepEqual((await compile(sentence)).body, res.body, 'the same sentence compiles the same way');

    // The proposal is a valid job body.
    const job = await api.post('/api/jobs', {
      name: res.body.name,
      instruction: res.body.instruction,
      spec: res.body.spec,
      cron: res.body.cron,
      timezone: res.body.timezone,
      network: res.body.network,
      allowedDomains: res.body.allowedDomains,
    });
    assert.equal(job.status, 201, job.text);
  });

  it('warns about MCP servers that are not configured', async () => {
    const res = await compile('Summarise my inbox with the gmail MCP every day');
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.cron, '0 9 * * *');
    assert.equal(res.body.timezone, 'UTC');
    assert.deepEqual(res.body.mcp, [{ server: 'gmail', why: 'The instruction mentions gmail.', serverId: null }]);
    assert.deepEqual(res.body.warnings, ['Mentions gmail, but no MCP server with that name is configured.']);
    const offline = await compile('Count the lines of a file offline');
    assert.equal(offline.body.network, 'none');
    assert.equal(offline.body.cron, null);
  });

  it('drops an invalid schedule with a warning and cleans the answer of a real model', async () => {
    const answer = {
      name: 'Nightly',
      title: 'Nightly',
      goal: 'g',
      schedule: { cron: '61 * * * *', timezone: 'Mars/Base', human: 'x' },
      successCriteria: [],
      inputs: [
        { name: 'a', type: 'string', description: '' },
        { name: 'a', type: 'string', description: '' },
      ],
      outputs: [],
      mcp: [{ server: 'TEAM-CHAT', why: 'post' }],
      network: 'allowlist',
      allowedDomains: ['https://bad/url', 'Example.COM.'],
      dockerfile: null,
      sideEffects: ['posts'],
      warnings: ['unclear'],
    };
    await api.post(`/api/providers/${providerId}/script`, {
      responses: [{ text: JSON.stringify(answer) }],
      reset: true,
    });
    const res = await compile('whatever');
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.cron, null);
    assert.equal(res.body.spec.schedule, null);
    assert.equal(res.body.warnings[0], 'unclear');
    assert.match(res.body.warnings[1], /^The proposed schedule is invalid: /);
    assert.deepEqual(res.body.allowedDomains, ['example.com']);
    assert.deepEqual(res.body.mcp, [{ server: 'team-chat', why: 'post', serverId: chatId }]);
    assert.equal(res.body.spec.inputs.length, 1);
  });

  it('answers provider_error when the model fails or answers garbage', async () => {
    await api.post(`/api/providers/${providerId}/script`, {
      responses: [{ error: 'overloaded', errorStatus: 400 }],
      reset: true,
    });
    const failed = await compile('anything');
    assert.equal(failed.status, 502);
    assert.equal(failed.body.code, 'provider_error');
    assert.match(failed.body.message, /could not compile the job/);
    await api.post(`/api/providers/${providerId}/script`, { responses: [{ text: 'not json' }], reset: true });
    assert.equal((await compile('anything')).body.code, 'provider_error');
  });
});
