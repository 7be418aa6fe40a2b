import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Doc, DocumentStore, DocValue, Filter, Update } from '../../store/document-store.js';
import { openSqliteDocumentStore } from '../../store/sqlite-document-store.js';
import { applyUpdate, applyUpdateShared } from '../../store/update-ops.js';
import { WriteBackDocuments } from '../../store/write-back-documents.js';

/**
 * The write-back cache of a replay page (docs/design.md, "Replay") against the store it writes to: the same
 * operations, in the same order, must give the same answers, and once written back the same stored documents,
 * byte for byte (field order included).
 */
function random(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1103515245 + 12345) % 2147483648;
    return s / 2147483648;
  };
}

type Step = { name: string; run: (docs: DocumentStore) => Promise<unknown> };

function steps(rand: () => number, n: number): Step[] {
  const pick = <T>(xs: T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const id = () => `d${Math.floor(rand() * 12)}`;
  const group = () => pick(['g1', 'g2', 'g3']);
  const value = (): DocValue =>
    pick<() => DocValue>([
      () => Math.floor(rand() * 100),
      () => pick(['x', 'y', 'z']),
      () => null,
      () => rand() < 0.5,
      () => ({ a: Math.floor(rand() * 5), b: [1, 'two'] }),
    ])();
  const update = (): Update =>
    pick<() => Update>([
      () => ({ $set: { [pick(['n', 'tag', 'obj', 'nested.x', 'late'])]: value(), group: group() } }),
      () => ({ $unset: { [pick(['tag', 'obj', 'nested.x', 'late'])]: 1 } }),
      () => ({ $inc: { count: Math.floor(rand() * 3) + 1 } }),
      () => ({ $push: { list: value() } }),
      () => ({ $set: { n: Math.floor(rand() * 100) }, $setOnInsert: { createdBy: 'upsert' } }),
    ])();
  const out: Step[] = [];
  for (let i = 0; i < n; i++) {
    const kind = rand();
    const c = pick(['one', 'two']);
    if (kind < 0.3) {
      const [f, u, upsert] = [{ _id: id() }, update(), rand() < 0.7];
      out.push({
        name: `updateOne ${JSON.stringify([c, f, u, upsert])}`,
        run: (d) => d.collection(c).updateOne(f, u, { upsert }),
      });
    } else if (kind < 0.4) {
      // A replay's write by `_id`: made at once by the cache when it can (`applyHeld`), through the collection else.
      const [f, u, upsert, del] = [{ _id: id() }, update(), rand() < 0.7, rand() < 0.2];
      out.push({
        name: `held ${del ? 'delete' : 'update'} ${JSON.stringify([c, f, u, upsert])}`,
        run: async (d) => {
          if (d instanceof WriteBackDocuments && d.applyHeld(c, f._id, del ? null : u, upsert)) return;
          if (del) await d.collection(c).deleteMany(f);
          else await d.collection(c).updateOne(f, u, { upsert });
        },
      });
    } else if (kind < 0.5) {
      const f = { _id: id() };
      out.push({ name: `findOne ${c} ${f._id}`, run: (d) => d.collection(c).findOne(f) });
    } else if (kind < 0.58) {
      const f: Filter = { _id: { $in: [id(), id(), id()] } };
      out.push({ name: `find $in ${c} ${JSON.stringify(f)}`, run: (d) => d.collection(c).find(f) });
    } else if (kind < 0.66) {
      const f: Filter = { group: group() };
      out.push({
        name: `find sorted ${c} ${JSON.stringify(f)}`,
        run: (d) => d.collection(c).find(f, { sort: [['n', -1]], limit: 3 }),
      });
    } else if (kind < 0.72) {
      const f: Filter = { n: { $gte: Math.floor(rand() * 100) } };
      out.push({ name: `count ${c} ${JSON.stringify(f)}`, run: (d) => d.collection(c).count(f) });
    } else if (kind < 0.8) {
      const f = { _id: id() };
      out.push({ name: `delete ${c} ${f._id}`, run: (d) => d.collection(c).deleteMany(f) });
    } else if (kind < 0.84) {
      const f: Filter = { group: group() };
      out.push({ name: `delete many ${c} ${JSON.stringify(f)}`, run: (d) => d.collection(c).deleteMany(f) });
    } else if (kind < 0.9) {
      const [f, u] = [{ group: group() }, { $set: { tag: pick(['x', 'y']) } }];
      out.push({
        name: `updateMany ${c} ${JSON.stringify([f, u])}`,
        run: async (d) => (await d.collection(c).updateMany(f, u)).matched,
      });
    } else if (kind < 0.95) {
      const doc = { _id: `i${i}`, n: Math.floor(rand() * 100), group: group() };
      out.push({
        name: `insertOne ${c} ${doc._id}`,
        run: (d) => d.collection(c).insertOne(doc),
      });
    } else {
      // A page's end: written back, then a few documents kept for the next page (none, some or all of them).
      const keep = [0, 2, 5, 1000][Math.floor(rand() * 4)]!;
      out.push({
        name: 'flush',
        run: async (d) => {
          if (!(d instanceof WriteBackDocuments)) return undefined;
          await d.flush();
          d.settle(keep);
        },
      });
    }
  }
  return out;
}

/** Every stored body of a collection, in id order, as the store's own JSON text would order its fields. */
async function stored(docs: DocumentStore, name: string): Promise<string> {
  return JSON.stringify(await docs.collection(name).find({}, { sort: [['_id', 1]] }));
}

describe('the write-back cache of a replay page', () => {
  for (const [seed, fromEmpty] of [
    [1, false],
    [7, false],
    [42, true],
    [1234, true],
    [99, true],
  ] as const) {
    const how = fromEmpty ? ', knowing the ids it wrote into empty collections' : '';
    it(`answers as the store does and leaves the same documents (seed ${seed}${how})`, async () => {
      const plain = openSqliteDocumentStore(':memory:');
      const base = openSqliteDocumentStore(':memory:');
      const cached = new WriteBackDocuments(base, new Set(['one', 'two']));
      if (fromEmpty) await cached.trackFromEmpty(['one', 'two']);
      for (const s of [plain, base])
        await s.collection('one').createIndex([
          ['group', 1],
          ['n', 1],
        ]);
      const list = steps(random(seed), 400);
      let held = 0;
      let madeAtOnce = 0;
      const applyHeld = cached.applyHeld.bind(cached);
      cached.applyHeld = (...args) => {
        const made = applyHeld(...args);
        if (made) madeAtOnce++;
        return made;
      };
      for (const [i, step] of list.entries()) {
        const expected = await step.run(plain).then(
          (v) => ({ ok: v === undefined ? null : JSON.stringify(v) }),
          (e: Error) => ({ error: e.name }),
        );
        const actual = await step.run(cached).then(
          (v) => ({ ok: v === undefined ? null : JSON.stringify(v) }),
          (e: Error) => ({ error: e.name }),
        );
        if (step.name.startsWith('updateOne')) {
          // The cache counts every matched update as a modification; the store skips a write that changes nothing.
          const norm = (r: { ok?: string | null; error?: string }) => (r.ok ? { ...JSON.parse(r.ok), modified: 0 } : r);
          assert.deepEqual(norm(actual), norm(expected), `step ${i}: ${step.name}`);
        } else assert.deepEqual(actual, expected, `step ${i}: ${step.name}`);
        if (step.name === 'flush') held++;
      }
      await cached.flush();
      for (const c of ['one', 'two']) assert.equal(await stored(base, c), await stored(plain, c), `collection ${c}`);
      assert.ok(held > 5, 'the sequence wrote back several times on the way');
      assert.ok(madeAtOnce > 5, 'writes were made at once by the cache');
      await plain.close();
      await base.close();
    });
  }

  it('forgets what it held when discarded, as after a rolled-back page', async () => {
    const base = openSqliteDocumentStore(':memory:');
    await base.collection('one').insertOne({ _id: 'a', n: 1 });
    const cached = new WriteBackDocuments(base, new Set(['one']));
    await cached.collection('one').updateOne({ _id: 'a' }, { $set: { n: 2 } });
    assert.equal((await cached.collection('one').findOne({ _id: 'a' }))?.n, 2);
    assert.equal((await base.collection('one').findOne({ _id: 'a' }))?.n, 1, 'nothing written before the flush');
    cached.discard();
    await cached.flush();
    assert.equal((await cached.collection('one').findOne({ _id: 'a' }))?.n, 1);
    assert.equal((await base.collection('one').findOne({ _id: 'a' }))?.n, 1);
    await base.close();
  });

  it('keeps the documents written or read last from one committed page to the next, and no more', async () => {
    const base = openSqliteDocumentStore(':memory:');
    const cached = new WriteBackDocuments(base, new Set(['one']));
    const one = cached.collection('one');
    for (const id of ['a', 'b', 'c', 'd']) await one.insertOne({ _id: id, n: 1 });
    await one.updateOne({ _id: 'a' }, { $set: { n: 2 } }); // written last: kept before b, c, d
    assert.throws(() => cached.settle(2), /not written back/, 'settling before the write-back would lose changes');
    await cached.flush();
    cached.settle(2);
    // Written behind the cache's back, which a replay never does: only this shows which documents it held.
    for (const id of ['a', 'b', 'c', 'd']) await base.collection('one').updateOne({ _id: id }, { $set: { n: 9 } });
    const n = async (id: string) => (await one.findOne({ _id: id }))?.n;
    assert.deepEqual(
      [await n('a'), await n('d'), await n('b'), await n('c')],
      [2, 1, 9, 9],
      'a and d (the last two written) were held, b and c read again',
    );
    cached.discard();
    assert.equal(await n('a'), 9, 'a rolled back page forgets what earlier pages left too');
    await base.close();
  });

  it('asks the store for no id it did not write into a collection that was empty, across pages and rollbacks', async () => {
    const base = openSqliteDocumentStore(':memory:');
    await base.collection('full').insertOne({ _id: 'old', n: 0 });
    const cached = new WriteBackDocuments(base, new Set(['empty', 'full']));
    await cached.trackFromEmpty(['empty', 'full']);
    await cached.collection('empty').updateOne({ _id: 'a' }, { $set: { n: 1 } }, { upsert: true });
    await cached.collection('empty').insertOne({ _id: 'b', n: 2 });
    await cached.flush();
    cached.discard();
    await cached.collection('empty').updateOne({ _id: 'c' }, { $set: { n: 3 } }, { upsert: true });
    cached.discard(); // a rolled back page: c was never stored
    // Written behind the cache's back, which a replay never does: only this shows which ids it looks up.
    await base.collection('empty').insertOne({ _id: 'unseen', n: 9 });
    await base.collection('full').insertOne({ _id: 'later', n: 9 });
    const one = (c: string, id: string) => cached.collection(c).findOne({ _id: id });
    assert.equal((await one('empty', 'a'))?.n, 1, 'an id written on an earlier page is read back');
    assert.equal((await one('empty', 'b'))?.n, 2);
    assert.equal(await one('empty', 'c'), null, 'one of a rolled back page is asked of the store, which lacks it');
    assert.equal(await one('empty', 'unseen'), null, 'an id never written is not looked up');
    assert.deepEqual(
      (await cached.collection('empty').find({ _id: { $in: ['a', 'unseen'] } })).map((d) => d._id),
      ['a'],
    );
    assert.equal((await one('full', 'later'))?.n, 9, 'a collection that was not empty is asked as ever');
    // An upsert the store makes itself may insert an id the cache never saw: from then on every id is asked.
    await cached.collection('empty').updateMany({ n: 7 }, { $set: { n: 8 } }, { upsert: true });
    assert.equal((await one('empty', 'unseen'))?.n, 9);
    await base.close();
  });

  it('copies updated values as the JSON round trip of the store does, without changing the document it started from', () => {
    const odd: unknown[] = [
      -0,
      NaN,
      Infinity,
      [1, undefined, () => 1, NaN, [-0]],
      { a: undefined, b: { c: NaN, d: [undefined] }, '2': 1, '1': 2, at: new Date(0) },
      new Date(5),
      { toJSON: () => 'j' },
      // eslint-disable-next-line no-sparse-arrays
      [, 3],
    ];
    const start = { _id: 'x', keep: { deep: [1, 2] }, v: 'old' };
    const before = JSON.stringify(start);
    for (const v of odd) {
      for (const update of [{ $set: { v } }, { $push: { list: v } }, { $set: { 'keep.v': v } }] as Update[]) {
        const viaJson = applyUpdate(start, update, false);
        const shared = applyUpdateShared(start, update, false);
        assert.deepEqual(shared, viaJson, `${JSON.stringify(update)}`);
        assert.equal(JSON.stringify(shared), JSON.stringify(viaJson));
      }
    }
    assert.equal(JSON.stringify(start), before, 'the held document is never changed in place');
  });

  it('sets many fields at once, new and old, as the JSON round trip of the store does, field order included', () => {
    const rand = random(11);
    const odd: Array<DocValue | undefined> = [undefined, -0, NaN, 7, 'x', null, true, { a: [1, { b: -0 }] }, [NaN]];
    // A document past the sixteen fields where V8's layout changes, as a run's or a job's is.
    const wide: Doc = { _id: 'w' };
    for (let i = 0; i < 40; i++) wide[`f${i}`] = i % 3 === 0 ? { n: i } : i;
    const before = JSON.stringify(wide);
    for (let round = 0; round < 300; round++) {
      const $set: Record<string, DocValue> = {};
      const fields = 1 + Math.floor(rand() * 30);
      for (let i = 0; i < fields; i++) {
        const value = odd[Math.floor(rand() * odd.length)] as DocValue;
        // Paths under fields of their own: an undefined top-level field and a path under it in one update are
        // ordered differently by the two (the round trip keeps the field's place, the cache adds it anew).
        if (rand() < 0.1) $set[`obj${Math.floor(rand() * 5)}.inner`] = value;
        else $set[rand() < 0.5 ? `f${Math.floor(rand() * 40)}` : `new${Math.floor(rand() * 30)}`] = value;
      }
      const inserting = rand() < 0.3;
      const update: Update = inserting ? { $set, $setOnInsert: { made: 1, f1: 'insert' } } : { $set };
      for (const start of [wide, { _id: 'new' }]) {
        // A path through a field that is not an object fails both ways, with the same error.
        const outcome = (apply: typeof applyUpdate) => {
          try {
            return JSON.stringify(apply(start, update, inserting));
          } catch (err) {
            return `error: ${(err as Error).message}`;
          }
        };
        assert.equal(outcome(applyUpdateShared), outcome(applyUpdate), JSON.stringify(update));
        if (outcome(applyUpdate).startsWith('error')) continue;
        // -0 and NaN as the store gives them back, and no object shared with the update: deepEqual tells -0 from 0.
        const shared = applyUpdateShared(start, update, inserting);
        assert.deepEqual(shared, JSON.parse(JSON.stringify(applyUpdate(start, update, inserting))));
        for (const v of Object.values(update.$set!))
          if (v !== null && typeof v === 'object')
            assert.ok(!Object.values(shared).includes(v), 'a value of the update is copied, not shared');
      }
    }
    assert.equal(JSON.stringify(wide), before, 'the held document is never changed in place');
  });

  it('keeps a field named __proto__ a field, never the prototype', () => {
    const parsed = JSON.parse('{"_id":"p","__proto__":{"polluted":true},"a":1}') as Doc;
    // Parsed, as an event's payload is: in a literal, `__proto__` would name the prototype.
    for (const update of [
      { $set: { a: 2 } },
      JSON.parse('{"$set":{"__proto__":{"other":1},"b":2}}') as Update,
      JSON.parse('{"$set":{"__proto__":{"other":1}}}') as Update,
    ]) {
      const out = applyUpdateShared(parsed, update, false);
      assert.equal(Object.getPrototypeOf(out), Object.prototype);
      assert.ok(Object.hasOwn(out, '__proto__'));
      assert.equal((out as { polluted?: unknown }).polluted, undefined);
    }
    const inserted = applyUpdateShared(
      { _id: 'q' },
      JSON.parse('{"$set":{"__proto__":{"x":1},"y":2}}') as Update,
      true,
    );
    assert.equal(JSON.stringify(inserted), '{"_id":"q","__proto__":{"x":1},"y":2}');
    assert.equal(Object.getPrototypeOf(inserted), Object.prototype);
  });
});
