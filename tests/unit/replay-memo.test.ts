import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ProjectionEngine } from '../../projections/engine.js';
import type { DocOp, MemoReads, Projector } from '../../projections/projector.js';
import type { Doc, DocumentStore } from '../../store/document-store.js';
import type { EventStore } from '../../store/event-store.js';
import { quiet, systemMeta } from '../engine-fixtures.js';
import { openSqliteDocumentStore } from '../../store/sqlite-document-store.js';
import { openSqliteEventStore } from '../../store/sqlite-event-store.js';

/**
 * What a replay's derives keep between pages (`ReplayMemo`, docs/design.md, "Replay"), on two small projectors: items
 * by group, and per group the count of its items, derived from a memo the derive's `observe` keeps up to date, and a
 * total over the groups that a derive returns, run once per page. Whatever the memo spares, the read models must be
 * the live feed's.
 */
const meta = systemMeta;
const groups = ['g0', 'g1', 'g2', 'g3'];

interface Counts {
  queries: number;
  totals: number;
}

const items: Projector = {
  name: 'items',
  version: 1,
  collections: ['items'],
  indexes: [{ collection: 'items', keys: [['group', 1]] }],
  project(e): DocOp[] {
    const d = e.data as { n: number; group: string; to?: string };
    if (e.type === 'Added')
      return [
        {
          kind: 'update',
          collection: 'items',
          filter: { _id: `i${d.n}` },
          update: { $set: { group: d.group } },
          upsert: true,
        },
      ];
    // A label on every item of a group: a field no memo reads.
    if (e.type === 'Labelled')
      return [
        {
          kind: 'update',
          collection: 'items',
          filter: { group: d.group },
          update: { $set: { label: `l${d.n}` } },
          many: true,
        },
      ];
    // Every item of a group moved to another: the group, which the counts read, changed for many documents at once.
    if (e.type === 'Moved')
      return [
        {
          kind: 'update',
          collection: 'items',
          filter: { group: d.group },
          update: { $set: { group: d.to! } },
          many: true,
        },
      ];
    return [];
  },
};

let counts: Counts = { queries: 0, totals: 0 };
const reads: MemoReads = { items: ['group'] };

/** A group's item count: from the memo when it holds the group, else counted (and kept). */
function count(group: string, added: string | null = null): DocOp {
  const key = `count:${group}`;
  return {
    kind: 'derive',
    collection: 'groups',
    key,
    async observe(docs, memo) {
      if (added === null) return;
      let held = memo.get(key) as { n: number } | undefined;
      if (!held) {
        if (!memo.fromEmpty('items')) return;
        held = { n: 0 };
        memo.set(key, held, reads);
      }
      held.n++;
    },
    async derive(docs, memo) {
      let held = memo?.get(key) as { n: number } | undefined;
      if (!held && memo?.fromEmpty('items')) held = { n: 0 };
      if (!held) {
        counts.queries++;
        held = { n: await docs.collection('items').count({ group }) };
        memo?.set(key, held, reads);
      }
      return [
        { kind: 'update', collection: 'groups', filter: { _id: group }, update: { $set: { n: held.n } }, upsert: true },
        total(),
      ];
    },
  };
}

/** The sum over the groups, returned by every count: a replay runs it once per page. */
function total(): DocOp {
  return {
    kind: 'derive',
    collection: 'groups',
    key: 'total',
    async derive(docs) {
      counts.totals++;
      const all = await docs.collection<Doc & { n: number }>('groups').find({ _id: { $in: groups } });
      const sum = all.reduce((s, g) => s + g.n, 0);
      return [
        { kind: 'update', collection: 'totals', filter: { _id: 'all' }, update: { $set: { sum } }, upsert: true },
      ];
    },
  };
}

const groupsProjector: Projector = {
  name: 'groups',
  version: 1,
  collections: ['groups', 'totals'],
  indexes: [],
  project(e): DocOp[] {
    const d = e.data as { n: number; group: string; to?: string };
    if (e.type === 'Moved') return [count(d.group), count(d.to!)];
    return e.type === 'Added' ? [count(d.group, `i${d.n}`)] : [];
  },
};

async function history(moves: boolean): Promise<EventStore> {
  const events = openSqliteEventStore(':memory:');
  for (let n = 0; n < 2600; n++) {
    const group = groups[n % 3]!;
    await events.append(`s-${n}`, [{ type: 'Added', data: { n, group }, metadata: meta }], 'any');
    if (n % 500 === 7) await events.append(`l-${n}`, [{ type: 'Labelled', data: { n, group }, metadata: meta }], 'any');
    if (moves && n === 1500)
      await events.append('m-1', [{ type: 'Moved', data: { n, group: 'g1', to: 'g3' }, metadata: meta }], 'any');
  }
  return events;
}

async function everything(docs: DocumentStore): Promise<Record<string, Doc[]>> {
  const out: Record<string, Doc[]> = {};
  for (const c of ['items', 'groups', 'totals']) out[c] = await docs.collection(c).find({}, { sort: [['_id', 1]] });
  return out;
}

async function live(events: EventStore): Promise<Record<string, Doc[]>> {
  const docs = openSqliteDocumentStore(':memory:');
  const engine = new ProjectionEngine(events, docs, [items, groupsProjector], quiet);
  await engine.start();
  await engine.catchUp(60_000);
  await engine.stop();
  const out = await everything(docs);
  await docs.close();
  return out;
}

describe('a replay memo', () => {
  it('derives from what it observed, from empty read models, with no query, and runs returned derives once a page', async () => {
    const events = await history(false);
    const expected = await live(events);
    const docs = openSqliteDocumentStore(':memory:');
    counts = { queries: 0, totals: 0 };
    await new ProjectionEngine(events, docs, [items, groupsProjector], quiet).replay();
    assert.deepEqual(await everything(docs), expected);
    assert.deepEqual(expected.totals, [{ _id: 'all', sum: 2600 }]);
    // Labels are written to many items, but to a field no entry reads: nothing is forgotten.
    assert.equal(counts.queries, 0, 'no count was queried');
    // 2,600 events and 6 labels: three pages of 1,000.
    assert.equal(counts.totals, 3, 'the total once per page, not once per item');
    await docs.close();
    await events.close();
  });

  it('forgets what a write of many documents changed under it, and counts again', async () => {
    const events = await history(true);
    const expected = await live(events);
    assert.ok(
      expected.groups!.some((g) => g._id === 'g3' && (g.n as number) > 0),
      'items moved to g3',
    );
    const docs = openSqliteDocumentStore(':memory:');
    counts = { queries: 0, totals: 0 };
    await new ProjectionEngine(events, docs, [items, groupsProjector], quiet).replay();
    assert.deepEqual(await everything(docs), expected);
    assert.ok(counts.queries >= 2, `the groups were counted again after the move (${counts.queries})`);
    await docs.close();
    await events.close();
  });

  it('starts from a checkpoint in the middle of the log with nothing kept, and counts each group once', async () => {
    const events = await history(false);
    const expected = await live(events);
    const docs = openSqliteDocumentStore(':memory:');
    const first = new ProjectionEngine(events, docs, [items, groupsProjector], quiet);
    let allowed = 1500;
    first.guardWrites(() => allowed-- > 0);
    await assert.rejects(first.replay(), /lease was lost/);
    counts = { queries: 0, totals: 0 };
    await new ProjectionEngine(events, docs, [items, groupsProjector], quiet).replay();
    assert.deepEqual(await everything(docs), expected);
    assert.equal(counts.queries, 3, 'each group counted once, then kept');
    await docs.close();
    await events.close();
  });
});
