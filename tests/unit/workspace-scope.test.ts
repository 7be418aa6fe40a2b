import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { newId } from '../../app/ids.js';
import { streams } from '../../domain/streams.js';
import { erasedWith, scopeOf, streamScopes } from '../../domain/workspace-scope.js';

/** Which streams a workspace's erasure takes (docs/design.md, "Workspace erasure"). */
describe('workspace stream scopes', () => {
  it('takes a job stream with every stream of the same job', () => {
    const jobId = newId();
    const { scope, key, ids } = erasedWith(streams.playbook.id(jobId));
    assert.equal(scope, 'job');
    assert.equal(key, jobId);
    const expected = ['job', 'jobImages', 'jobMcp', 'jobRuns', 'jobSecrets', 'jobState', 'playbook', 'playbookStats']
      .concat('schedule')
      .map((name) => streams[name as keyof typeof streams].id(jobId as never));
    assert.deepEqual([...ids].sort(), expected.sort());
  });

  it('takes a run with its notifications, an MCP server with its OAuth login, a secret alone', () => {
    const id = newId();
    assert.deepEqual(
      erasedWith(streams.notification.id(id)).ids.sort(),
      [streams.notification.id(id), streams.run.id(id)].sort(),
    );
    assert.deepEqual(
      erasedWith(streams.mcpServer.id(id)).ids.sort(),
      [streams.mcpOauth.id(id), streams.mcpServer.id(id)].sort(),
    );
    assert.deepEqual(erasedWith(streams.secret.id(id)).ids, [streams.secret.id(id)]);
  });

  it("never takes the instance's streams or an id no category claims", () => {
    const id = newId();
    for (const streamId of [
      streams.user.id(id),
      streams.session.id(id),
      streams.identity.id(id),
      streams.signInLink.id(id),
      streams.workspaceErasure.id(id),
      'nothing-' + id,
    ])
      assert.deepEqual(erasedWith(streamId).ids, [], streamId);
    assert.equal(scopeOf(streams.workspace.id(id))?.scope, 'workspace');
  });

  it('gives every category of the registry a scope', () => {
    assert.deepEqual(Object.keys(streamScopes).sort(), Object.keys(streams).sort());
  });
});
