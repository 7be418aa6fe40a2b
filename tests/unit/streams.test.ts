import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { newId } from '../../app/ids.js';
import { streams } from '../../domain/streams.js';
import { defaultWorkspaceId } from '../../domain/workspace.js';

const categories = Object.values(streams);
const sample = () => ({ type: 'Anything', data: { n: 1 }, metadata: {}, position: 7n });
const scoped = new Set<string>(
  [streams.membership, streams.mcpName, streams.secretName, streams.invite].map((c) => c.category),
);
/** A stream id of each category, for a fresh key. */
const idsOf = (key: string) =>
  categories.map((c) => ({
    category: c.category,
    id: scoped.has(c.category) ? `${c.category}-${defaultWorkspaceId}-${key}` : `${c.category}-${key}`,
  }));

describe('the stream registry', () => {
  it('names every category once', () => {
    const names = categories.map((c) => c.category);
    assert.equal(new Set(names).size, names.length, `duplicate categories in ${names.join(', ')}`);
  });

  it('gives every stream id to exactly one category, even where one name starts another (job, jobruns)', () => {
    const key = newId();
    for (const { category, id } of idsOf(key)) {
      const claimants = categories.filter((c) => c.keyOf(id) !== null).map((c) => c.category);
      assert.deepEqual(claimants, [category], `${id} is claimed by ${claimants.join(', ')}`);
    }
    assert.equal(streams.job.keyOf(streams.job.id(key)), key);
    assert.equal(streams.jobRuns.keyOf(streams.job.id(key)), null);
  });

  it('splits a workspace-scoped key at the uuid, even when the second part holds dashes', () => {
    const userId = newId();
    const id = streams.membership.id([defaultWorkspaceId, userId]);
    assert.equal(id, `membership-${defaultWorkspaceId}-${userId}`);
    assert.deepEqual(streams.membership.keyOf(id), [defaultWorkspaceId, userId]);
    assert.deepEqual(streams.mcpName.keyOf(streams.mcpName.id([defaultWorkspaceId, 'my-server'])), [
      defaultWorkspaceId,
      'my-server',
    ]);
    assert.equal(streams.membership.keyOf('membership-short-id'), null, 'a key without a uuid is refused');
    assert.equal(streams.job.keyOf('job-'), null, 'an empty key is refused');
  });

  it('decodes only events of its own category, keeping what the store recorded beside the payload', () => {
    const jobId = newId();
    const recorded = { ...sample(), streamId: streams.job.id(jobId) };
    const decoded = streams.job.decode(recorded);
    assert.ok(decoded);
    assert.equal(decoded.key, jobId);
    assert.equal(decoded.event.position, 7n);
    assert.deepEqual(decoded.event.data, { n: 1 });
    assert.equal(streams.run.decode(recorded), null);
    assert.equal(streams.jobRuns.decode(recorded), null);
  });
});
