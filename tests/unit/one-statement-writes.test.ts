import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CommandBus, systemContext } from '../../app/commands.js';
import { DomainError } from '../../domain/decider.js';
import { jobDecider, jobStreamId } from '../../domain/job.js';
import { DuplicateKeyError } from '../../store/document-store.js';
import { openSqliteDocumentStore } from '../../store/sqlite-document-store.js';
import { openSqliteEventStore } from '../../store/sqlite-event-store.js';

/**
 * The writes that run without a savepoint of their own (docs/design.md, "Events and read models"): one statement
 * each, so a refused one changes nothing and leaves the rest of its transaction as it was.
 */
describe('one-statement writes', () => {
  it('an update refused inside a batch changes nothing of its document and keeps the batch', async () => {
    const docs = openSqliteDocumentStore(':memory:');
    const c = docs.collection<{ _id: string; email: string; n: number }>('people');
    await c.createIndex([['email', 1]], { unique: true });
    await c.updateOne({ _id: 'a' }, { $set: { email: 'a@x', n: 1 } }, { upsert: true });
    await c.updateOne({ _id: 'b' }, { $set: { email: 'b@x', n: 1 } }, { upsert: true });
    const refusals: unknown[] = [];
    await docs.batch(async () => {
      await c.updateOne({ _id: 'a' }, { $set: { n: 2 } });
      // The same email as `a`: the unique index refuses both the update of `b` and the insert of `c`.
      await c.updateOne({ _id: 'b' }, { $set: { email: 'a@x', n: 2 } }).catch((err: unknown) => refusals.push(err));
      await c
        .updateOne({ _id: 'c' }, { $set: { email: 'a@x', n: 2 } }, { upsert: true })
        .catch((err: unknown) => refusals.push(err));
      await c.updateOne({ _id: 'd' }, { $set: { email: 'd@x', n: 2 } }, { upsert: true });
    });
    assert.equal(refusals.length, 2);
    for (const err of refusals) assert.ok(err instanceof DuplicateKeyError);
    assert.deepEqual(
      (await c.find({}, { sort: [['_id', 1]] })).map((d) => [d._id, d.email, d.n]),
      [
        ['a', 'a@x', 2],
        ['b', 'b@x', 1],
        ['d', 'd@x', 2],
      ],
    );
    await docs.close();
  });

  it('an append of one event refused in a group leaves the others of the group written', async () => {
    const events = openSqliteEventStore(':memory:');
    const meta = { ...systemContext, correlationId: null, causationId: null, ts: 1 };
    const ev = (i: number) => [{ type: 'Noted', data: { i }, metadata: meta }];
    await events.append('s-1', ev(0), 'no_stream');
    // One turn of the event loop, so one group: the middle one expects no stream where there is one.
    const results = await Promise.allSettled([
      events.append('s-2', ev(1), 'no_stream'),
      events.append('s-1', ev(2), 'no_stream'),
      events.append('s-1', ev(3), 0),
    ]);
    assert.deepEqual(
      results.map((r) => r.status),
      ['fulfilled', 'rejected', 'fulfilled'],
    );
    assert.deepEqual(
      (await events.readAll()).map((e) => [e.streamId, e.revision, (e.data as { i: number }).i]),
      [
        ['s-1', 0, 0],
        ['s-2', 0, 1],
        ['s-1', 1, 3],
      ],
    );
    await events.close();
  });

  it('a command on a new stream that exists after all reads it and decides again', async () => {
    const events = openSqliteEventStore(':memory:');
    const bus = new CommandBus(events, () => 1);
    const create = (name: string) => ({
      type: 'CreateJob' as const,
      jobId: 'j-1',
      workspaceId: 'w-1',
      fields: { name, instruction: 'Do it.' },
      now: 1,
    });
    const first = await bus.execute(jobStreamId('j-1'), jobDecider, create('first'), systemContext, {
      newStream: true,
    });
    assert.equal(first.events.length, 1);
    // The state after the command, folded when it is read, is the stream's state as a load folds it.
    const loaded = await new CommandBus(events).load(jobStreamId('j-1'), jobDecider);
    assert.equal(first.state.status, 'active');
    assert.equal(first.state.config.name, 'first');
    assert.deepEqual(first.state, loaded.state);
    assert.equal(first.state, first.state, 'folded once');
    // A second bus, so nothing of the stream is folded in it: its first attempt skips the read and must lose.
    const again = new CommandBus(events, () => 2).execute(
      jobStreamId('j-1'),
      jobDecider,
      create('second'),
      systemContext,
      { newStream: true },
    );
    await assert.rejects(again, (err: unknown) => err instanceof DomainError && err.code === 'conflict');
    const stream = await events.readStream(jobStreamId('j-1'));
    assert.deepEqual(
      stream.map((e) => (e.data as { config: { name: string } }).config.name),
      ['first'],
    );
    await events.close();
  });
});
