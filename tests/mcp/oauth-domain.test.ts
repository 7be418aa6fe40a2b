import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DomainError } from '../../domain/decider.js';
import {
  callbackRefusal,
  expiryOf,
  loginScope,
  mcpOauthDecider,
  needsRefresh,
  pendingLoginMs,
  type McpOauthCommand,
  type McpOauthState,
} from '../../domain/mcp-oauth.js';

const fold = (commands: McpOauthCommand[]): McpOauthState =>
  commands.reduce(
    (s, c) => mcpOauthDecider.decide(c, s).reduce(mcpOauthDecider.evolve, s),
    mcpOauthDecider.initialState,
  );

const start = (stateHash: string, now = 1_000): McpOauthCommand => ({
  type: 'StartLogin',
  serverId: 's',
  userId: 'u',
  stateHash,
  sealed: 'p',
  now,
});
const finish = (stateHash: string, now = 2_000): McpOauthCommand => ({
  type: 'FinishLogin',
  serverId: 's',
  stateHash,
  userId: 'u',
  sealed: 't',
  expiresAt: now + 3_600_000,
  refreshable: true,
  now,
});

describe('MCP OAuth login decisions', () => {
  it('finishes only the latest pending login, for its user, within 10 minutes, once', () => {
    const pending = fold([start('a'), start('b')]);
    assert.equal(callbackRefusal(pending, 'a', 'u', 1_500), 'invalid_state');
    assert.equal(callbackRefusal(pending, 'b', 'other', 1_500), 'wrong_user');
    assert.equal(callbackRefusal(pending, 'b', null, 1_500), 'wrong_user');
    assert.equal(callbackRefusal(pending, 'b', 'u', 1_000 + pendingLoginMs), 'login_expired');
    assert.equal(callbackRefusal(pending, 'b', 'u', 1_500), null);
    const done = fold([start('b'), finish('b')]);
    assert.equal(done.login?.generation, 1);
    assert.throws(
      () => mcpOauthDecider.decide(finish('b'), done),
      (e: unknown) => e instanceof DomainError && e.code === 'conflict',
    );
    assert.deepEqual(
      mcpOauthDecider.decide({ type: 'FailLogin', serverId: 's', stateHash: 'b', error: 'x', now: 3 }, done),
      [],
    );
  });

  it('stores a refresh only over the generation it started from, and a stale rejection ends nothing', () => {
    const state = fold([start('a'), finish('a')]);
    const refresh = (generation: number): McpOauthCommand => ({
      type: 'RecordRefresh',
      serverId: 's',
      generation,
      sealed: 'r',
      expiresAt: null,
      refreshable: true,
      now: 5_000,
    });
    const refreshed = fold([start('a'), finish('a'), refresh(1)]);
    assert.equal(refreshed.login?.generation, 2);
    assert.equal(refreshed.login?.issuedAt, 5_000);
    assert.throws(
      () => mcpOauthDecider.decide(refresh(1), refreshed),
      (e: unknown) => e instanceof DomainError && e.code === 'conflict',
    );
    assert.deepEqual(
      mcpOauthDecider.decide(
        { type: 'Logout', serverId: 's', reason: 'refresh_rejected', generation: 1, now: 6 },
        refreshed,
      ),
      [],
    );
    assert.equal(
      mcpOauthDecider.decide(
        { type: 'Logout', serverId: 's', reason: 'refresh_rejected', generation: 2, now: 6 },
        refreshed,
      ).length,
      1,
    );
    assert.equal(
      fold([start('a'), finish('a'), { type: 'Logout', serverId: 's', reason: 'logout', now: 7 }]).login,
      null,
    );
    assert.equal(state.pending, null);
  });

  it('refreshes 30 s before expiry, or half way through a short life', () => {
    const login = { sealed: '', loggedInAt: 0, issuedAt: 0, expiresAt: 3_600_000, refreshable: true, generation: 1 };
    assert.equal(needsRefresh(login, 3_569_999), false);
    assert.equal(needsRefresh(login, 3_570_000), true);
    assert.equal(needsRefresh({ ...login, expiresAt: 20_000 }, 9_999), false);
    assert.equal(needsRefresh({ ...login, expiresAt: 20_000 }, 10_000), true);
    assert.equal(needsRefresh({ ...login, refreshable: false }, 3_599_999), false);
    assert.equal(needsRefresh({ ...login, expiresAt: null }, 9e15), false);
    assert.equal(expiryOf(60, 1_000), 61_000);
    assert.equal(expiryOf(undefined, 1_000), null);
  });

  it("asks for the configured scopes, else the challenge's or the metadata's, plus offline_access when offered", () => {
    const offered = ['openid', 'offline_access'];
    assert.equal(
      loginScope({ configured: ['a', 'b'], challenge: 'c', resourceScopes: ['d'], serverScopes: offered }),
      'a b offline_access',
    );
    assert.equal(
      loginScope({ configured: undefined, challenge: 'c d', resourceScopes: ['e'], serverScopes: undefined }),
      'c d',
    );
    assert.equal(
      loginScope({ configured: [], challenge: undefined, resourceScopes: ['e'], serverScopes: offered }),
      'e offline_access',
    );
    assert.equal(
      loginScope({ configured: undefined, challenge: undefined, resourceScopes: undefined, serverScopes: ['openid'] }),
      undefined,
    );
  });
});
