import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { jobsCollection, type JobDoc } from '../../projections/jobs.js';
import {
  adminSession,
  Client,
  createToken,
  startTestServer,
  userSession,
  type Answer,
  type TestServer,
} from './harness.js';

/** A job's key/value state through the REST API with the limits of docs/sandbox.md (`state get/set/list`). */
let t: TestServer;
let admin: Client;
let member: Client;
let memberToken: Client;

const MiB = 1024 * 1024;

before(async () => {
  t = await startTestServer({ SVC_ROLES: 'api,projector' });
  admin = await adminSession(t);
  member = (await userSession(t, admin, 'state-member@example.com')).client;
  memberToken = (await createToken(member)).client;
});
after(async () => t?.stop());

async function job(client: Client = admin): Promise<string> {
  const res = await client.post<{ id: string }>('/api/jobs', {
    name: `state job ${Math.random()}`,
    instruction: 'Keep state',
  });
  assert.equal(res.status, 201, res.text);
  return res.body.id;
}

const at = (jobId: string, key: string) => `/api/jobs/${jobId}/state/${encodeURIComponent(key)}`;
const put = (client: Client, jobId: string, key: string, value: unknown) =>
  client.request('PUT', at(jobId, key), { value });

/** Writes straight into the job's store, for filling a job up to a limit quickly. */
async function seed(jobId: string, entries: Array<[string, string]>): Promise<void> {
  const { jobState, stores } = t.server.services;
  const doc = await stores.docs.collection<JobDoc>(jobsCollection).findOne({ _id: jobId });
  const ctx = { workspaceId: doc!.workspaceId, actor: { type: 'system' as const, id: null }, requestId: null };
  for (const [k, v] of entries) await jobState.set(ctx, doc!.workspaceId, jobId, k, v);
}

function assertInvalid(res: Answer<any>, field: string, code?: string): void {
  assert.equal(res.status, 400, res.text);
  assert.equal(res.body.code, 'validation_failed');
  const f = (res.body.fields as Array<{ field: string; code: string }>).find((x) => x.field === field);
  assert.ok(f, `a field error names ${field}: ${res.text}`);
  if (code) assert.equal(f.code, code, res.text);
}

describe('job state routes', () => {
  it('sets, lists sorted by key, gets and replaces values', async () => {
    const id = await job();
    assert.deepEqual((await admin.get(`/api/jobs/${id}/state`)).body, { items: [] });
    const before = Date.now();
    const set = await put(admin, id, 'zeta', 'é');
    assert.equal(set.status, 200, set.text);
    assert.deepEqual(Object.keys(set.body).sort(), ['key', 'size', 'updatedAt', 'value']);
    assert.equal(set.body.key, 'zeta');
    assert.equal(set.body.value, 'é');
    assert.equal(set.body.size, 4 + 2, 'bytes of key and value in UTF-8');
    assert.ok(set.body.updatedAt >= before && set.body.updatedAt <= Date.now());
    for (const [k, v] of [
      ['alpha', '1'],
      ['Beta', ''],
      ['a/b c?', 'slashes'],
      ['10', 'n'],
      ['9', 'n'],
    ])
      assert.equal((await put(admin, id, k!, v)).status, 200, k);

    const list = await memberToken.get(`/api/jobs/${id}/state`);
    assert.equal(list.status, 200, list.text);
    const keys = list.body.items.map((e: { key: string }) => e.key);
    assert.deepEqual(keys, ['10', '9', 'Beta', 'a/b c?', 'alpha', 'zeta'], 'sorted by key');
    assert.deepEqual(
      list.body.items.find((e: { key: string }) => e.key === 'Beta'),
      { ...list.body.items.find((e: { key: string }) => e.key === 'Beta'), value: '', size: 4 },
    );

    const got = await member.get(at(id, 'a/b c?'));
    assert.equal(got.status, 200, got.text);
    assert.equal(got.body.value, 'slashes', 'an encoded key is one path segment');
    assert.equal((await put(memberToken, id, 'alpha', 'two')).body.value, 'two');
    assert.equal((await admin.get(at(id, 'alpha'))).body.value, 'two');
    assert.equal((await admin.get(`/api/jobs/${id}/state`)).body.items.length, 6, 'replacing keeps one key');
  });

  it('answers 404 for a missing key and deletes with 204, then 404', async () => {
    const id = await job();
    const missing = await admin.get(at(id, 'nope'));
    assert.equal(missing.status, 404);
    assert.equal(missing.body.code, 'not_found');
    await put(admin, id, 'gone', 'soon');
    const removed = await member.delete(at(id, 'gone'));
    assert.equal(removed.status, 204);
    assert.equal(removed.text, '');
    assert.equal((await admin.get(at(id, 'gone'))).status, 404);
    assert.equal((await admin.delete(at(id, 'gone'))).status, 404);
    assert.equal((await admin.delete(at(id, 'never'))).body.code, 'not_found');
    assert.deepEqual((await admin.get(`/api/jobs/${id}/state`)).body, { items: [] });
    assert.equal((await put(admin, id, 'gone', 'back')).status, 200, 'a deleted key can be set again');
    assert.equal((await admin.get(at(id, 'gone'))).body.value, 'back');
  });

  it('checks the body: value required, a string, nothing else', async () => {
    const id = await job();
    assertInvalid(await admin.request('PUT', at(id, 'k'), {}), 'value', 'required');
    assertInvalid(await put(admin, id, 'k', 5), 'value', 'invalid_type');
    assertInvalid(await admin.request('PUT', at(id, 'k'), { value: 'v', extra: 1 }), 'extra', 'unknown_field');
    const broken = await admin.request('PUT', at(id, 'k'), '{"value":');
    assert.equal(broken.status, 400);
    assert.equal(broken.body.code, 'invalid_request_body');
    assert.equal((await admin.get(at(id, 'k'))).status, 404);
  });

  it('limits keys to 200 characters and values to 1 MiB, naming the field', async () => {
    const id = await job();
    assert.equal((await put(admin, id, 'k'.repeat(200), 'v')).status, 200);
    assert.equal((await put(admin, id, 'é'.repeat(200), 'v')).status, 200, 'characters, not bytes');
    const wide = '\u{1F600}'.repeat(200); // 4 bytes each, 12 characters each once percent-encoded
    assert.equal((await put(admin, id, wide, 'v')).status, 200, '200 characters outside the BMP');
    assert.equal((await admin.get(at(id, wide))).body.key, wide);
    assertInvalid(await put(admin, id, 'k'.repeat(201), 'v'), 'key');
    assertInvalid(await put(admin, id, `${wide}k`, 'v'), 'key');
    assertInvalid(await admin.get(at(id, 'k'.repeat(201))), 'key');
    assertInvalid(await admin.delete(at(id, 'k'.repeat(201))), 'key');

    const full = await put(admin, id, 'big', 'v'.repeat(MiB));
    assert.equal(full.status, 200, 'exactly 1 MiB');
    assert.equal(full.body.size, 3 + MiB);
    assertInvalid(await put(admin, id, 'bigger', 'v'.repeat(MiB + 1)), 'value', 'too_large');
    assertInvalid(await put(admin, id, 'wide', 'é'.repeat(MiB / 2) + 'x'), 'value', 'too_large');
    assert.equal(
      (await put(admin, id, 'escaped', '\u0001'.repeat(MiB))).status,
      200,
      'a 1 MiB value that takes 6 MiB as JSON text',
    );
    assert.equal((await admin.get(at(id, 'bigger'))).status, 404);
    assert.equal((await admin.get(at(id, 'big'))).body.value.length, MiB);
  });

  it('keeps at most 1,000 keys: a new key is refused, existing keys stay writable', async () => {
    const id = await job();
    await seed(
      id,
      Array.from({ length: 999 }, (_, i) => [`k${i}`, 'v'] as [string, string]),
    );
    assert.equal((await put(admin, id, 'last', 'v')).status, 200, 'the 1,000th key');
    const refused = await put(admin, id, 'one-more', 'v');
    assertInvalid(refused, 'key', 'too_many_keys');
    assert.equal((await put(admin, id, 'k0', 'changed')).status, 200);
    assert.equal((await admin.get(at(id, 'k0'))).body.value, 'changed');
    assert.equal((await admin.get(`/api/jobs/${id}/state`)).body.items.length, 1000);
    assert.equal((await admin.delete(at(id, 'k1'))).status, 204);
    assert.equal((await put(admin, id, 'one-more', 'v')).status, 200, 'a freed slot takes a new key');
  });

  it('keeps at most 16 MiB of keys and values: growing beyond fails, keeping or shrinking succeeds', async () => {
    const id = await job();
    await seed(
      id,
      Array.from({ length: 15 }, (_, i) => [`b${String(i).padStart(2, '0')}`, 'v'.repeat(MiB)] as [string, string]),
    );
    const room = 16 * MiB - 15 * (3 + MiB);
    assert.equal((await put(admin, id, 'fill', 'x'.repeat(room - 4))).status, 200, 'exactly 16 MiB');
    assertInvalid(await put(admin, id, 'z', ''), 'value', 'too_large');
    assertInvalid(await put(admin, id, 'fill', 'x'.repeat(room - 3)), 'value', 'too_large');
    assert.equal((await put(admin, id, 'fill', 'y'.repeat(room - 4))).status, 200, 'same size');
    assert.equal((await put(admin, id, 'fill', 'short')).status, 200, 'smaller');
    assert.equal((await put(admin, id, 'z', '')).status, 200);
  });

  it('answers 404 for an unknown or archived job', async () => {
    const id = await job();
    await put(admin, id, 'k', 'v');
    for (const jobId of ['no-such-job', id]) {
      if (jobId === id) assert.equal((await admin.delete(`/api/jobs/${id}`)).status, 204);
      for (const res of [
        await admin.get(`/api/jobs/${jobId}/state`),
        await admin.get(at(jobId, 'k')),
        await put(admin, jobId, 'k', 'v2'),
        await admin.delete(at(jobId, 'k')),
      ]) {
        assert.equal(res.status, 404, `${jobId}: ${res.text}`);
        assert.equal(res.body.code, 'not_found');
        assert.match(res.body.message, /Job/);
      }
    }
  });

  it('needs a credential', async () => {
    const id = await job();
    const anonymous = new Client(t.url);
    assert.equal((await anonymous.get(`/api/jobs/${id}/state`)).status, 401);
    assert.equal((await put(anonymous, id, 'k', 'v')).status, 401);
  });
});
