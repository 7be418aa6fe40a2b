import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { streams } from '../../domain/streams.js';
import { allProjectors } from '../../projections/index.js';
import type { RecordedEvent } from '../../store/event-store.js';

/**
 * A projector is offered only the stream categories it names (`Projector.categories`, docs/design.md, "Replay"): one
 * that maps a category it does not name would miss those events, live and in a replay. Each projector is handed an
 * event of every category it does not name, as an object that records which of its fields are read: mapping it
 * would read its type or payload, and deciding it is of another category reads the stream id only.
 */
const workspaceId = '00000000-0000-4000-8000-000000000001';

function watched(streamId: string): { event: RecordedEvent; read: Set<string> } {
  const read = new Set<string>();
  const target: RecordedEvent = {
    id: 'e1',
    streamId,
    revision: 0,
    position: '1' as RecordedEvent['position'],
    type: 'Anything',
    data: {},
    metadata: {
      workspaceId,
      actor: { type: 'system', id: null },
      requestId: null,
      correlationId: null,
      causationId: null,
      ts: 1,
    },
  };
  const event = new Proxy(target, {
    get(t, field, receiver) {
      if (typeof field === 'string' && field !== 'streamId') read.add(field);
      return Reflect.get(t, field, receiver) as unknown;
    },
  });
  return { event, read };
}

describe('projector categories', () => {
  it('every projector names its categories, and reads nothing of an event of another', () => {
    for (const p of allProjectors) {
      assert.ok(p.categories && p.categories.length > 0, `${p.name} names the categories it maps`);
      const named = new Set(p.categories.map((c) => c.category));
      for (const category of Object.values(streams)) {
        if (named.has(category.category)) continue;
        // A key both kinds of category parse: a workspace id, a dash and a second part.
        const { event, read } = watched(`${category.category}-${workspaceId}-x`);
        assert.deepEqual(p.project(event), [], `${p.name} maps nothing of ${category.category}`);
        assert.deepEqual([...read], [], `${p.name} reads an event of ${category.category}, which it does not name`);
      }
    }
  });

  it('would tell a projector that maps a category it does not name', () => {
    const runs = allProjectors.find((p) => p.name === 'runs')!;
    const { event, read } = watched(streams.run.id('r1'));
    runs.project(event);
    assert.ok(read.has('type'), 'mapping an event reads its type');
  });
});
