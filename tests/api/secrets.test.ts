import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { redact, redactor } from '../../domain/redact.js';
import { secretNameDecider, secretNameStreamId } from '../../domain/secret.js';
import { defaultWorkspaceId } from '../../domain/workspace.js';
import { systemContext } from '../../app/commands.js';
import { waitFor } from '../wait.js';
import { adminSession, Client, createToken, startTestServer, userSession, type TestServer } from './harness.js';

/** Secrets: sealed at rest, never returned, mapped into jobs as variables. */
let t: TestServer;
let member: Client;
let memberToken: Client;

before(async () => {
  t = await startTestServer({ SVC_ROLES: 'api,projector' });
  const admin = await adminSession(t);
  member = (await userSession(t, admin, 'member@example.com')).client;
  memberToken = (await createToken(member)).client;
});
after(async () => t?.stop());

/** Every file of the data directory (databases, their WAL and journal files), as bytes. */
function dataFiles(dir: string): Array<{ path: string; bytes: Buffer }> {
  const out: Array<{ path: string; bytes: Buffer }> = [];
  for (const name of readdirSync(dir)) {
    const full = join(dir, name);
    const st = statSync(full);
    if (st.isDirectory()) out.push(...dataFiles(full));
    else if (st.isFile()) out.push({ path: full, bytes: readFileSync(full) });
  }
  return out;
}

function assertStored(text: string) {
  assert.ok(
    dataFiles(t.dataDir).some((f) => f.bytes.includes(text)),
    `${text} is written somewhere (the scan reads what the stores write)`,
  );
}

function assertNotStored(value: string) {
  const files = dataFiles(t.dataDir);
  assert.ok(
    files.some((f) => /\.(db|sqlite)/.test(f.path)),
    `the data directory holds the databases: ${files.map((f) => f.path).join(', ')}`,
  );
  for (const f of files) assert.ok(!f.bytes.includes(value), `${f.path} holds the plaintext value`);
}

async function createJob(client: Client): Promise<string> {
  const res = await client.post('/api/jobs', {
    name: `job ${Math.random()}`,
    instruction: 'Print the date with `date`',
  });
  assert.equal(res.status, 201, res.text);
  return res.body.id as string;
}

describe('secrets', () => {
  it('creates, lists, changes and deletes secrets without ever answering a value', async () => {
    const value = 'sk-plain-value-7b1f0c2e9d4a';
    const created = await member.post('/api/secrets', { name: 'GITHUB_TOKEN', value });
    assert.equal(created.status, 201, created.text);
    const createdBy = Date.now();
    assert.deepEqual(Object.keys(created.body), ['id']);
    const viaToken = await memberToken.post('/api/secrets', { name: 'db.password-2', value: 'hunter2-hunter2' });
    assert.equal(viaToken.status, 201, 'members may use secrets through a token too');

    const list = await memberToken.get('/api/secrets?sort=-name');
    assert.equal(list.status, 200);
    assert.equal(list.body.total, 2);
    assert.deepEqual(
      list.body.items.map((s: { name: string }) => s.name),
      ['GITHUB_TOKEN', 'db.password-2'].sort().reverse(),
    );
    for (const item of list.body.items)
      assert.deepEqual(Object.keys(item).sort(), ['createdAt', 'id', 'name', 'updatedAt']);
    assert.ok(!list.text.includes(value));
    assert.equal(
      (await member.get('/api/secrets?search=github')).body.total,
      1,
      'search matches names, case-insensitively',
    );
    assert.equal((await member.get('/api/secrets?sort=value')).body.code, 'validation_failed', 'value is no sort key');

    // The change must land in a later millisecond than the creation for updatedAt to show it.
    await waitFor('the clock to pass the creation', () => Date.now() > createdBy, { intervalMs: 1 });
    const newValue = 'sk-second-value-aa01ff93';
    const changed = await member.request('PUT', `/api/secrets/${created.body.id}`, { value: newValue });
    assert.equal(changed.status, 200, changed.text);
    assert.equal(changed.body.name, 'GITHUB_TOKEN');
    assert.ok(changed.body.updatedAt > changed.body.createdAt);
    assert.ok(!('value' in changed.body));
    assert.deepEqual(
      await t.server.services.secrets.valuesFor(defaultWorkspaceId).then((v) => v.sort()),
      ['hunter2-hunter2', newValue].sort(),
    );

    assertStored('GITHUB_TOKEN');
    assertNotStored(value);
    assertNotStored(newValue);
    assertNotStored('hunter2-hunter2');

    assert.equal((await member.delete(`/api/secrets/${created.body.id}`)).status, 204);
    assert.equal((await member.delete(`/api/secrets/${created.body.id}`)).status, 404);
    assert.equal((await member.request('PUT', `/api/secrets/${created.body.id}`, { value: 'x' })).status, 404);
    assert.deepEqual(
      (await member.get('/api/secrets')).body.items.map((s: { name: string }) => s.name),
      ['db.password-2'],
    );
    assert.equal(
      (await member.post('/api/secrets', { name: 'GITHUB_TOKEN', value: 'again' })).status,
      201,
      'a deleted name can be used again',
    );
  });

  it('refuses a name in use, bad names and oversized values', async () => {
    assert.equal((await member.post('/api/secrets', { name: 'DUP', value: 'one' })).status, 201);
    const dup = await member.post('/api/secrets', { name: 'DUP', value: 'two' });
    assert.equal(dup.status, 409);
    assert.equal(dup.body.code, 'conflict');
    assert.match(dup.body.message, /DUP is already in use/);

    for (const name of ['', 'has space', 'x'.repeat(101), 'ünïcode']) {
      const bad = await member.post('/api/secrets', { name, value: 'v' });
      assert.equal(bad.status, 400, name);
      assert.equal(bad.body.code, 'validation_failed');
      assert.equal(bad.body.fields[0].field, 'name');
    }
    assert.equal(
      (await member.post('/api/secrets', { name: 'x'.repeat(100), value: 'v' })).status,
      201,
      '100 characters are allowed',
    );
    const big = await member.post('/api/secrets', { name: 'BIG', value: 'v'.repeat(65_537) });
    assert.equal(big.status, 400);
    assert.equal(big.body.fields[0].field, 'value');
    assert.equal((await member.post('/api/secrets', { name: 'BIG', value: 'v'.repeat(65_536) })).status, 201);
    assert.equal((await member.post('/api/secrets', { name: 'NOVALUE' })).body.fields[0].field, 'value');
  });

  it('takes over a name whose claim no secret stands behind (a crash between the two appends)', async () => {
    const bus = t.server.services.bus;
    const claim = (name: string, now: number) =>
      bus.execute(
        secretNameStreamId(defaultWorkspaceId, name),
        secretNameDecider,
        { type: 'Claim', secretId: `ghost-${name}`, name, now },
        systemContext,
      );
    await claim('STALE', Date.now() - 10 * 60_000);
    assert.equal(
      (await member.post('/api/secrets', { name: 'STALE', value: 'v' })).status,
      201,
      'an old claim of a secret that never appeared is taken over',
    );
    await claim('FRESH', Date.now());
    assert.equal(
      (await member.post('/api/secrets', { name: 'FRESH', value: 'v' })).status,
      409,
      'a fresh claim may be a create in flight',
    );
  });

  it('maps secrets into a job: replace, duplicate variables, unknown and foreign secrets, deleted secrets drop out', async () => {
    const jobId = await createJob(member);
    const a = (await member.post('/api/secrets', { name: 'MAP_A', value: 'value-of-a' })).body.id as string;
    const b = (await member.post('/api/secrets', { name: 'MAP_B', value: 'value-of-b' })).body.id as string;
    assert.deepEqual((await member.get(`/api/jobs/${jobId}/secrets`)).body, []);

    const put = await memberToken.request('PUT', `/api/jobs/${jobId}/secrets`, [
      { secretId: a, envName: 'A_TOKEN' },
      { secretId: b, envName: 'B_TOKEN' },
    ]);
    assert.equal(put.status, 200, put.text);
    assert.deepEqual(put.body, [
      { secretId: a, envName: 'A_TOKEN', secretName: 'MAP_A' },
      { secretId: b, envName: 'B_TOKEN', secretName: 'MAP_B' },
    ]);
    assert.deepEqual((await member.get(`/api/jobs/${jobId}/secrets`)).body, put.body);

    const replaced = await member.request('PUT', `/api/jobs/${jobId}/secrets`, [
      { secretId: b, envName: 'ONLY_B', secretName: 'ignored' },
    ]);
    assert.deepEqual(
      replaced.body,
      [{ secretId: b, envName: 'ONLY_B', secretName: 'MAP_B' }],
      'a PUT replaces the whole set',
    );

    const twice = await member.request('PUT', `/api/jobs/${jobId}/secrets`, [
      { secretId: a, envName: 'SAME' },
      { secretId: b, envName: 'SAME' },
    ]);
    assert.equal(twice.status, 400);
    assert.equal(twice.body.code, 'validation_failed');
    assert.match(twice.body.message, /SAME is mapped twice/);

    const badName = await member.request('PUT', `/api/jobs/${jobId}/secrets`, [{ secretId: a, envName: '1BAD' }]);
    assert.equal(badName.status, 400);
    assert.equal(badName.body.fields[0].field, '[0].envName');

    const foreign = await t.server.services.secrets.create(
      systemContext,
      'another-workspace',
      'FOREIGN',
      'foreign-value',
    );
    const other = await member.request('PUT', `/api/jobs/${jobId}/secrets`, [{ secretId: foreign, envName: 'X' }]);
    assert.equal(other.status, 404, 'a secret of another workspace is not found');
    assert.equal(
      (await member.request('PUT', `/api/jobs/${jobId}/secrets`, [{ secretId: 'no-such-secret', envName: 'X' }]))
        .status,
      404,
    );
    assert.equal((await member.request('PUT', '/api/jobs/no-such-job/secrets', [])).status, 404);
    assert.deepEqual(
      (await member.get(`/api/jobs/${jobId}/secrets`)).body,
      replaced.body,
      'refused PUTs changed nothing',
    );

    await member.request('PUT', `/api/jobs/${jobId}/secrets`, [
      { secretId: a, envName: 'A_TOKEN' },
      { secretId: b, envName: 'B_TOKEN' },
    ]);
    assert.equal((await member.delete(`/api/secrets/${a}`)).status, 204);
    assert.deepEqual((await member.get(`/api/jobs/${jobId}/secrets`)).body, [
      { secretId: b, envName: 'B_TOKEN', secretName: 'MAP_B' },
    ]);
    assert.deepEqual(
      await t.server.services.secrets.envFor(defaultWorkspaceId, jobId),
      { B_TOKEN: 'value-of-b' },
      'the next run no longer gets it',
    );
  });

  it('gives a run its variables, dropping SVC_ and proxy names', async () => {
    const jobId = await createJob(member);
    const id = (await member.post('/api/secrets', { name: 'ENV_TEST', value: 'env-test-value' })).body.id as string;
    const names = [
      'API_KEY',
      'SVC_TOKEN',
      'SVC_BROKER_URL',
      'HTTP_PROXY',
      'https_proxy',
      'NO_PROXY',
      'NODE_USE_ENV_PROXY',
      'ALL_PROXY',
      'all_proxy',
      'SVCX',
    ];
    const put = await member.request(
      'PUT',
      `/api/jobs/${jobId}/secrets`,
      names.map((envName) => ({ secretId: id, envName })),
    );
    assert.equal(put.status, 200, 'reserved names are accepted in the mapping and dropped when a run starts');
    assert.deepEqual(await t.server.services.secrets.envFor(defaultWorkspaceId, jobId), {
      API_KEY: 'env-test-value',
      SVCX: 'env-test-value',
    });
    assert.deepEqual(await t.server.services.secrets.envFor('another-workspace', jobId), {}, 'scoped by workspace');
  });
});

describe('redact', () => {
  it('replaces values of four characters or more, longest first', () => {
    assert.equal(redact('token=abcd1234 and abcd', ['abcd', 'abcd1234']), 'token=[redacted] and [redacted]');
    assert.equal(redact('pin 123 stays', ['123']), 'pin 123 stays', 'shorter values are left alone');
    assert.equal(redact('nothing here', []), 'nothing here');
    assert.equal(redact('a.b+c a.b+c', ['a.b+c']), '[redacted] [redacted]', 'values are literal text, not patterns');
  });

  it('does not match inside a marker it wrote and finds JSON-escaped values', () => {
    assert.equal(redact('secret-value', ['secret-value', 'dact']), '[redacted]');
    const pem = '-----BEGIN KEY-----\nabc"def\n-----END KEY-----';
    const payload = JSON.stringify({ out: `key: ${pem}` });
    assert.ok(!redactor([pem])(payload).includes('abc\\"def'));
    assert.deepEqual(JSON.parse(redactor([pem])(payload)), { out: 'key: [redacted]' });
  });
});
