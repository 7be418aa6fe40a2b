import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { waitFor } from '../wait.js';
import { adminSession, createToken, startTestServer, userSession, type Client, type TestServer } from './harness.js';

interface Projection {
  name: string;
  position: string | null;
  healthy: boolean;
  lastError: string | null;
  retries: number;
}

/**
 * One read model fails for real: the jobs table of the server's own read database refuses writes (a trigger added
 * from outside, as a full disk or a damaged file would refuse them). The rest of the service must go on.
 */
describe('a failing read model', () => {
  let t: TestServer;
  let admin: Client;
  let member: Client;
  let db: Database.Database;

  before(async () => {
    t = await startTestServer();
    admin = await adminSession(t);
    member = (await userSession(t, admin, 'member@example.com')).client;
    db = new Database(join(t.dataDir, 'read.db'));
    db.pragma('busy_timeout = 5000');
  });
  after(async () => {
    db?.close();
    await t?.stop();
  });

  const projections = async (as: Client) => {
    const info = await as.get<{ version: string; database: string; projections: Projection[] }>('/api/system/info');
    assert.equal(info.status, 200, info.text);
    return info.body.projections;
  };
  const jobs = async (as: Client) => (await projections(as)).find((p) => p.name === 'jobs')!;
  const until = waitFor;

  it('lists every projection as healthy at first', async () => {
    const list = await projections(admin);
    assert.ok(list.length >= 10, JSON.stringify(list));
    for (const p of list)
      assert.deepEqual(
        { healthy: p.healthy, lastError: p.lastError, retries: p.retries },
        { healthy: true, lastError: null, retries: 0 },
        p.name,
      );
    assert.ok(list.some((p) => p.name === 'jobs'));
  });

  it('answers the write it cannot show with 503 naming the read model, serves other writes, and recovers on its own', async () => {
    db.exec(
      `CREATE TRIGGER refuse_jobs BEFORE INSERT ON doc_jobs BEGIN SELECT RAISE(ABORT, 'jobs table refused by the test'); END;`,
    );
    const created = await admin.post('/api/jobs', { name: 'written while jobs fail', instruction: 'x' });
    assert.equal(created.status, 503, created.text);
    const body = created.body as { code: string; message: string; requestId: string };
    assert.equal(body.code, 'projection_unavailable');
    assert.match(body.message, /\bjobs read model\b/);
    assert.match(body.message, /saved/, 'the client is told not to repeat the write');
    assert.ok(body.requestId);

    // Writes of other read models are answered as usual, and reads go on.
    const token = await createToken(admin, 'made while jobs fail');
    assert.ok(token.token);
    assert.equal((await token.client.get('/api/users/me')).status, 200);

    // The failure shows in system info; its reason only to the instance admin.
    const failing = await until('the jobs projector to have retried', async () => {
      const j = await jobs(admin);
      return !j.healthy && j.retries >= 1 ? j : null;
    });
    assert.match(failing.lastError ?? '', /jobs table refused by the test/);
    const seenByMember = await jobs(member);
    assert.equal(seenByMember.healthy, false);
    assert.equal(seenByMember.lastError, null, 'a member sees the health, not the store error');
    for (const p of await projections(admin)) if (p.name !== 'jobs') assert.equal(p.healthy, true, `${p.name} goes on`);

    // The cause goes away: the projector catches up by itself and the stored job appears, once.
    db.exec('DROP TRIGGER refuse_jobs');
    await until('the jobs projector to recover', async () => (await jobs(admin)).healthy);
    assert.deepEqual(
      { lastError: (await jobs(admin)).lastError, retries: (await jobs(admin)).retries },
      { lastError: null, retries: 0 },
    );
    const list = await admin.get<{ items: Array<{ name: string }> }>('/api/jobs?pageSize=100');
    assert.equal(list.body.items.filter((j) => j.name === 'written while jobs fail').length, 1, list.text);
    assert.equal((await admin.post('/api/jobs', { name: 'after recovery', instruction: 'x' })).status, 201);
  });
});
