import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, createToken, spawnServer, spawnSvc, svcCli, useSignInLink } from '../api/harness.js';
import { staysFalse, waitFor } from '../wait.js';
import { closeStores, openMemoryStores } from '../../store/open.js';
import { ProjectionLease } from '../../projections/lease.js';

const took = 'took the projector lease';
const standing = 'standing by for the projector lease';

/** pino lines of a process that say it took the lease. */
const takes = (output: () => string) =>
  output()
    .split('\n')
    .filter((l) => l.includes(took)).length;

describe('projector lease', () => {
  it('is held by one holder until it runs out or is released, and renewed by its holder', async () => {
    const stores = openMemoryStores();
    let now = 1_000_000;
    const clock = () => now;
    const times = { ttlMs: 10_000, renewMs: 2_000, pollMs: 1_000 };
    const a = new ProjectionLease(stores.docs, times, clock);
    const b = new ProjectionLease(stores.docs, times, clock);
    try {
      assert.equal(await a.acquire(), true);
      assert.equal(a.held, true);
      assert.equal(await b.acquire(), false, 'a live lease is not taken');
      assert.equal(b.held, false);
      now += 9_000;
      assert.equal(await a.acquire(), true, 'the holder renews');
      now += 9_000;
      assert.equal(await b.acquire(), false, 'the renewal moved the expiry');
      // The holder stops trusting its lease a renewal period before it runs out, by its own clock.
      assert.equal(a.held, false);
      now += 1_001;
      assert.equal(await b.acquire(), true, 'an expired lease is taken');
      assert.equal(await a.acquire(), false, 'and the old holder learns it lost it');
      assert.deepEqual((await a.current())?.holder, b.holder);
      await b.release();
      assert.equal(await a.current(), null);
      assert.equal(await a.acquire(), true, 'a released lease is taken at once');
      await b.release();
      assert.equal((await b.current())?.holder, a.holder, "releasing someone else's lease changes nothing");
    } finally {
      await closeStores(stores);
    }
  });
});

describe('projector lease across processes on one data directory', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-lease-'));
  const children: ChildProcess[] = [];
  after(() => {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('lets one projector write at a time; a standby takes over when the holder is killed or stops', async () => {
    const first = spawnSvc(dataDir, ['--roles', 'projector'], 'info');
    children.push(first.child);
    await waitFor('the first projector to take the lease', () => takes(first.output) === 1, { timeoutMs: 90_000 });
    const second = spawnSvc(dataDir, ['--roles', 'projector'], 'info');
    children.push(second.child);
    const api = await spawnServer(dataDir, ['--roles', 'api']);
    children.push(api.child);

    // The api process projects nothing itself: a sign-in and a job become readable through the first projector.
    const { stdout } = await svcCli(['admin', 'sign-in-link', '--data-dir', dataDir]);
    const admin = new Client(api.url, { cookie: await useSignInLink(stdout.trim()) });
    const { client } = await createToken(admin);
    const made = await client.post<{ id: string }>('/api/jobs', { name: 'before', instruction: 'one' });
    assert.equal(made.status, 201, made.text);
    assert.equal((await client.get(`/api/jobs/${made.body.id}`)).status, 200);
    // Several renewal periods: the second process, alive and asking every second, must not take a live lease.
    await staysFalse('the standby taking a held lease', () => takes(second.output) > 0, 4000);

    first.child.kill('SIGKILL');
    // Written while nobody projects, so its answer cannot show it (docs/design.md, "Projector lease"): a 503 that
    // says it was saved, never a job read back as missing. The dead holder's lease has 8-10 s left, more than the
    // answer waits; the standby applies the write once it has run out.
    const gap = await client.post('/api/jobs', { name: 'during the gap', instruction: 'two' });
    assert.equal(gap.status, 503, gap.text);
    assert.equal(gap.body.code, 'projection_unavailable');
    assert.match(gap.body.message, /saved/);
    await waitFor('the standby to take over from the killed holder', () => takes(second.output) === 1, {
      timeoutMs: 40_000,
    });
    await waitFor(
      'the job written during the gap to be listed',
      async () => (await client.get('/api/jobs?search=gap')).body.total === 1,
      { timeoutMs: 20_000 },
    );
    const afterwards = await client.post<{ id: string }>('/api/jobs', { name: 'after', instruction: 'three' });
    assert.equal(afterwards.status, 201, afterwards.text);
    assert.equal((await client.get(`/api/jobs/${afterwards.body.id}`)).body.name, 'after');

    // A clean stop gives the lease up at once: the next standby does not wait for the ttl.
    const third = spawnSvc(dataDir, ['--roles', 'projector'], 'info');
    children.push(third.child);
    await waitFor('the third process to stand by', () => third.output().includes(standing), { timeoutMs: 90_000 });
    second.child.kill('SIGTERM');
    await waitFor('the second process to stop', () => second.child.exitCode !== null, { timeoutMs: 30_000 });
    assert.equal(second.child.exitCode, 0, second.output());
    await waitFor('the third projector to take the lease', () => takes(third.output) === 1, { timeoutMs: 30_000 });
    const list = await client.get('/api/jobs?pageSize=100');
    assert.deepEqual(list.body.items.map((j: { name: string }) => j.name).sort(), [
      'after',
      'before',
      'during the gap',
    ]);
  });
});
