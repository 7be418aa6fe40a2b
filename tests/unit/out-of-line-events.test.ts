import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { firstValueFrom, take, toArray } from 'rxjs';
import { BlobIntegrityError } from '../../store/blob-store.js';
import {
  BlobBackedEventStore,
  chooseOutOfLine,
  eventBlobPrefix,
  inlineLimits,
  isOutOfLine,
} from '../../store/blob-store-events.js';
import { FileBlobStore } from '../../store/blob-store-files.js';
import { WrongExpectedRevisionError, type EventMetadata, type NewEvent } from '../../store/event-store.js';
import { openSqliteEventStore } from '../../store/sqlite-event-store.js';

/**
 * Large payloads out of line (docs/design.md, "Large payloads out of line"): the real SQLite log under the real file
 * blob store, read back both through the port (which resolves references) and underneath it (what the log holds).
 */
const dir = mkdtempSync(join(tmpdir(), 'svc-out-of-line-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const meta: EventMetadata = {
  workspaceId: 'ws-1',
  actor: { type: 'run', id: 'r-1' },
  requestId: null,
  correlationId: null,
  causationId: null,
  ts: 1,
};
const ev = (type: string, data: unknown): NewEvent => ({ type, data, metadata: meta });

function world() {
  const log = openSqliteEventStore(':memory:');
  const blobs = new FileBlobStore(join(dir, `w-${Math.random().toString(36).slice(2)}`));
  return { log, blobs, events: new BlobBackedEventStore(log, blobs) };
}

describe('the threshold rule', () => {
  it('moves every event over 64 KiB, then the largest of the rest while the append is over 512 KiB', () => {
    const k = 1024;
    assert.deepEqual([...chooseOutOfLine([10, 64 * k, 64 * k + 1])], [2], '64 KiB itself stays inline');
    // Nine events of 60 KiB: 540 KiB inline, so the largest (the first, on a tie) goes; 480 KiB remain.
    assert.deepEqual([...chooseOutOfLine(Array<number>(9).fill(60 * k))], [0]);
    assert.deepEqual([...chooseOutOfLine([100, 50 * k, 63 * k, ...Array<number>(8).fill(60 * k)])].sort(), [2, 3]);
    assert.equal(chooseOutOfLine(Array<number>(1000).fill(500)).size, 0, 'many small events stay inline');
    assert.deepEqual(inlineLimits, { eventBytes: 64 * k, appendBytes: 512 * k });
  });
});

describe('events over the limit', () => {
  it('keep a reference with its sha256 in the log, and read back whole through every reader', async () => {
    const { log, blobs, events } = world();
    const value = 'v'.repeat(1024 * 1024) + '"\\\u00e9';
    const small = { key: 'small', value: 'x' };
    await events.append('jobstate-j1', [ev('JobStateSet', small), ev('JobStateSet', { key: 'big', value })], 'any');

    const raw = await log.readStream('jobstate-j1');
    assert.deepEqual(raw[0]!.data, small, 'a small payload stays inline');
    assert.ok(isOutOfLine(raw[1]!.data), 'the large one is a reference');
    const ref = (raw[1]!.data as { $blob: { key: string; sha256: string; bytes: number } }).$blob;
    assert.match(ref.sha256, /^[0-9a-f]{64}$/);
    assert.equal(ref.key, `${eventBlobPrefix('jobstate-j1')}${raw[1]!.id}.json`);
    assert.ok(JSON.stringify(raw[1]!.data).length < 300);
    assert.ok((await blobs.get(ref.key))?.toString('utf8').includes('"key":"big"'));

    const read = await events.readStream('jobstate-j1');
    assert.deepEqual(read[1]!.data, { key: 'big', value });
    assert.deepEqual((await events.readAll())[1]!.data, { key: 'big', value });
    const subscribed = await firstValueFrom(events.subscribeAll().pipe(take(2), toArray()));
    assert.deepEqual(subscribed[1]!.data, { key: 'big', value });
    const live = firstValueFrom(events.subscribeStream('jobstate-j1', { fromRevision: 2 }));
    await events.append('jobstate-j1', [ev('JobStateSet', { key: 'later', value })], 1);
    assert.deepEqual((await live).data, { key: 'later', value }, 'live delivery resolves too');
  });

  it('reach a subscriber in log order when small ones follow one being read back', async () => {
    const { events } = world();
    const big = (n: number) => ({ key: `big-${n}`, value: 'b'.repeat(100_000) });
    await events.append('jobstate-j3', [ev('JobStateSet', { key: 's0', value: 'x' })], 'no_stream');
    await events.append('jobstate-j3', [ev('JobStateSet', big(1)), ev('JobStateSet', { key: 's1', value: 'x' })], 0);
    await events.append('jobstate-j3', [ev('JobStateSet', { key: 's2', value: 'x' }), ev('JobStateSet', big(2))], 2);
    const keys = ['s0', 'big-1', 's1', 's2', 'big-2', 's3'];
    const all = firstValueFrom(events.subscribeAll().pipe(take(keys.length), toArray()));
    const stream = firstValueFrom(events.subscribeStream('jobstate-j3').pipe(take(keys.length), toArray()));
    await events.append('jobstate-j3', [ev('JobStateSet', { key: 's3', value: 'x' })], 4);
    for (const got of [await all, await stream]) {
      assert.deepEqual(
        got.map((e) => (e.data as { key: string }).key),
        keys,
      );
      assert.deepEqual(got[4]!.data, big(2), 'read back whole');
    }
  });

  it('read as they were written when they predate the blob store', async () => {
    const { log, events } = world();
    // Written straight to the log, as every event was before the port: up to 1 MiB inline.
    const old = { key: 'old', value: 'o'.repeat(1024 * 1024) };
    await log.append('jobstate-j2', [ev('JobStateSet', old)], 'no_stream');
    assert.deepEqual((await events.readStream('jobstate-j2'))[0]!.data, old);
  });

  it('refuse a payload whose bytes changed or vanished while its stream stands', async () => {
    const { log, blobs, events } = world();
    await events.append('playbook-p1', [ev('PlaybookVersionSaved', { content: 'c'.repeat(100_000) })], 'no_stream');
    const ref = ((await log.readStream('playbook-p1'))[0]!.data as { $blob: { key: string } }).$blob;
    writeFileSync(join((blobs as unknown as { root: string }).root, ref.key), JSON.stringify({ content: 'forged' }));
    await assert.rejects(events.readStream('playbook-p1'), BlobIntegrityError);
    await blobs.delete(ref.key);
    await assert.rejects(events.readAll(), /missing/);
  });

  it('leave no blob behind when the append is refused', async () => {
    const { blobs, events } = world();
    await events.append('run-r1', [ev('RunQueued', { n: 1 })], 'no_stream');
    await assert.rejects(
      events.append('run-r1', [ev('RunFinished', { output: 'o'.repeat(200_000) })], 'no_stream'),
      WrongExpectedRevisionError,
    );
    assert.deepEqual(await blobs.list(eventBlobPrefix('run-r1')), []);
  });

  it('go with their stream when it is deleted, and neighbours keep theirs', async () => {
    const { blobs, events } = world();
    const big = { output: 'o'.repeat(200_000) };
    await events.append('run-gone', [ev('RunFinished', big)], 'no_stream');
    await events.append('run-kept', [ev('RunFinished', big)], 'no_stream');
    await events.deleteStream('run-gone');
    assert.deepEqual(await blobs.list(eventBlobPrefix('run-gone')), []);
    assert.equal((await blobs.list(eventBlobPrefix('run-kept'))).length, 1);
    assert.deepEqual(
      (await events.readAll()).map((e) => [e.streamId, e.data]),
      [['run-kept', big]],
    );
  });
});
