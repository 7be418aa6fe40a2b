import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { firstValueFrom, take, toArray, filter as rxFilter, type Observable } from 'rxjs';
import { staysFalse, waitFor } from '../wait.js';
import {
  StreamDeletedError,
  WrongExpectedRevisionError,
  type EventMetadata,
  type EventStore,
  type NewEvent,
  type Position,
  type RecordedEvent,
} from '../../store/event-store.js';

const meta = (n = 0): EventMetadata => ({
  workspaceId: 'ws-1',
  actor: { type: 'user', id: 'u-1' },
  requestId: `req-${n}`,
  correlationId: 'corr',
  causationId: null,
  ts: 1_700_000_000_000 + n,
  v: 1,
});
const ev = (type: string, n: number): NewEvent => ({
  type,
  data: { n, nested: { list: [1, 'two', null], flag: true } },
  metadata: meta(n),
});
const unique = (prefix: string) => `${prefix}-${randomUUID()}`;

function collect(source: Observable<RecordedEvent>, count: number, timeoutMs = 5000): Promise<RecordedEvent[]> {
  return Promise.race([
    firstValueFrom(source.pipe(take(count), toArray())),
    new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error(`timed out waiting for ${count} events`)), timeoutMs),
    ),
  ]);
}

/** The one contract every event store adapter passes. `open` gives a store on a shared backend. */
export function eventStoreContract(
  name: string,
  open: () => Promise<EventStore>,
  openSecond?: () => Promise<EventStore>,
): void {
  describe(`event store contract: ${name}`, () => {
    let store: EventStore;
    before(async () => {
      store = await open();
    });
    after(async () => store.close());

    it('appends and reads a stream back with revisions, positions and metadata intact', async () => {
      const s = unique('order');
      const r = await store.append(s, [ev('Placed', 1), ev('Paid', 2)], 'no_stream');
      assert.equal(r.revision, 1);
      const read = await store.readStream(s);
      assert.deepEqual(
        read.map((e) => [e.revision, e.type, e.streamId]),
        [
          [0, 'Placed', s],
          [1, 'Paid', s],
        ],
      );
      assert.deepEqual(read[0]!.data, { n: 1, nested: { list: [1, 'two', null], flag: true } });
      assert.deepEqual(read[1]!.metadata, meta(2));
      assert.equal(read[1]!.position, r.position);
      assert.ok(store.comparePositions(read[0]!.position, read[1]!.position) < 0);
      assert.ok(read[0]!.id && read[0]!.id !== read[1]!.id);
      assert.deepEqual(await store.readStream(unique('missing')), []);
    });

    it('checks expected revisions: any, no_stream, exact; a conflict is one typed error', async () => {
      const s = unique('acct');
      await store.append(s, [ev('Opened', 0)], 'no_stream');
      await assert.rejects(
        store.append(s, [ev('Opened', 0)], 'no_stream'),
        (e: unknown) => e instanceof WrongExpectedRevisionError && e.streamId === s && e.actual === 0,
      );
      await store.append(s, [ev('Deposited', 1)], 0);
      await assert.rejects(
        store.append(s, [ev('Deposited', 2)], 0),
        (e: unknown) => e instanceof WrongExpectedRevisionError && e.actual === 1 && e.expected === 0,
      );
      await assert.rejects(
        store.append(unique('none'), [ev('X', 0)], 3),
        (e: unknown) => e instanceof WrongExpectedRevisionError && e.actual === -1,
      );
      const r = await store.append(s, [ev('Deposited', 3)], 'any');
      assert.equal(r.revision, 2);
      assert.equal((await store.readStream(s)).length, 3, 'refused appends wrote nothing');
    });

    it('lets exactly one of two racing writers win on the same expected revision', async () => {
      for (let round = 0; round < 10; round++) {
        const s = unique('race');
        await store.append(s, [ev('Queued', 0)], 'no_stream');
        const results = await Promise.allSettled([
          store.append(s, [ev('Claimed', 1)], 0),
          store.append(s, [ev('Claimed', 2)], 0),
        ]);
        assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1);
        const rejected = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
        assert.ok(rejected.reason instanceof WrongExpectedRevisionError);
        assert.equal((await store.readStream(s)).length, 2);
      }
    });

    it('lets exactly one of many concurrent appends with the same expected revision win; the others write nothing', async () => {
      const s = unique('crowd');
      await store.append(s, [ev('Queued', 0)], 'no_stream');
      const results = await Promise.allSettled(
        Array.from({ length: 20 }, (_, i) => store.append(s, [ev('Claimed', i + 1), ev('Started', i + 1)], 0)),
      );
      const won = results.filter((r) => r.status === 'fulfilled');
      assert.equal(won.length, 1);
      for (const r of results)
        if (r.status === 'rejected')
          assert.ok(r.reason instanceof WrongExpectedRevisionError && r.reason.actual === 2, String(r.reason));
      const written = await store.readStream(s);
      assert.deepEqual(
        written.map((e) => e.type),
        ['Queued', 'Claimed', 'Started'],
      );
      // The winner's two events are its own, not one of each from different appends.
      assert.equal((written[1]!.data as { n: number }).n, (written[2]!.data as { n: number }).n);
    });

    it('refuses a failing append alone when appends run concurrently', async () => {
      const tag = randomUUID().slice(0, 8);
      const deleted = `closed${tag}-1`;
      await store.deleteStream(deleted);
      const taken = `taken${tag}-1`;
      await store.append(taken, [ev('First', 0)], 'no_stream');
      const fresh = Array.from({ length: 10 }, (_, i) => `fresh${tag}-${i}`);
      const results = await Promise.allSettled([
        ...fresh.slice(0, 5).map((f, i) => store.append(f, [ev('Made', i)], 'no_stream')),
        store.append(deleted, [ev('Again', 0)], 'any'),
        store.append(taken, [ev('Again', 0)], 'no_stream'),
        store.append(taken, [ev('Again', 0)], 7),
        ...fresh.slice(5).map((f, i) => store.append(f, [ev('Made', i + 5)], 'no_stream')),
      ]);
      assert.deepEqual(
        results.map((r) => r.status),
        [...Array(5).fill('fulfilled'), 'rejected', 'rejected', 'rejected', ...Array(5).fill('fulfilled')],
      );
      assert.ok((results[5] as PromiseRejectedResult).reason instanceof StreamDeletedError);
      assert.ok((results[6] as PromiseRejectedResult).reason instanceof WrongExpectedRevisionError);
      assert.ok((results[7] as PromiseRejectedResult).reason instanceof WrongExpectedRevisionError);
      for (const f of fresh) assert.equal((await store.readStream(f)).length, 1, f);
      assert.equal((await store.readStream(taken)).length, 1);
      const positions = results
        .filter((r): r is PromiseFulfilledResult<{ revision: number; position: Position }> => r.status === 'fulfilled')
        .map((r) => r.value.position);
      assert.equal(new Set(positions).size, positions.length, 'every append has a position of its own');
    });

    it('takes a flood of concurrent appends: every one written once, whole, in a total order', async () => {
      const tag = randomUUID().slice(0, 8);
      const n = 1200;
      const results = await Promise.all(
        Array.from({ length: n }, (_, i) =>
          store.append(`flood${tag}-${i}`, [ev('One', i), ev('Two', i), ev('Three', i)], 'no_stream'),
        ),
      );
      assert.ok(results.every((r) => r.revision === 2));
      const log = await store.readAll({ filter: { streamPrefixes: [`flood${tag}`] } });
      assert.equal(log.length, n * 3);
      for (let i = 1; i < log.length; i++)
        assert.ok(store.comparePositions(log[i - 1]!.position, log[i]!.position) < 0);
      // An append's events follow each other in the log: no other append's event comes between them.
      for (let i = 0; i < log.length; i += 3) {
        assert.deepEqual(
          log.slice(i, i + 3).map((e) => [e.streamId, e.type]),
          [
            [log[i]!.streamId, 'One'],
            [log[i]!.streamId, 'Two'],
            [log[i]!.streamId, 'Three'],
          ],
        );
      }
      const byStream = new Map(results.map((r, i) => [`flood${tag}-${i}`, r.position]));
      for (const e of log.filter((x) => x.type === 'Three')) assert.equal(e.position, byStream.get(e.streamId));
    });

    if (openSecond) {
      it('lets exactly one of two connections win the same race', async () => {
        const other = await openSecond();
        try {
          for (let round = 0; round < 10; round++) {
            const s = unique('race2');
            await store.append(s, [ev('Queued', 0)], 'no_stream');
            const results = await Promise.allSettled([
              store.append(s, [ev('Claimed', 1)], 0),
              other.append(s, [ev('Claimed', 2)], 0),
            ]);
            assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1);
          }
        } finally {
          await other.close();
        }
      });
    }

    it('reads a stream from the middle with a limit', async () => {
      const s = unique('mid');
      await store.append(
        s,
        Array.from({ length: 10 }, (_, i) => ev('Tick', i)),
        'no_stream',
      );
      const part = await store.readStream(s, { fromRevision: 4, limit: 3 });
      assert.deepEqual(
        part.map((e) => e.revision),
        [4, 5, 6],
      );
      assert.deepEqual(
        (await store.readStream(s, { fromRevision: 8 })).map((e) => e.revision),
        [8, 9],
      );
      assert.deepEqual(await store.readStream(s, { fromRevision: 10 }), []);
    });

    it('reads all after a position, with stream-prefix and event-type filters', async () => {
      const tag = randomUUID().slice(0, 8);
      const a = `alpha${tag}-1`;
      const b = `beta${tag}-1`;
      const first = await store.append(a, [ev(`A${tag}`, 1)], 'no_stream');
      await store.append(b, [ev(`B${tag}`, 2)], 'no_stream');
      await store.append(a, [ev(`C${tag}`, 3)], 0);
      const after = await store.readAll({ after: first.position });
      const mine = after.filter((e) => e.streamId === a || e.streamId === b);
      assert.deepEqual(
        mine.map((e) => e.type),
        [`B${tag}`, `C${tag}`],
      );
      const byPrefix = await store.readAll({ filter: { streamPrefixes: [`alpha${tag}`] } });
      assert.deepEqual(
        byPrefix.map((e) => e.type),
        [`A${tag}`, `C${tag}`],
      );
      const byType = await store.readAll({ filter: { eventTypes: [`B${tag}`, `C${tag}`] } });
      assert.deepEqual(
        byType.map((e) => e.type),
        [`B${tag}`, `C${tag}`],
      );
      const limited = await store.readAll({ filter: { streamPrefixes: [`alpha${tag}`] }, limit: 1 });
      assert.deepEqual(
        limited.map((e) => e.type),
        [`A${tag}`],
      );
      const head = await store.headPosition();
      assert.ok(head && store.comparePositions(head, first.position) > 0);
    });

    it('filters past many events it leaves out, by prefix and type together; a prefix inside an id is not one', async () => {
      const tag = randomUUID().slice(0, 8);
      const start = await store.headPosition();
      await store.append(`kept${tag}-1`, [ev(`K${tag}`, 1)], 'no_stream');
      // More than a page of the store's own reads, none of them kept.
      await store.append(
        `noise${tag}-1`,
        Array.from({ length: 1200 }, (_, i) => ev(`K${tag}`, i)),
        'no_stream',
      );
      await store.append(`x-kept${tag}-1`, [ev(`K${tag}`, 2)], 'no_stream');
      await store.append(`kept${tag}-2`, [ev(`Other${tag}`, 3), ev(`K${tag}`, 4)], 'no_stream');
      const kept = await store.readAll({
        after: start,
        filter: { streamPrefixes: [`kept${tag}-`, `%${tag}`], eventTypes: [`K${tag}`] },
      });
      assert.deepEqual(
        kept.map((e) => [e.streamId, (e.data as { n: number }).n]),
        [
          [`kept${tag}-1`, 1],
          [`kept${tag}-2`, 4],
        ],
      );
      const first = await store.readAll({ after: start, filter: { streamPrefixes: [`kept${tag}-`] }, limit: 1 });
      assert.deepEqual(
        first.map((e) => e.streamId),
        [`kept${tag}-1`],
      );
      const head = (await store.headPosition())!;
      if (store.countAfter) {
        assert.ok((await store.countAfter(start)) >= 1204, 'at least the events that follow');
        assert.equal(await store.countAfter(head), 0);
      }
    });

    it('reads whole categories in position order past many events of others, as a replay does', async () => {
      const tag = randomUUID().slice(0, 8);
      const start = await store.headPosition();
      // Categories hold no dash: `c1${tag}-` names exactly the streams of one category, and not `c1${tag}x-...`.
      await store.append(`c1${tag}-a`, [ev('One', 1)], 'no_stream');
      await store.append(
        `noise${tag}-1`,
        Array.from({ length: 1200 }, (_, i) => ev('Noise', i)),
        'no_stream',
      );
      await store.append(`c2${tag}-b`, [ev('Two', 2)], 'no_stream');
      await store.append(`c1${tag}x-c`, [ev('Near', 3)], 'no_stream');
      await store.append(`c1${tag}-a`, [ev('One', 4), ev('One', 5)], 0);
      await store.append(`nodash${tag}`, [ev('Bare', 6)], 'no_stream');
      await store.append(
        `c2${tag}-b`,
        Array.from({ length: 700 }, (_, i) => ev('Many', 100 + i)),
        0,
      );
      const filter = { streamPrefixes: [`c1${tag}-`, `c2${tag}-`] };
      const all = await store.readAll({ after: start, filter });
      const ns = all.map((e) => (e.data as { n: number }).n);
      assert.deepEqual(ns, [1, 2, 4, 5, ...Array.from({ length: 700 }, (_, i) => 100 + i)]);
      for (let i = 1; i < all.length; i++)
        assert.ok(store.comparePositions(all[i - 1]!.position, all[i]!.position) < 0);
      // In pages, from the middle of the log: the same events, none twice, none missed.
      const paged: number[] = [];
      let after = start;
      for (;;) {
        const page = await store.readAll({ after, filter, limit: 3 });
        if (page.length === 0) break;
        paged.push(...page.map((e) => (e.data as { n: number }).n));
        after = page[page.length - 1]!.position;
      }
      assert.deepEqual(paged, ns);
      const second = all[1]!;
      assert.deepEqual(
        (await store.readAll({ after: second.position, filter: { streamPrefixes: [`c1${tag}-`] } })).map(
          (e) => (e.data as { n: number }).n,
        ),
        [4, 5],
      );
    });

    it('deletes a stream for good: reads answer nothing, the id stays closed, neighbours keep their positions', async () => {
      const tag = randomUUID().slice(0, 8);
      const gone = `gone${tag}-1`;
      const kept = `kept${tag}-1`;
      const before = await store.append(kept, [ev('Before', 1)], 'no_stream');
      await store.append(gone, [ev('Secret', 2), ev('Secret', 3)], 'no_stream');
      const after = await store.append(kept, [ev('After', 4)], 0);
      await store.deleteStream(gone);
      assert.deepEqual(await store.readStream(gone), []);
      for (const expected of ['any', 'no_stream', 1] as const) {
        await assert.rejects(store.append(gone, [ev('Again', 5)], expected), StreamDeletedError);
      }
      assert.deepEqual(await store.readStream(gone), [], 'a refused append wrote nothing');
      const keptEvents = await store.readStream(kept);
      assert.deepEqual(
        keptEvents.map((e) => [e.type, e.position]),
        [
          ['Before', before.position],
          ['After', after.position],
        ],
      );
      const log = await store.readAll({ filter: { streamPrefixes: [`gone${tag}`, `kept${tag}`] } });
      const types = log.map((e) => e.type);
      // EventStoreDB keeps a tombstoned stream's events in $all until its scavenge (docs/events.md, "Deleting a stream").
      assert.deepEqual(
        types.filter((t) => t !== 'Secret'),
        ['Before', 'After'],
      );
      if (store.deletesFromLogAtOnce) assert.ok(!types.includes('Secret'), 'the global log no longer has them');
      // Deleting twice, or a stream that never existed, is not an error: the id is closed either way.
      await store.deleteStream(gone);
      const never = `never${tag}-1`;
      await store.deleteStream(never);
      await assert.rejects(store.append(never, [ev('First', 6)], 'no_stream'), StreamDeletedError);
    });

    it('subscribes to a stream from the middle: catch-up, then live, no gap, no duplicate', async () => {
      const s = unique('sub');
      await store.append(
        s,
        Array.from({ length: 5 }, (_, i) => ev('Tick', i)),
        'no_stream',
      );
      const got = collect(store.subscribeStream(s, { fromRevision: 2 }), 8);
      await store.append(s, [ev('Tick', 5), ev('Tick', 6)], 4);
      await store.append(s, [ev('Tick', 7)], 6);
      await store.append(s, [ev('Tick', 8), ev('Tick', 9)], 7);
      assert.deepEqual(
        (await got).map((e) => e.revision),
        [2, 3, 4, 5, 6, 7, 8, 9],
      );
    });

    it('delivers appends made while the catch-up runs exactly once, in order', async () => {
      const s = unique('busy');
      await store.append(
        s,
        Array.from({ length: 200 }, (_, i) => ev('Tick', i)),
        'no_stream',
      );
      const got = collect(store.subscribeStream(s, { fromRevision: 0 }), 300, 15_000);
      const writes: Promise<unknown>[] = [];
      for (let i = 200; i < 300; i++) writes.push(store.append(s, [ev('Tick', i)], 'any'));
      await Promise.all(writes);
      const revisions = (await got).map((e) => e.revision);
      assert.deepEqual(
        revisions,
        Array.from({ length: 300 }, (_, i) => i),
      );
    });

    it('subscribes to all with a filter from a position, then follows live', async () => {
      const tag = randomUUID().slice(0, 8);
      const start = await store.append(`gamma${tag}-0`, [ev('G', 0)], 'no_stream');
      await store.append(`delta${tag}-0`, [ev('D', 1)], 'no_stream');
      await store.append(`gamma${tag}-1`, [ev('G', 2)], 'no_stream');
      const got = collect(
        store.subscribeAll({ after: start.position, filter: { streamPrefixes: [`gamma${tag}`] } }),
        3,
      );
      await store.append(`delta${tag}-0`, [ev('D', 3)], 0);
      await store.append(`gamma${tag}-2`, [ev('G', 4)], 'no_stream');
      await store.append(`gamma${tag}-1`, [ev('G', 5)], 0);
      const events = await got;
      assert.deepEqual(
        events.map((e) => (e.data as { n: number }).n),
        [2, 4, 5],
      );
      for (let i = 1; i < events.length; i++)
        assert.ok(store.comparePositions(events[i - 1]!.position, events[i]!.position) < 0);
    });

    it('stops delivering after unsubscribe', async () => {
      const s = unique('unsub');
      const seen: number[] = [];
      const sub = store.subscribeStream(s).subscribe((e) => seen.push(e.revision));
      await store.append(s, [ev('Tick', 0)], 'no_stream');
      await waitFor('the first event to be delivered', () => seen.length >= 1, { intervalMs: 10 });
      sub.unsubscribe();
      await store.append(s, [ev('Tick', 1)], 0);
      // No event marks "nothing more comes" on a closed subscription: 300 ms without a delivery stands in.
      await staysFalse('a delivery after unsubscribe', () => seen.length > 1, 300);
      assert.deepEqual(seen, [0]);
    });

    it('filters subscriptions by event type', async () => {
      const tag = randomUUID().slice(0, 8);
      const start = await store.headPosition();
      const got = collect(
        store.subscribeAll({ after: start, filter: { eventTypes: [`Wanted${tag}`] } }).pipe(rxFilter(() => true)),
        2,
      );
      await store.append(unique('t'), [ev(`Other${tag}`, 0), ev(`Wanted${tag}`, 1)], 'no_stream');
      await store.append(unique('t'), [ev(`Wanted${tag}`, 2)], 'no_stream');
      assert.deepEqual(
        (await got).map((e) => (e.data as { n: number }).n),
        [1, 2],
      );
    });
  });
}
