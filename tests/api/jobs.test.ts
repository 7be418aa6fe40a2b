import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { adminSession, createToken, startTestServer, type Client, type TestServer } from './harness.js';

let t: TestServer;
let admin: Client;
let api: Client;

before(async () => {
  t = await startTestServer();
  admin = await adminSession(t);
  api = (await createToken(admin)).client;
});
after(async () => t.stop());

const jobKeys = [
  'allowPrivateNetwork',
  'allowedDomains',
  'concurrency',
  'createdAt',
  'cron',
  'demoted',
  'enabled',
  'graduatedVersion',
  'hasWebhookToken',
  'id',
  'image',
  'instruction',
  'lastRun',
  'limits',
  'modePin',
  'modelId',
  'name',
  'network',
  'nextMode',
  'nextRunAt',
  'playbookVersion',
  'runAsRoot',
  'selfImprove',
  'spec',
  'timezone',
  'updatedAt',
];

describe('jobs', () => {
  it('creates a job with defaults and reads it back', async () => {
    const res = await api.post('/api/jobs', { name: '  Nightly report ', instruction: 'Run `echo hi`' });
    assert.equal(res.status, 201);
    assert.deepEqual(Object.keys(res.body).sort(), jobKeys);
    assert.equal(res.body.name, 'Nightly report');
    assert.equal(res.body.network, 'internet');
    assert.equal(res.body.concurrency, 'skip');
    assert.equal(res.body.enabled, true);
    assert.equal(res.body.selfImprove, true);
    assert.equal(res.body.playbookVersion, 0);
    assert.equal(res.body.lastRun, null);
    assert.equal(res.body.nextMode, 'explore');
    assert.deepEqual(res.body.limits, {});
    assert.equal(res.headers.get('location'), `/api/jobs/${res.body.id}`);
    const got = await api.get(`/api/jobs/${res.body.id}`);
    assert.equal(got.status, 200);
    assert.deepEqual(got.body, res.body);
  });

  it('patches only the fields present and clears optional text with an empty string', async () => {
    const created = await api.post('/api/jobs', {
      name: 'Patch me',
      instruction: 'x',
      cron: '0 9 * * 1-5',
      timezone: 'Europe/Berlin',
      image: 'debian:12',
      modePin: 'assisted',
      limits: { timeoutSeconds: 60, maxTurns: 5 },
    });
    assert.equal(created.status, 201, created.text);
    const id = created.body.id;
    const p1 = await api.patch(`/api/jobs/${id}`, { instruction: 'new instruction', limits: { memoryMb: 512 } });
    assert.equal(p1.status, 200, p1.text);
    assert.equal(p1.body.instruction, 'new instruction');
    assert.equal(p1.body.name, 'Patch me');
    assert.deepEqual(p1.body.limits, { memoryMb: 512 });
    assert.ok(p1.body.updatedAt >= created.body.updatedAt);
    const p2 = await api.patch(`/api/jobs/${id}`, { cron: '', timezone: '', image: '', modePin: '' });
    assert.equal(p2.status, 200, p2.text);
    assert.equal(p2.body.cron, null);
    assert.equal(p2.body.timezone, null);
    assert.equal(p2.body.image, null);
    assert.equal(p2.body.modePin, null);
    const p3 = await api.patch(`/api/jobs/${id}`, { enabled: false });
    assert.equal(p3.body.enabled, false);
  });

  it('refuses bad input naming every failing field and saves nothing', async () => {
    const before = await api.get('/api/jobs?pageSize=100');
    const res = await api.post('/api/jobs', {
      name: '',
      instruction: 'x'.repeat(20001),
      network: 'moon',
      limits: { timeoutSeconds: 10, cpus: 65, pidsLimit: 8 },
      image: 'i'.repeat(501),
    });
    assert.equal(res.status, 400);
    assert.equal(res.body.code, 'validation_failed');
    const fields = res.body.fields.map((f: { field: string }) => f.field).sort();
    assert.deepEqual(fields, [
      'image',
      'instruction',
      'limits.cpus',
      'limits.pidsLimit',
      'limits.timeoutSeconds',
      'name',
      'network',
    ]);
    for (const f of res.body.fields) assert.ok(f.code && f.message, 'every field error has a code and a message');
    const missing = await api.post('/api/jobs', {});
    assert.deepEqual(missing.body.fields.map((f: { field: string }) => f.field).sort(), ['instruction', 'name']);
    const unknown = await api.post('/api/jobs', { name: 'a', instruction: 'b', colour: 'red' });
    assert.equal(unknown.status, 400);
    assert.deepEqual(unknown.body.fields, [
      { field: 'colour', code: 'unknown_field', message: 'is not a known field' },
    ]);
    const wrongType = await api.post('/api/jobs', { name: 'a', instruction: 'b', enabled: 'true' });
    assert.equal(wrongType.status, 400, 'a JSON string is not a boolean');
    const blank = await api.post('/api/jobs', { name: '   ', instruction: 'ok' });
    assert.equal(blank.status, 400);
    assert.equal(blank.body.fields[0].field, 'name');
    const after = await api.get('/api/jobs?pageSize=100');
    assert.equal(after.body.total, before.body.total, 'no job was created by a refused request');
  });

  it('applies the domain rules: domains, allow-list, cron and timezone', async () => {
    const domains = await api.post('/api/jobs', {
      name: 'd',
      instruction: 'i',
      network: 'allowlist',
      allowedDomains: ['API.Example.com.', '*.example.org', 'api.example.com'],
    });
    assert.equal(domains.status, 201, domains.text);
    assert.deepEqual(domains.body.allowedDomains, ['api.example.com', '*.example.org']);
    const bad = await api.post('/api/jobs', {
      name: 'd',
      instruction: 'i',
      allowedDomains: ['10.0.0.1', 'https://x.com/a'],
    });
    assert.equal(bad.status, 400);
    assert.deepEqual(
      bad.body.fields.map((f: { field: string }) => f.field),
      ['allowedDomains[0]', 'allowedDomains[1]'],
    );
    const empty = await api.patch(`/api/jobs/${domains.body.id}`, { allowedDomains: [] });
    assert.equal(empty.status, 400);
    assert.equal(empty.body.fields[0].field, 'allowedDomains');
    const tz = await api.post('/api/jobs', {
      name: 'd',
      instruction: 'i',
      cron: '0 9 * * *',
      timezone: 'Mars/Olympus',
    });
    assert.equal(tz.status, 400);
    assert.deepEqual(
      tz.body.fields.map((f: { field: string }) => f.field),
      ['timezone'],
    );
    const cron = await api.post('/api/jobs', { name: 'd', instruction: 'i', cron: '61 * * * *' });
    assert.equal(cron.status, 400);
    assert.equal(cron.body.fields[0].field, 'cron');
  });

  it('archives a job: 404 everywhere after, and out of the list', async () => {
    const created = await api.post('/api/jobs', { name: 'Archive me', instruction: 'x' });
    const id = created.body.id;
    const del = await api.delete(`/api/jobs/${id}`);
    assert.equal(del.status, 204);
    assert.equal((await api.get(`/api/jobs/${id}`)).status, 404);
    assert.equal((await api.patch(`/api/jobs/${id}`, { name: 'y' })).status, 404);
    assert.equal((await api.delete(`/api/jobs/${id}`)).status, 404);
    const list = await api.get('/api/jobs?pageSize=100&search=Archive me');
    assert.equal(list.body.total, 0);
    const nope = await api.get('/api/jobs/00000000-0000-7000-8000-00000000dead');
    assert.equal(nope.status, 404);
    assert.equal(nope.body.code, 'not_found');
  });
});

describe('job list conventions', () => {
  const names = ['alpha', 'Bravo', 'charlie', 'delta 50%', 'echo_x', 'foxtrot', 'golf 500', 'echoax'];
  before(async () => {
    for (const [i, name] of names.entries()) {
      const res = await api.post('/api/jobs', {
        name: `list ${name}`,
        instruction: `instruction ${i}`,
        enabled: i % 2 === 0,
      });
      assert.equal(res.status, 201, res.text);
    }
  });

  it('answers the envelope with JobListDto items, sorted by name case-insensitively', async () => {
    const res = await api.get('/api/jobs?search=list%20&pageSize=100');
    assert.equal(res.status, 200);
    assert.deepEqual(Object.keys(res.body).sort(), ['items', 'page', 'pageSize', 'total']);
    assert.equal(res.body.total, names.length);
    assert.deepEqual(
      res.body.items.map((j: { name: string }) => j.name),
      names.map((n) => `list ${n}`).sort((a, b) => a.toLowerCase().localeCompare(b.toLowerCase())),
    );
    const item = res.body.items[0];
    assert.deepEqual(Object.keys(item).sort(), [
      'createdAt',
      'cron',
      'enabled',
      'id',
      'inputs',
      'lastMode',
      'lastRun',
      'modePin',
      'name',
      'nextMode',
      'nextRunAt',
      'recentRuns',
      'runCount',
      'scheduleHuman',
      'timezone',
      'updatedAt',
    ]);
    assert.equal(item.runCount, 0);
    assert.equal(item.recentRuns, null);
  });

  it('pages', async () => {
    const p1 = await api.get('/api/jobs?search=list%20&pageSize=3&page=1');
    const p3 = await api.get('/api/jobs?search=list%20&pageSize=3&page=3');
    assert.equal(p1.body.items.length, 3);
    assert.equal(p3.body.items.length, 2);
    assert.equal(p3.body.page, 3);
    assert.equal(p3.body.pageSize, 3);
    const beyond = await api.get('/api/jobs?search=list%20&pageSize=3&page=9');
    assert.deepEqual(beyond.body.items, []);
    assert.equal(beyond.body.total, names.length);
  });

  it('sorts on several keys with - for descending', async () => {
    const res = await api.get('/api/jobs?search=list%20&sort=-enabled,-name&pageSize=100');
    const got = res.body.items.map((j: { name: string; enabled: boolean }) => `${j.enabled}:${j.name}`);
    const expected = [...res.body.items]
      .sort(
        (a: { name: string; enabled: boolean }, b: { name: string; enabled: boolean }) =>
          Number(b.enabled) - Number(a.enabled) || b.name.toLowerCase().localeCompare(a.name.toLowerCase()),
      )
      .map((j: { name: string; enabled: boolean }) => `${j.enabled}:${j.name}`);
    assert.deepEqual(got, expected);
  });

  it('searches literally and case-insensitively', async () => {
    const pct = await api.get('/api/jobs?search=50%25');
    assert.deepEqual(
      pct.body.items.map((j: { name: string }) => j.name),
      ['list delta 50%'],
    );
    const us = await api.get('/api/jobs?search=echo_');
    assert.deepEqual(
      us.body.items.map((j: { name: string }) => j.name),
      ['list echo_x'],
    );
    const ci = await api.get('/api/jobs?search=BRAVO');
    assert.deepEqual(
      ci.body.items.map((j: { name: string }) => j.name),
      ['list Bravo'],
    );
    const instr = await api.get('/api/jobs?search=instruction 6');
    assert.deepEqual(
      instr.body.items.map((j: { name: string }) => j.name),
      ['list golf 500'],
    );
  });

  it('filters on enabled', async () => {
    const off = await api.get('/api/jobs?search=list%20&enabled=false&pageSize=100');
    assert.equal(off.body.total, 4);
    assert.ok(off.body.items.every((j: { enabled: boolean }) => !j.enabled));
    const both = await api.get('/api/jobs?search=list%20&enabled=true,false&pageSize=100');
    assert.equal(both.body.total, names.length);
    const bad = await api.get('/api/jobs?enabled=maybe');
    assert.equal(bad.status, 400);
    assert.equal(bad.body.fields[0].field, 'enabled');
  });

  it('refuses bad list parameters with fields', async () => {
    const cases: Array<[string, string]> = [
      ['/api/jobs?sort=colour', 'sort'],
      ['/api/jobs?sort=name,createdAt,updatedAt,runCount', 'sort'],
      ['/api/jobs?pageSize=101', 'pageSize'],
      ['/api/jobs?pageSize=0', 'pageSize'],
      ['/api/jobs?page=0', 'page'],
      ['/api/jobs?page=abc', 'page'],
      [`/api/jobs?search=${'x'.repeat(201)}`, 'search'],
    ];
    for (const [path, field] of cases) {
      const res = await api.get(path);
      assert.equal(res.status, 400, path);
      assert.equal(res.body.code, 'validation_failed', path);
      assert.ok(
        res.body.fields.some((f: { field: string }) => f.field === field),
        `${path} names ${field}: ${res.text}`,
      );
    }
  });
});
