import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { apiTokensCollection, membersCollection, usersCollection, workspacesCollection } from '../../app/identity.js';
import { allProjectors } from '../../projections/index.js';

/** The identity collections are named in app/identity.ts; the projectors that write them must use the same names. */
describe('identity collections', () => {
  it('are the collections the identity projectors write', () => {
    const written = new Set(allProjectors.flatMap((p) => p.collections));
    for (const name of [usersCollection, workspacesCollection, membersCollection, apiTokensCollection])
      assert.ok(written.has(name), `no projector writes ${name}`);
  });
});
