import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { waitFor } from '../wait.js';
import { adminSession, Client, createToken, startTestServer, userSession, type TestServer } from './harness.js';

/*
 * A token is decided from a cache on the hot path (docs/design.md, "Identity"): its revocation, or its creator's
 * deactivation, must refuse the very next request even while the token is busy creating jobs, the load the creations
 * benchmark puts on it (docs/performance.md, "Fewer pages, fewer calls (2026-11-27)").
 */

let t: TestServer;
let admin: Client;

before(async () => {
  t = await startTestServer();
  admin = await adminSession(t);
});
after(async () => t.stop());

interface Sent {
  afterRevocation: boolean;
  status: number;
  code: string | undefined;
}

/**
 * `connections` loops creating jobs with the token until `stop()`; each answer is kept with whether the request was
 * sent after the revocation had been answered.
 */
function loadWith(token: Client, connections: number) {
  const sent: Sent[] = [];
  let revoked = false;
  let stopped = false;
  let n = 0;
  const loops = Array.from({ length: connections }, async () => {
    while (!stopped) {
      const afterRevocation = revoked;
      const res = await token.post<{ code?: string }>('/api/jobs', {
        name: `Load job ${++n}`,
        instruction: 'Count the files in the workspace.',
      });
      sent.push({ afterRevocation, status: res.status, code: res.body.code });
    }
  });
  return {
    sent,
    created: () => sent.filter((s) => s.status === 201).length,
    markRevoked: () => {
      revoked = true;
    },
    async stop() {
      stopped = true;
      await Promise.all(loops);
    },
  };
}

async function revokeUnderLoad(email: string, revoke: (tokenId: string, userId: string) => Promise<number>) {
  const member = await userSession(t, admin, email);
  const token = await createToken(member.client, 'busy token');
  const load = loadWith(token.client, 20);
  try {
    // The token is in use (cached, its use recorded) before it is revoked.
    await waitFor('jobs created with the token', () => load.created() >= 100, { timeoutMs: 60_000 });
    assert.equal(await revoke(token.id, member.userId), 204);
    load.markRevoked();
    const next = await token.client.get<{ code: string }>('/api/jobs');
    assert.equal(next.status, 401, 'the first request after the revocation is refused');
    assert.equal(next.body.code, 'invalid_token');
    await waitFor('requests sent after the revocation', () => load.sent.filter((s) => s.afterRevocation).length >= 40, {
      timeoutMs: 60_000,
    });
  } finally {
    await load.stop();
  }
  const late = load.sent.filter((s) => s.afterRevocation);
  assert.deepEqual(
    late.filter((s) => s.status !== 401 || s.code !== 'invalid_token'),
    [],
    'no request sent after the revocation is served',
  );
  // Requests in flight while it was revoked were either served or refused: never a server error.
  assert.deepEqual(
    load.sent.filter((s) => s.status !== 201 && s.status !== 401),
    [],
  );
}

describe('revoking a token under load', () => {
  it('refuses a deleted token on the next request while 20 connections create jobs with it', async () => {
    await revokeUnderLoad(
      'busy-token@example.com',
      async (tokenId) => (await admin.delete(`/api/tokens/${tokenId}`)).status,
    );
  });

  it('refuses the token of a deactivated user on the next request while it creates jobs', async () => {
    await revokeUnderLoad('busy-user@example.com', async (_tokenId, userId) => {
      const res = await admin.patch(`/api/admin/users/${userId}`, { deactivated: true });
      // The deactivation answers the user; the test's revocation helper speaks in "done" statuses.
      return res.status === 200 ? 204 : res.status;
    });
  });
});
