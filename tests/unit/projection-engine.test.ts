import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { ProjectionEngine, readYourWritesMs } from '../../projections/engine.js';
import type { DocOp, Projector } from '../../projections/projector.js';
import type { EventStore } from '../../store/event-store.js';
import { quiet, systemMeta } from '../engine-fixtures.js';
import type { DocumentStore } from '../../store/document-store.js';
import { openSqliteEventStore } from '../../store/sqlite-event-store.js';
import { waitFor } from '../wait.js';
import { openSqliteDocumentStore } from '../../store/sqlite-document-store.js';

const meta = systemMeta;

/**
 * Counts per stream; `total` is set from the event (never incremented) so replays are harmless. With `trace`, each
 * delivery is also pushed to `seen`, which shows gaps and duplicates within one run.
 */
function counter(name: string, version = 1, trace = true): Projector {
  return {
    name,
    version,
    collections: [name],
    indexes: [{ collection: name, keys: [['total', 1]] }],
    project(e): DocOp[] {
      if (e.type !== 'Counted') return [];
      const d = e.data as { n: number };
      const update = trace
        ? { $set: { total: d.n, revision: e.revision }, $push: { seen: d.n } }
        : { $set: { total: d.n, revision: e.revision } };
      return [{ kind: 'update', collection: name, filter: { _id: e.streamId }, update, upsert: true }];
    },
  };
}

let open: Array<{ events: EventStore; docs: DocumentStore; engine: ProjectionEngine }> = [];
afterEach(async () => {
  for (const o of open) {
    await o.engine.stop();
    await o.events.close();
    await o.docs.close();
  }
  open = [];
});

function setup(
  projectors: Projector[],
  events = openSqliteEventStore(':memory:'),
  docs = openSqliteDocumentStore(':memory:'),
) {
  const engine = new ProjectionEngine(events, docs, projectors, quiet);
  const o = { events, docs, engine };
  open.push(o);
  return o;
}

async function count(events: EventStore, stream: string, from: number, to: number) {
  let last = undefined as Awaited<ReturnType<EventStore['append']>> | undefined;
  for (let n = from; n <= to; n++)
    last = await events.append(stream, [{ type: 'Counted', data: { n }, metadata: meta }], 'any');
  return last!.position;
}

describe('projection engine', () => {
  it('catches up on past events, then follows live ones, and waits for a position', async () => {
    const { events, docs, engine } = setup([counter('a')]);
    await count(events, 's1', 1, 50);
    await engine.start();
    const pos = await count(events, 's1', 51, 60);
    assert.equal(await engine.waitFor(pos, 2000), true);
    const doc = await docs.collection('a').findOne({ _id: 's1' });
    assert.equal(doc?.total, 60);
    assert.deepEqual(
      doc?.seen,
      Array.from({ length: 60 }, (_, i) => i + 1),
      'each event once, in order',
    );
  });

  it('keeps one checkpoint per projector and resumes from it after a restart', async () => {
    const events = openSqliteEventStore(':memory:');
    const docs = openSqliteDocumentStore(':memory:');
    const first = new ProjectionEngine(events, docs, [counter('a')], quiet);
    await first.start();
    assert.equal(await first.waitFor(await count(events, 's', 1, 10), 2000), true);
    await first.stop();
    await count(events, 's', 11, 15);
    // A second projector joins later: it starts from zero while the first resumes from its checkpoint.
    const { engine } = setup([counter('a'), counter('b')], events, docs);
    await engine.start();
    assert.equal(await engine.waitFor(await count(events, 's', 16, 16), 2000), true);
    assert.deepEqual(
      (await docs.collection('a').findOne({ _id: 's' }))?.seen,
      Array.from({ length: 16 }, (_, i) => i + 1),
    );
    assert.deepEqual(
      (await docs.collection('b').findOne({ _id: 's' }))?.seen,
      Array.from({ length: 16 }, (_, i) => i + 1),
    );
  });

  it('is idempotent under redelivery of events it already applied', async () => {
    const events = openSqliteEventStore(':memory:');
    const docs = openSqliteDocumentStore(':memory:');
    const first = new ProjectionEngine(events, docs, [counter('a', 1, false)], quiet);
    await first.start();
    assert.equal(await first.waitFor(await count(events, 's', 1, 5), 2000), true);
    await first.stop();
    const before = await docs.collection('a').find({});
    // Forget the checkpoint, as a crash before the checkpoint write would: every event arrives a second time.
    await docs.collection('projection_checkpoints').deleteMany({});
    const { engine } = setup([counter('a', 1, false)], events, docs);
    await engine.start();
    assert.equal(await engine.waitFor(await events.headPosition(), 2000), true);
    assert.deepEqual(await docs.collection('a').find({}), before);
  });

  it('rebuilds one projector without touching the others', async () => {
    const { events, docs, engine } = setup([counter('a'), counter('b')]);
    await engine.start();
    assert.equal(await engine.waitFor(await count(events, 's', 1, 3), 2000), true);
    await docs.collection('a').updateOne({ _id: 's' }, { $set: { total: -1 } });
    await docs.collection('b').updateOne({ _id: 's' }, { $set: { total: -2 } });
    assert.deepEqual(await engine.rebuild(['a']), ['a']);
    assert.equal(await engine.waitFor(await events.headPosition(), 2000), true);
    assert.equal((await docs.collection('a').findOne({ _id: 's' }))?.total, 3, 'a is rebuilt');
    assert.equal((await docs.collection('b').findOne({ _id: 's' }))?.total, -2, 'b is left alone');
    await assert.rejects(engine.rebuild(['nope']), /unknown projector/);
  });

  it('leaves the read models and their checkpoints as they were when a rebuild fails while emptying them', async () => {
    // The second projector's read model cannot be emptied (the store refuses its name): the first one's, emptied
    // before it, comes back with its checkpoint, instead of staying empty behind a checkpoint at the head.
    const broken: Projector = { ...counter('b'), collections: ['Not-A-Name'], indexes: [] };
    const { events, docs, engine } = setup([counter('a'), broken]);
    await engine.start();
    const head = await count(events, 's', 1, 3);
    assert.equal(await engine.waitFor(head, 2000), true);
    await engine.stop();
    const before = await docs.collection('a').find({});
    assert.equal(before.length, 1);
    await assert.rejects(engine.rebuild(), /invalid collection name/);
    assert.deepEqual(await docs.collection('a').find({}), before);
    assert.deepEqual(
      (await engine.storedStatus()).map((s) => [s.name, s.position]),
      [
        ['a', head],
        ['b', head],
      ],
    );
  });

  it('rebuilds a projector whose version changed at start', async () => {
    const events = openSqliteEventStore(':memory:');
    const docs = openSqliteDocumentStore(':memory:');
    const v1 = new ProjectionEngine(events, docs, [counter('a', 1)], quiet);
    await v1.start();
    assert.equal(await v1.waitFor(await count(events, 's', 1, 4), 2000), true);
    await v1.stop();
    await docs.collection('a').updateOne({ _id: 's' }, { $set: { total: 99 } });
    const { engine } = setup([counter('a', 2)], events, docs);
    await engine.start();
    assert.equal(await engine.waitFor(await events.headPosition(), 2000), true);
    assert.equal((await docs.collection('a').findOne({ _id: 's' }))?.total, 4);
  });

  it('offers a projector only the stream categories it names, live and in a replay, and passes the others', async () => {
    const only = (name: string): Projector => ({ ...counter(name), categories: [{ category: 'kept' }] });
    const { events, docs, engine } = setup([only('a')]);
    await engine.start();
    await count(events, 'kept-1', 1, 3);
    // Another category, and an id of none (no dash): neither reaches the projector.
    await count(events, 'other-1', 1, 1200);
    await count(events, 'kept', 1, 2);
    const head = await count(events, 'other-2', 1, 1);
    assert.equal(await engine.waitFor(head, 5000), true);
    assert.deepEqual(
      (await docs.collection('a').find({})).map((d) => [d._id, d.seen]),
      [['kept-1', [1, 2, 3]]],
    );
    await engine.stop();
    assert.deepEqual(
      (await engine.storedStatus()).map((s) => s.position),
      [head],
      'its checkpoint passed the events it is not offered',
    );
    // A replay reads only the kept category; the timeline of what it passed still reaches the head.
    const progress: Array<[number, number | null]> = [];
    const scratch = openSqliteDocumentStore(':memory:');
    const replay = new ProjectionEngine(events, scratch, [only('a')], quiet);
    await replay.replay((p) => progress.push([p.done, p.total]));
    assert.deepEqual(await scratch.collection('a').find({}), await docs.collection('a').find({}));
    assert.deepEqual(
      (await replay.storedStatus()).map((s) => s.position),
      [head],
      'the replay ends at the head, past the last event it read',
    );
    assert.deepEqual(progress, [[Number(head), Number(head)]], 'one page of three events read, the whole log passed');
    await scratch.close();
  });

  it('answers false when a position is not reached in time', async () => {
    const other = openSqliteEventStore(':memory:');
    const { engine } = setup([counter('a')]);
    await engine.start();
    const foreign = await count(other, 'x', 1, 3);
    assert.equal(await engine.waitFor(foreign, 50), false);
    await other.close();
  });

  it('lets timers run while it works through a long backlog', async () => {
    const { events, docs, engine } = setup([counter('a', 1, false)]);
    await count(events, 's', 1, 3000);
    const midway: Array<Promise<{ _id: string; total: number } | null>> = [];
    // The read runs when called (the SQLite store answers synchronously): it shows how far the backlog was then.
    setTimeout(() => {
      midway.push(docs.collection<{ _id: string; total: number }>('a').findOne({ _id: 's' }));
    }, 0);
    await engine.start();
    await engine.catchUp();
    assert.equal(midway.length, 1, 'the timer ran');
    const seen = await midway[0];
    assert.ok((seen?.total ?? 0) < 3000, `the timer waited for the whole backlog (saw ${seen?.total})`);
  });

  it("tells a write's answer that its change was saved when the read models do not reach it in time", async () => {
    // Not started: a process that reads what another projects, while nobody projects (a takeover).
    const { events, docs, engine } = setup([counter('a')]);
    const written = await count(events, 's', 1, 1);
    const t0 = Date.now();
    await assert.rejects(engine.readYourWrites(written), (err: Error & { code?: string }) => {
      assert.equal(err.code, 'projection_unavailable');
      assert.match(err.message, /saved/);
      return true;
    });
    assert.ok(Date.now() - t0 >= readYourWritesMs - 50, `gave up after ${Date.now() - t0} ms`);
    await engine.start();
    await engine.readYourWrites(written);
    assert.equal((await docs.collection('a').findOne({ _id: 's' }))?.total, 1, 'shown once projected');
  });
});

/** Holds one document per stream with `slot` = the event's n, under a unique index: a taken slot fails the write. */
function slotted(name: string): Projector {
  return {
    name,
    version: 1,
    collections: [name],
    indexes: [{ collection: name, keys: [['slot', 1]], unique: true }],
    project(e): DocOp[] {
      if (e.type !== 'Counted') return [];
      return [
        {
          kind: 'update',
          collection: name,
          filter: { _id: e.streamId },
          update: { $set: { slot: (e.data as { n: number }).n } },
          upsert: true,
        },
      ];
    },
  };
}

const until: typeof waitFor = (what, probe, options = { intervalMs: 10 }) => waitFor(what, probe, options);

describe('projection engine failures', () => {
  it('stops a failing projector alone, answers writes it does not show, retries with backoff and catches up', async () => {
    const logged: Array<{ obj: Record<string, unknown>; msg: string }> = [];
    const log = {
      error: (obj: object, msg: string) => logged.push({ obj: obj as Record<string, unknown>, msg }),
      info: () => {},
    };
    const events = openSqliteEventStore(':memory:');
    const docs = openSqliteDocumentStore(':memory:');
    const engine = new ProjectionEngine(events, docs, [counter('a'), slotted('b')], log);
    open.push({ events, docs, engine });
    await engine.start();
    // A real write failure: slot 3 is taken, so b's unique index refuses the third event of stream s.
    await docs.collection('b').updateOne({ _id: 'blocker' }, { $set: { slot: 3 } }, { upsert: true });
    const onS = await count(events, 's', 1, 5);

    await assert.rejects(engine.waitFor(onS, 2000), (err: Error & { code?: string }) => {
      assert.equal(err.code, 'projection_unavailable');
      assert.match(err.message, /\bb read model\b/);
      return true;
    });
    assert.equal((await docs.collection('a').findOne({ _id: 's' }))?.total, 5, 'the healthy projector went on');
    assert.equal(
      (await docs.collection('b').findOne({ _id: 's' }))?.slot,
      2,
      'the failing one stopped before the event it cannot apply',
    );
    // A write b has nothing to do with is answered as usual; one b would show, on any stream, is not.
    assert.equal(
      await engine.waitFor(
        (await events.append('other', [{ type: 'Other', data: {}, metadata: meta }], 'any')).position,
        2000,
      ),
      true,
    );
    await assert.rejects(engine.waitFor(await count(events, 't', 9, 9), 2000), /b read model/);

    const failing = await until('two retries', () => {
      const b = engine.status().find((s) => s.name === 'b')!;
      return b.retries >= 2 ? b : null;
    });
    assert.equal(failing.healthy, false);
    assert.match(failing.lastError ?? '', /UNIQUE/i);
    assert.equal(engine.status().find((s) => s.name === 'a')!.healthy, true);
    const first = logged.find((l) => l.obj.projector === 'b');
    assert.ok(first, 'the failure is logged with the projector name');
    assert.equal(first.obj.eventType, 'Counted');
    assert.equal(first.obj.streamId, 's');

    // A process without the projector role reads the same health from the stored checkpoints.
    const reader = new ProjectionEngine(events, docs, [counter('a'), slotted('b')], quiet);
    const stored = await until('the failure in the stored checkpoints', async () =>
      (await reader.storedStatus()).find((s) => s.name === 'b' && !s.healthy),
    );
    assert.match(stored.lastError ?? '', /UNIQUE/i);
    // And judges read-your-writes the same way from the log: a write b would show is refused, another is not.
    await assert.rejects(reader.waitFor(onS, 2000), /b read model/);
    assert.equal(
      await reader.waitFor(
        (await events.append('other', [{ type: 'Other', data: {}, metadata: meta }], 'any')).position,
        2000,
      ),
      true,
    );

    // The cause goes away: b recovers by itself and replays what it skipped, in order, then follows live events.
    await docs.collection('b').deleteMany({ _id: 'blocker' });
    await until('b to recover', () => engine.status().find((s) => s.name === 'b')!.healthy);
    const b = engine.status().find((s) => s.name === 'b')!;
    assert.deepEqual({ lastError: b.lastError, retries: b.retries }, { lastError: null, retries: 0 });
    assert.equal((await docs.collection('b').findOne({ _id: 's' }))?.slot, 5);
    assert.equal((await docs.collection('b').findOne({ _id: 't' }))?.slot, 9);
    assert.equal(await engine.waitFor(await count(events, 's', 6, 6), 2000), true);
    assert.equal((await docs.collection('b').findOne({ _id: 's' }))?.slot, 6);
    assert.deepEqual(
      (await docs.collection('a').findOne({ _id: 's' }))?.seen,
      [1, 2, 3, 4, 5, 6],
      'the healthy projector saw each event once',
    );
  });

  it('doubles the wait between retries up to a cap', async () => {
    const { events, docs, engine } = setup([slotted('b')]);
    await engine.start();
    await docs.collection('b').updateOne({ _id: 'blocker' }, { $set: { slot: 1 } }, { upsert: true });
    await count(events, 's', 1, 1);
    const started = Date.now();
    await until('three retries', () => engine.status()[0]!.retries >= 3);
    // 100 + 200 + 400 ms of backoff at least; under load it only takes longer.
    assert.ok(Date.now() - started >= 650, `three retries took ${Date.now() - started} ms`);
  });
});

describe('projection engine batches (docs/design.md, "Events and read models")', () => {
  it('projects a burst of concurrent writes together, each shown once its wait is answered', async () => {
    const { events, docs, engine } = setup([counter('a'), counter('b')]);
    await engine.start();
    const written = await Promise.all(
      Array.from({ length: 450 }, (_, i) =>
        events.append(`s${i}`, [{ type: 'Counted', data: { n: i }, metadata: meta }], 'no_stream'),
      ),
    );
    await Promise.all(
      written.map(async (w, i) => {
        assert.equal(await engine.waitFor(w.position, 10_000), true);
        // Answered only once its own write is there to be read.
        assert.deepEqual((await docs.collection('b').findOne({ _id: `s${i}` }))?.seen, [i]);
      }),
    );
    assert.equal(await docs.collection('a').count({}), 450);
  });

  it('fails one projector alone on an event in the middle of a batch; the others apply all of it', async () => {
    const { events, docs, engine } = setup([counter('a'), slotted('b')]);
    await engine.start();
    await docs.collection('b').updateOne({ _id: 'blocker' }, { $set: { slot: 5 } }, { upsert: true });
    const [written, unrelated] = await Promise.all([
      Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          events.append(`s${i}`, [{ type: 'Counted', data: { n: i }, metadata: meta }], 'no_stream'),
        ),
      ),
      events.append('other', [{ type: 'Other', data: {}, metadata: meta }], 'no_stream'),
    ]);
    await assert.rejects(engine.waitFor(written[5]!.position, 5000), /b read model/);
    await assert.rejects(engine.waitFor(written[9]!.position, 5000), /b read model/);
    assert.equal(await engine.waitFor(unrelated.position, 5000), true, 'a write b has nothing to do with is answered');
    assert.equal(await docs.collection('a').count({}), 10);
    assert.equal((await docs.collection('b').findOne({ _id: 's4' }))?.slot, 4, 'b kept what came before');
    assert.equal(await docs.collection('b').findOne({ _id: 's6' }), null, 'b stopped at the event it failed on');
    await docs.collection('b').deleteMany({ _id: 'blocker' });
    await until('b to recover', () => engine.status().find((x) => x.name === 'b')!.healthy);
    assert.equal(await docs.collection('b').count({}), 10);
  });

  it('leaves every projector failing, and writes answered as saved but not shown, when the store refuses a batch', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-engine-batch-'));
    const file = join(dir, 'read.db');
    const { events, docs, engine } = setup(
      [counter('a'), counter('b')],
      openSqliteEventStore(':memory:'),
      openSqliteDocumentStore(file),
    );
    const other = new Database(file);
    try {
      await engine.start();
      const before = await events.append('s', [{ type: 'Counted', data: { n: 1 }, metadata: meta }], 'no_stream');
      assert.equal(await engine.waitFor(before.position, 5000), true);
      // Another process holds the write lock past the store's busy timeout: the batch's transaction cannot begin.
      other.exec('BEGIN IMMEDIATE');
      const written = await Promise.all(
        [2, 3, 4].map((n) => events.append('s', [{ type: 'Counted', data: { n }, metadata: meta }], 'any')),
      );
      await assert.rejects(engine.waitFor(written[2]!.position, 30_000), (err: Error & { code?: string }) => {
        assert.equal(err.code, 'projection_unavailable');
        assert.match(err.message, /\ba, b read models\b/);
        return true;
      });
      assert.deepEqual(
        engine.status().map((x) => [x.name, x.healthy, x.position]),
        [
          ['a', false, before.position],
          ['b', false, before.position],
        ],
      );
      other.exec('ROLLBACK');
      await until('both to recover', () => engine.status().every((x) => x.healthy), { timeoutMs: 60_000 });
      for (const name of ['a', 'b'])
        assert.deepEqual((await docs.collection(name).findOne({ _id: 's' }))?.seen, [1, 2, 3, 4], name);
      assert.equal(await engine.waitFor(written[2]!.position, 5000), true);
    } finally {
      other.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('projection engine stop', () => {
  it('stops with events still queued and leaves the event loop free', async () => {
    const { events, engine } = setup([counter('a', 1, false)]);
    await count(events, 's', 1, 300);
    await engine.start();
    await engine.stop();
    // A loop that kept re-arming itself after stop would starve timers: this one must fire.
    const fired = await Promise.race([
      new Promise((r) => setTimeout(() => r(true), 50)),
      new Promise((r) => setTimeout(() => r(false), 2000).unref()),
    ]);
    assert.equal(fired, true);
    assert.equal(engine.running, false);
  });
});
