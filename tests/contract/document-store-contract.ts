import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import {
  DuplicateKeyError,
  type Collection,
  type Doc,
  type DocumentStore,
  type Filter,
} from '../../store/document-store.js';

interface Item extends Doc {
  name: string;
  n?: number | null;
  tag?: string | null;
  on?: boolean;
  nested?: { level: number; label?: string };
  list?: string[];
}

const items: Item[] = [
  { _id: 'a', name: 'Alpha', n: 1, tag: 'x', on: true, nested: { level: 1, label: 'one' } },
  { _id: 'b', name: 'bravo', n: 2, tag: 'y', on: false, nested: { level: 2 } },
  { _id: 'c', name: 'Charlie 50%', n: 3, tag: null, on: true, nested: { level: 3, label: 'three' } },
  { _id: 'd', name: 'delta_1', n: null, tag: 'x', on: false },
  { _id: 'e', name: 'echo 500', tag: 'z', on: true, nested: { level: 2, label: 'two' } },
  { _id: 'f', name: 'foxtrot axb', n: 2, on: true, list: ['p', 'q'] },
];

/**
 * The one contract every document store adapter passes: MongoDB semantics over the subset the read models use
 * (docs/design.md, "Events and read models").
 */
export function documentStoreContract(name: string, open: () => Promise<DocumentStore>): void {
  describe(`document store contract: ${name}`, () => {
    let store: DocumentStore;
    before(async () => {
      store = await open();
    });
    after(async () => store.close());

    async function seeded(): Promise<Collection<Item>> {
      const c = store.collection<Item>(`c_${randomUUID().replace(/-/g, '').slice(0, 12)}`);
      for (const item of items) await c.insertOne(item);
      return c;
    }
    const ids = async (c: Collection<Item>, filter: Filter, sort: Array<[string, 1 | -1]> = [['_id', 1]]) =>
      (await c.find(filter, { sort })).map((d) => d._id);

    it('matches equality, null and missing fields as MongoDB does', async () => {
      const c = await seeded();
      assert.deepEqual(await ids(c, { tag: 'x' }), ['a', 'd']);
      assert.deepEqual(await ids(c, { tag: null }), ['c', 'f'], 'null matches null and missing');
      assert.deepEqual(await ids(c, { on: true }), ['a', 'c', 'e', 'f']);
      assert.deepEqual(await ids(c, { on: false }), ['b', 'd']);
      assert.deepEqual(await ids(c, { n: 2, on: true }), ['f']);
      assert.deepEqual(await ids(c, { 'nested.level': 2 }), ['b', 'e']);
      assert.deepEqual(await ids(c, { _id: 'c' }), ['c']);
      assert.deepEqual(await ids(c, { name: 'nobody' }), []);
    });

    it('supports $eq $ne $gt $gte $lt $lte $in $nin $exists', async () => {
      const c = await seeded();
      assert.deepEqual(await ids(c, { tag: { $eq: 'y' } }), ['b']);
      assert.deepEqual(await ids(c, { tag: { $ne: 'x' } }), ['b', 'c', 'e', 'f'], '$ne matches missing and null');
      assert.deepEqual(await ids(c, { n: { $gt: 1 } }), ['b', 'c', 'f']);
      assert.deepEqual(await ids(c, { n: { $gte: 2, $lt: 3 } }), ['b', 'f']);
      assert.deepEqual(await ids(c, { n: { $lte: 1 } }), ['a'], 'null and missing never compare');
      assert.deepEqual(await ids(c, { name: { $gt: 'c' } }), ['d', 'e', 'f'], 'strings compare as strings');
      assert.deepEqual(await ids(c, { 'nested.level': { $gte: 2 } }), ['b', 'c', 'e']);
      assert.deepEqual(await ids(c, { tag: { $in: ['x', 'z'] } }), ['a', 'd', 'e']);
      assert.deepEqual(await ids(c, { tag: { $in: ['y', null] } }), ['b', 'c', 'f']);
      assert.deepEqual(await ids(c, { on: { $in: [false] } }), ['b', 'd']);
      assert.deepEqual(await ids(c, { tag: { $nin: ['x', 'y'] } }), ['c', 'e', 'f'], '$nin matches missing');
      assert.deepEqual(await ids(c, { n: { $exists: true } }), ['a', 'b', 'c', 'd', 'f'], 'a null value exists');
      assert.deepEqual(await ids(c, { n: { $exists: false } }), ['e']);
      assert.deepEqual(await ids(c, { 'nested.label': { $exists: true } }), ['a', 'c', 'e']);
    });

    it('nests $and and $or', async () => {
      const c = await seeded();
      assert.deepEqual(await ids(c, { $or: [{ tag: 'y' }, { n: 3 }] }), ['b', 'c']);
      assert.deepEqual(await ids(c, { $and: [{ on: true }, { $or: [{ tag: 'x' }, { tag: 'z' }] }] }), ['a', 'e']);
      assert.deepEqual(await ids(c, { on: true, $or: [{ n: { $gt: 2 } }, { 'nested.level': 2 }] }), ['c', 'e']);
    });

    it('sorts on up to three keys with nulls and missing values last in both directions', async () => {
      const c = await seeded();
      assert.deepEqual(
        await ids(c, {}, [
          ['n', 1],
          ['_id', 1],
        ]),
        ['a', 'b', 'f', 'c', 'd', 'e'],
      );
      assert.deepEqual(
        await ids(c, {}, [
          ['n', -1],
          ['_id', 1],
        ]),
        ['c', 'b', 'f', 'a', 'd', 'e'],
      );
      assert.deepEqual(
        await ids(c, {}, [
          ['tag', -1],
          ['n', 1],
          ['_id', -1],
        ]),
        ['e', 'b', 'a', 'd', 'f', 'c'],
        'null and missing tie, then n decides',
      );
      assert.deepEqual(
        await ids(c, {}, [
          ['nested.level', 1],
          ['n', -1],
          ['name', 1],
        ]),
        ['a', 'b', 'e', 'c', 'f', 'd'],
        'missing level last; then n descending with null last',
      );
      assert.deepEqual(await ids(c, {}, [['name', 1]]), ['a', 'c', 'b', 'd', 'e', 'f'], 'binary order: capitals first');
    });

    it('pages with skip and limit, and counts', async () => {
      const c = await seeded();
      const page = (skip: number) => c.find({}, { sort: [['_id', 1]], skip, limit: 2 });
      assert.deepEqual(
        (await page(0)).map((d) => d._id),
        ['a', 'b'],
      );
      assert.deepEqual(
        (await page(4)).map((d) => d._id),
        ['e', 'f'],
      );
      assert.deepEqual(await page(6), []);
      assert.equal(await c.count({}), 6);
      assert.equal(await c.count({ on: true }), 4);
      assert.equal((await c.findOne({ tag: 'x' }, { sort: [['_id', -1]] }))?._id, 'd');
      assert.equal(await c.findOne({ tag: 'nope' }), null);
    });

    it('searches case-insensitively for literal text, % and _ included', async () => {
      const c = await seeded();
      const search = async (text: string, fields = ['name']) =>
        (await c.find({}, { sort: [['_id', 1]], search: { fields, text } })).map((d) => d._id);
      assert.deepEqual(await search('ALPHA'), ['a']);
      assert.deepEqual(await search('50%'), ['c'], '50% does not match 500');
      assert.deepEqual(await search('a_1'), ['d'], '_ is not a wildcard');
      assert.deepEqual(await search('a_b'), [], 'a_b does not match axb');
      assert.deepEqual(await search('.'), []);
      assert.deepEqual(await search('*'), []);
      assert.deepEqual(await search('o', ['name']), ['b', 'e', 'f']);
      assert.deepEqual(await search('three', ['name', 'nested.label']), ['c']);
      assert.equal(await c.count({ on: true }, { search: { fields: ['name'], text: 'e' } }), 2);
    });

    it('updates with $set $unset $inc $push, one or many', async () => {
      const c = await seeded();
      const one = await c.updateOne(
        { _id: 'a' },
        { $set: { name: 'A2', 'nested.label': 'uno' }, $unset: { tag: 1 }, $inc: { n: 5 }, $push: { list: 'z' } },
      );
      assert.deepEqual([one.matched, one.modified, one.upsertedId], [1, 1, null]);
      const a = await c.findOne({ _id: 'a' });
      assert.deepEqual(
        { ...a },
        { _id: 'a', name: 'A2', n: 6, on: true, nested: { level: 1, label: 'uno' }, list: ['z'] },
      );
      await c.updateOne({ _id: 'f' }, { $push: { list: 'r' }, $inc: { missing: 2 } });
      const f = await c.findOne({ _id: 'f' });
      assert.deepEqual(f?.list, ['p', 'q', 'r']);
      assert.equal((f as Doc | null)?.missing, 2);
      const many = await c.updateMany({ on: true }, { $set: { tag: 'on' } });
      assert.equal(many.matched, 4);
      assert.deepEqual(await ids(c, { tag: 'on' }), ['a', 'c', 'e', 'f']);
      const none = await c.updateMany({ tag: 'zzz' }, { $set: { n: 0 } });
      assert.deepEqual([none.matched, none.modified], [0, 0]);
    });

    it('upserts from the filter, applying $setOnInsert only when inserting', async () => {
      const c = await seeded();
      const inserted = await c.updateOne(
        { _id: 'new', tag: 'fresh' },
        { $set: { name: 'New' }, $setOnInsert: { n: 100 } },
        { upsert: true },
      );
      assert.equal(inserted.upsertedId, 'new');
      assert.deepEqual({ ...(await c.findOne({ _id: 'new' })) }, { _id: 'new', tag: 'fresh', name: 'New', n: 100 });
      const again = await c.updateOne(
        { _id: 'new', tag: 'fresh' },
        { $set: { name: 'Newer' }, $setOnInsert: { n: 0 } },
        { upsert: true },
      );
      assert.deepEqual([again.matched, again.upsertedId], [1, null]);
      assert.equal((await c.findOne({ _id: 'new' }))?.n, 100, '$setOnInsert is ignored on update');
      assert.equal(await c.count({}), 7);
    });

    it('upserts by _id alone: the document is the id then the fields set, in order, with a path or an _id set too', async () => {
      const c = await seeded();
      const spec = { steps: [{ run: 'ls', args: ['-la', ''] }], env: {}, limit: 0 };
      await c.updateOne(
        { _id: 'plain' },
        { $set: { name: 'Plain', zeta: null, on: false, n: -0, spec, list: [], alpha: 'a"b\\c\u2028' } },
        { upsert: true },
      );
      const plain = (await c.findOne({ _id: 'plain' })) as Doc;
      assert.deepEqual(Object.keys(plain), ['_id', 'name', 'zeta', 'on', 'n', 'spec', 'list', 'alpha']);
      assert.deepEqual(
        { ...plain },
        { _id: 'plain', name: 'Plain', zeta: null, on: false, n: 0, spec, list: [], alpha: 'a"b\\c\u2028' },
      );
      // Not a copy shared with the update: changing what was set changes nothing stored.
      spec.steps[0]!.run = 'rm';
      assert.equal(((await c.findOne({ _id: 'plain' })) as unknown as { spec: typeof spec }).spec.steps[0]!.run, 'ls');
      await c.updateOne({ _id: 'pathed' }, { $set: { name: 'Pathed', 'nested.level': 4 } }, { upsert: true });
      assert.deepEqual(
        { ...(await c.findOne({ _id: 'pathed' })) },
        { _id: 'pathed', name: 'Pathed', nested: { level: 4 } },
      );
      await c.updateOne({ _id: 'same' }, { $set: { name: 'Same', _id: 'same' } }, { upsert: true });
      assert.deepEqual({ ...(await c.findOne({ _id: 'same' })) }, { _id: 'same', name: 'Same' });
      await c.updateOne({ _id: 'empty' }, { $set: {} }, { upsert: true });
      assert.deepEqual({ ...(await c.findOne({ _id: 'empty' })) }, { _id: 'empty' });
      // An existing document is updated, not inserted again.
      const again = await c.updateOne({ _id: 'plain' }, { $set: { name: 'Again' } }, { upsert: true });
      assert.deepEqual([again.matched, again.modified, again.upsertedId], [1, 1, null]);
      assert.equal(await c.count({}), 10);
    });

    it('deletes many and drops', async () => {
      const c = await seeded();
      assert.equal(await c.deleteMany({ on: false }), 2);
      assert.equal(await c.count({}), 4);
      assert.equal(await c.deleteMany({ on: false }), 0);
      await c.drop();
      assert.equal(await c.count({}), 0);
      await c.insertOne({ _id: 'again', name: 'after drop' });
      assert.equal(await c.count({}), 1);
    });

    it('saves whole documents by id, inserting or replacing them, and refuses a unique index violation', async () => {
      const c = await seeded();
      await c.saveMany([
        { _id: 'a', name: 'Alpha again' },
        { _id: 'new', name: 'New', n: 7, nested: { level: 9 } },
      ]);
      assert.deepEqual(await c.findOne({ _id: 'a' }), { _id: 'a', name: 'Alpha again' }, 'replaced whole');
      assert.deepEqual(await c.findOne({ _id: 'new' }), { _id: 'new', name: 'New', n: 7, nested: { level: 9 } });
      assert.deepEqual(await ids(c, { n: 7 }), ['new'], 'a saved document is found by its fields');
      assert.equal(await c.count({}), 7);
      await c.saveMany([]);
      await c.createIndex([['name', 1]], { unique: true });
      await assert.rejects(c.saveMany([{ _id: 'b', name: 'New' }]), DuplicateKeyError);
      assert.equal((await c.findOne({ _id: 'b' }))?.name, 'bravo', 'a refused save changes nothing');
    });

    it('drops every index but the one on _id', async () => {
      await store.collection(`never_${randomUUID().slice(0, 8)}`).dropIndexes();
      const c = await seeded();
      await c.createIndex([['name', 1]], { unique: true });
      await assert.rejects(c.insertOne({ _id: 'z', name: 'Alpha' }), DuplicateKeyError);
      await c.dropIndexes();
      await c.insertOne({ _id: 'z', name: 'Alpha' });
      await assert.rejects(c.insertOne({ _id: 'z', name: 'other' }), DuplicateKeyError, '_id stays unique');
      assert.deepEqual(await ids(c, { name: 'Alpha' }), ['a', 'z']);
      await assert.rejects(c.createIndex([['name', 1]], { unique: true }), DuplicateKeyError);
      await c.deleteMany({ _id: 'z' });
      await c.createIndex([['name', 1]], { unique: true });
    });

    it('refuses duplicate ids and unique index violations with DuplicateKeyError', async () => {
      const c = await seeded();
      await assert.rejects(c.insertOne({ _id: 'a', name: 'dup' }), DuplicateKeyError);
      await c.createIndex([['tag', 1]], { unique: false });
      await c.createIndex([['name', 1]], { unique: true });
      await assert.rejects(c.insertOne({ _id: 'z', name: 'Alpha' }), DuplicateKeyError);
      await assert.rejects(c.updateOne({ _id: 'b' }, { $set: { name: 'Alpha' } }), DuplicateKeyError);
      assert.equal((await c.findOne({ _id: 'b' }))?.name, 'bravo', 'a refused update changes nothing');
      await c.createIndex([['name', 1]], { unique: true });
    });
  });
}
