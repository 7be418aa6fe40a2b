import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { jobStateStreamId, stateLimits } from '../../domain/job-state.js';
import type { CommandContext } from '../../app/commands.js';
import { jobStateCollection, JobStateStore } from '../../app/job-state.js';
import { closeStores, openMemoryStores, type Stores } from '../../store/open.js';

/** The job state store on the real SQLite adapters of both ports. */
const MiB = 1024 * 1024;
const ws = 'ws-state';
const ctx: CommandContext = { workspaceId: ws, actor: { type: 'user', id: 'u1' }, requestId: 'req-1' };
let stores: Stores;
let store: JobStateStore;
let clock = 1_000;

before(() => {
  stores = openMemoryStores();
  store = new JobStateStore(stores.docs, stores.events, () => clock++);
});
after(async () => closeStores(stores));

const newJob = () => `job-${randomUUID()}`;

async function refused(p: Promise<unknown>, field: string, code: string): Promise<void> {
  await assert.rejects(p, (err: { code?: string; fields?: Array<{ field: string; code: string }> }) => {
    assert.equal(err.code, 'validation_failed');
    assert.deepEqual(
      err.fields?.map((f) => [f.field, f.code]),
      [[field, code]],
    );
    return true;
  });
}

describe('job state store', () => {
  it('sets, gets, lists sorted by key and deletes, appending an event with metadata for each write', async () => {
    const job = newJob();
    const set = await store.set(ctx, ws, job, 'zeta', 'last');
    assert.deepEqual(Object.keys(set).sort(), ['key', 'size', 'updatedAt', 'value']);
    assert.deepEqual({ key: set.key, value: set.value, size: set.size }, { key: 'zeta', value: 'last', size: 8 });
    await store.set(ctx, ws, job, 'alpha', 'é');
    await store.set(ctx, ws, job, 'mid', '');
    assert.deepEqual(
      (await store.list(ws, job)).map((e) => [e.key, e.value, e.size]),
      [
        ['alpha', 'é', 7],
        ['mid', '', 3],
        ['zeta', 'last', 8],
      ],
    );
    assert.equal((await store.get(ws, job, 'mid'))?.value, '', 'an empty value is a value');
    assert.equal(await store.get(ws, job, 'nope'), null);
    assert.deepEqual(await store.usage(ws, job), { keys: 3, bytes: 18 });

    const doc = await stores.docs.collection(jobStateCollection).findOne({ _id: `${job}:alpha` });
    assert.deepEqual(
      [doc?.workspaceId, doc?.jobId, doc?.key, doc?.value, doc?.size, doc?.updatedBy],
      [ws, job, 'alpha', 'é', 7, { type: 'user', id: 'u1' }],
    );

    assert.equal(await store.delete(ctx, ws, job, 'mid'), true);
    assert.equal(await store.delete(ctx, ws, job, 'mid'), false, 'a missing key is not deleted twice');
    assert.equal(await store.get(ws, job, 'mid'), null);
    assert.deepEqual(
      (await store.list(ws, job)).map((e) => e.key),
      ['alpha', 'zeta'],
    );
    assert.deepEqual(await store.usage(ws, job), { keys: 2, bytes: 15 });

    const events = await stores.events.readStream(jobStateStreamId(job));
    assert.deepEqual(
      events.map((e) => [e.type, e.data]),
      [
        ['JobStateSet', { key: 'zeta', value: 'last', size: 8, keys: 1, bytes: 8 }],
        ['JobStateSet', { key: 'alpha', value: 'é', size: 7, keys: 2, bytes: 15 }],
        ['JobStateSet', { key: 'mid', value: '', size: 3, keys: 3, bytes: 18 }],
        ['JobStateDeleted', { key: 'mid', keys: 2, bytes: 15 }],
      ],
    );
    const m = events[0]!.metadata;
    assert.deepEqual(
      [m.workspaceId, m.actor, m.requestId, m.correlationId, typeof m.ts],
      [ws, { type: 'user', id: 'u1' }, 'req-1', 'req-1', 'number'],
    );
  });

  it('answers nothing to another workspace', async () => {
    const job = newJob();
    await store.set(ctx, ws, job, 'k', 'v');
    assert.equal(await store.get('ws-other', job, 'k'), null);
    assert.deepEqual(await store.list('ws-other', job), []);
    assert.deepEqual(await store.usage('ws-other', job), { keys: 0, bytes: 0 });
    assert.equal(await store.delete({ ...ctx, workspaceId: 'ws-other' }, 'ws-other', job, 'k'), false);
  });

  it('takes keys of 1 to 200 characters and values of up to 1 MiB in UTF-8', async () => {
    const job = newJob();
    await store.set(ctx, ws, job, 'k'.repeat(200), 'v');
    await store.set(ctx, ws, job, 'é'.repeat(200), 'v');
    await store.set(ctx, ws, job, '😀'.repeat(200), 'v');
    await refused(store.set(ctx, ws, job, 'k'.repeat(201), 'v'), 'key', 'too_large');
    await refused(store.set(ctx, ws, job, '', 'v'), 'key', 'required');
    await store.set(ctx, ws, job, 'big', 'v'.repeat(MiB));
    await store.set(ctx, ws, job, 'wide', 'é'.repeat(MiB / 2));
    await refused(store.set(ctx, ws, job, 'bigger', 'v'.repeat(MiB + 1)), 'value', 'too_large');
    await refused(store.set(ctx, ws, job, 'wider', `${'é'.repeat(MiB / 2)}x`), 'value', 'too_large');
    assert.equal(await store.get(ws, job, 'bigger'), null);
    assert.equal((await store.list(ws, job)).length, 5);
  });

  it('keeps at most 1,000 keys: a new key is refused at the limit, existing keys stay writable', async () => {
    const job = newJob();
    for (let i = 0; i < stateLimits.keys; i++) await store.set(ctx, ws, job, `k${String(i).padStart(4, '0')}`, 'v');
    await refused(store.set(ctx, ws, job, 'one-more', 'v'), 'key', 'too_many_keys');
    await store.set(ctx, ws, job, 'k0000', 'changed');
    assert.equal((await store.get(ws, job, 'k0000'))?.value, 'changed');
    assert.equal((await store.usage(ws, job)).keys, 1000);
    assert.equal(await store.delete(ctx, ws, job, 'k0001'), true);
    await store.set(ctx, ws, job, 'one-more', 'v');
    await refused(store.set(ctx, ws, job, 'two-more', 'v'), 'key', 'too_many_keys');
    assert.equal((await store.list(ws, job)).length, 1000);
  });

  it('keeps keys and values within 16 MiB: a set that grows beyond fails, one that keeps or shrinks succeeds', async () => {
    const job = newJob();
    const value = 'v'.repeat(MiB - 3);
    for (let i = 10; i < 25; i++) await store.set(ctx, ws, job, `b${i}`, value); // 15 entries of exactly 1 MiB, key included
    const room = stateLimits.totalBytes - 15 * MiB;
    await store.set(ctx, ws, job, 'fill', 'x'.repeat(room - 4));
    assert.equal((await store.usage(ws, job)).bytes, stateLimits.totalBytes, 'exactly 16 MiB');
    await refused(store.set(ctx, ws, job, 'z', ''), 'value', 'too_large');
    await refused(store.set(ctx, ws, job, 'fill', 'x'.repeat(room - 3)), 'value', 'too_large');
    await store.set(ctx, ws, job, 'fill', 'y'.repeat(room - 4));
    await store.set(ctx, ws, job, 'b10', 'w'.repeat(MiB - 3));
    await store.set(ctx, ws, job, 'fill', 'short');
    await store.set(ctx, ws, job, 'z', '');
    assert.equal((await store.usage(ws, job)).bytes, 15 * MiB + 9 + 1);
  });

  it('serializes the writes of one job: concurrent sets all land, in stream order, with exact totals', async () => {
    const job = newJob();
    await Promise.all(Array.from({ length: 60 }, (_, i) => store.set(ctx, ws, job, `k${i % 20}`, 'x'.repeat(i))));
    const events = await stores.events.readStream(jobStateStreamId(job));
    assert.equal(events.length, 60);
    assert.deepEqual(
      events.map((e) => e.revision),
      Array.from({ length: 60 }, (_, i) => i),
    );
    const list = await store.list(ws, job);
    assert.equal(list.length, 20);
    assert.deepEqual(await store.usage(ws, job), { keys: 20, bytes: list.reduce((s, e) => s + e.size, 0) });
    for (const e of list) assert.equal(e.value.length, Number(e.key.slice(1)) + 40, 'the last write of each key wins');
  });

  it('serializes writers of two processes through the stream revision: the key limit holds between them', async () => {
    const job = newJob();
    const other = new JobStateStore(stores.docs, stores.events, () => clock++);
    for (let i = 0; i < stateLimits.keys - 10; i++) await store.set(ctx, ws, job, `base${i}`, 'v');
    const results = await Promise.allSettled([
      ...Array.from({ length: 10 }, (_, i) => store.set(ctx, ws, job, `a${i}`, 'v')),
      ...Array.from({ length: 10 }, (_, i) => other.set(ctx, ws, job, `b${i}`, 'v')),
    ]);
    const failures = results.filter((r) => r.status === 'rejected');
    assert.equal(failures.length, 10, 'exactly the keys beyond 1,000 are refused');
    for (const f of failures) assert.equal((f as PromiseRejectedResult).reason.fields[0].code, 'too_many_keys');
    assert.equal((await store.list(ws, job)).length, 1000);
    assert.deepEqual(await other.usage(ws, job), {
      keys: 1000,
      bytes: (await store.list(ws, job)).reduce((s, e) => s + e.size, 0),
    });
    const events = await stores.events.readStream(jobStateStreamId(job));
    assert.equal(events.length, 1000);
  });

  it('applies events another process appended but did not apply (a crash) before deciding the next write', async () => {
    const job = newJob();
    await store.set(ctx, ws, job, 'a', '1');
    const meta = {
      workspaceId: ws,
      actor: { type: 'run' as const, id: 'r1' },
      requestId: null,
      correlationId: null,
      causationId: null,
      ts: 5,
    };
    await stores.events.append(
      jobStateStreamId(job),
      [
        { type: 'JobStateSet', data: { key: 'ghost', value: 'boo', size: 8, keys: 2, bytes: 10 }, metadata: meta },
        { type: 'JobStateSet', data: { key: 'gone', value: 'x', size: 5, keys: 3, bytes: 15 }, metadata: meta },
        { type: 'JobStateDeleted', data: { key: 'gone', keys: 2, bytes: 10 }, metadata: meta },
      ],
      0,
    );
    assert.equal(await store.get(ws, job, 'ghost'), null, 'not applied yet');
    await store.set(ctx, ws, job, 'b', '2');
    assert.deepEqual(
      (await store.list(ws, job)).map((e) => [e.key, e.value]),
      [
        ['a', '1'],
        ['b', '2'],
        ['ghost', 'boo'],
      ],
    );
    assert.deepEqual(await store.usage(ws, job), { keys: 3, bytes: 12 });
    assert.deepEqual((await stores.docs.collection(jobStateCollection).findOne({ _id: `${job}:ghost` }))?.updatedBy, {
      type: 'run',
      id: 'r1',
    });
    assert.equal((await stores.events.readStream(jobStateStreamId(job))).length, 5);
  });
});
