import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Subject, type Subscription } from 'rxjs';
import { cutNote, liveDeltasCollection, SharedDeltas, type SharedDeltaOptions } from '../../app/live-deltas.js';
import type { LiveDelta } from '../../app/timeline.js';
import { openSqliteDocumentStore } from '../../store/sqlite-document-store.js';
import { staysFalse, waitFor } from '../wait.js';

/**
 * The relay of live deltas between replicas (docs/design.md, "Live deltas across replicas") on two connections to
 * one real `live.db`, as two processes on one data directory have: what a runner writes reaches a watcher of the
 * other side once and in order, its own watchers without the round trip, and a flood is capped.
 */
const dir = mkdtempSync(join(tmpdir(), 'svc-shared-deltas-'));
const file = join(dir, 'live.db');
const quiet = { warn: () => {}, debug: () => {} };
const options: SharedDeltaOptions = { batchMs: 20, pollMs: 20, keepMs: 60_000, batchChars: 10_000, graceMs: 1000 };
const opened: Array<{ close(): Promise<void> }> = [];
after(async () => {
  for (const o of opened.reverse()) await o.close();
  rmSync(dir, { recursive: true, force: true });
});

function side(clock: () => number = Date.now, with_: SharedDeltaOptions = options) {
  const store = openSqliteDocumentStore(file);
  const local = new Subject<LiveDelta>();
  const deltas = new SharedDeltas(store, local, quiet, with_, clock);
  opened.push(store, deltas);
  return { store, local, deltas };
}

function watch(deltas: SharedDeltas, runId: string): { got: string[]; sub: Subscription } {
  const got: string[] = [];
  return { got, sub: deltas.forRun(runId).subscribe((d) => got.push(d.text)) };
}

describe('shared live deltas', () => {
  const runner = side();
  const api = side();

  it("deliver a runner's deltas to the other side once, in order, and to its own watchers once", async () => {
    const remote = watch(api.deltas, 'run-1');
    const own = watch(runner.deltas, 'run-1');
    const other = watch(api.deltas, 'run-2');
    const sent: string[] = [];
    for (let i = 0; i < 30; i++) {
      const text = `chunk-${i};`;
      sent.push(text);
      runner.local.next({ runId: 'run-1', delta: { type: 'tool_output', callId: 'c', text } });
      if (i % 10 === 9) await waitFor(`batch ${i}`, () => remote.got.length === i + 1);
    }
    assert.deepEqual(remote.got, sent, 'the other side got every delta once, in order');
    assert.deepEqual(own.got, sent, 'the runner side got its own once, not read back');
    await staysFalse(
      'a delta delivered twice',
      () => remote.got.length > sent.length || own.got.length > sent.length,
      300,
    );
    assert.deepEqual(other.got, [], 'another run sees nothing of it');
    for (const w of [remote, own, other]) w.sub.unsubscribe();
  });

  it('show a watcher what is written from a second before it starts watching, not earlier output', async () => {
    // A writer whose batches are stamped 5 s ago: output from before the watcher came.
    const earlier = side(() => Date.now() - 5000);
    earlier.local.next({ runId: 'run-3', delta: { type: 'text', text: 'before' } });
    await waitFor(
      'the early batch of run-3',
      async () => (await api.store.collection(liveDeltasCollection).find({ runId: 'run-3' })).length === 1,
    );
    const late = watch(api.deltas, 'run-3');
    runner.local.next({ runId: 'run-3', delta: { type: 'text', text: 'after' } });
    await waitFor('the later delta', () => late.got.includes('after'));
    // The early batch would come with any poll after the late one: its absence is the property.
    await staysFalse('earlier output shown', () => late.got.includes('before'), 200);
    assert.deepEqual(late.got, ['after']);
    late.sub.unsubscribe();
  });

  it('cap a flood of output: past the batch limit the other side gets one note instead of the rest', async () => {
    const remote = watch(api.deltas, 'run-flood');
    const chunk = 'x'.repeat(3000);
    for (let i = 0; i < 40; i++) runner.local.next({ runId: 'run-flood', delta: { type: 'tool_output', text: chunk } });
    await waitFor('the flood batch', () => remote.got.includes(cutNote));
    const texts = remote.got;
    assert.ok(texts.filter((t) => t === chunk).length <= Math.floor(options.batchChars / 3000));
    assert.equal(texts.filter((t) => t === cutNote).length, 1, 'one note per batch');
    const stored = await api.store
      .collection<{ _id: string; deltas: Array<{ text: string }> }>(liveDeltasCollection)
      .find({ runId: 'run-flood' });
    for (const b of stored)
      assert.ok(b.deltas.reduce((n, d) => n + d.text.length, 0) <= options.batchChars + cutNote.length);
    remote.sub.unsubscribe();
  });

  it("hand a run's last output to its watchers when asked, before the batching and polling times", async () => {
    // A minute of batching and polling: only shareNow and caughtUp can move this output within the test.
    const slow = { ...options, batchMs: 60_000, pollMs: 60_000 };
    const writer = side(Date.now, slow);
    const reader = side(Date.now, slow);
    const remote = watch(reader.deltas, 'run-last');
    await reader.deltas.caughtUp('run-last'); // the watcher's first poll, empty
    writer.local.next({ runId: 'run-last', delta: { type: 'tool_output', text: 'last words' } });
    await reader.deltas.caughtUp('run-last');
    assert.deepEqual(remote.got, [], 'not shared yet: its batch is still gathering');
    await writer.deltas.shareNow();
    await reader.deltas.caughtUp('run-last');
    assert.deepEqual(remote.got, ['last words']);
    await reader.deltas.caughtUp('run-last');
    assert.deepEqual(remote.got, ['last words'], 'once');
    remote.sub.unsubscribe();
    writer.local.next({ runId: 'run-last', delta: { type: 'tool_output', text: 'unwatched' } });
    await writer.deltas.shareNow();
    await reader.deltas.caughtUp('run-last');
    assert.deepEqual(remote.got, ['last words'], 'a watcher gone gets nothing more');
  });

  it('removes batches older than the keep time, whoever wrote them', async () => {
    let now = Date.now() + 10 * 60_000;
    const pruner = side(() => now);
    runner.local.next({ runId: 'run-old', delta: { type: 'text', text: 'old' } });
    await waitFor(
      'the batch',
      async () => (await api.store.collection(liveDeltasCollection).find({ runId: 'run-old' })).length === 1,
    );
    now += 1;
    await (pruner.deltas as unknown as { prune(): Promise<void> }).prune();
    assert.equal(await api.store.collection(liveDeltasCollection).count({}), 0);
  });
});
