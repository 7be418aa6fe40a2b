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
import { certainlyGone, processIdentity } from '../../projections/lease-liveness.js';
import { spawn } from 'node:child_process';
import { once } from 'node:events';

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

/** A process of this machine, alive until `end` (which waits until it is reaped: a zombie still has its pid). */
async function sleeper(): Promise<{ identity: string; end: () => Promise<void> }> {
  const child = spawn('sleep', ['60'], { stdio: 'ignore' });
  await once(child, 'spawn');
  const identity = processIdentity(child.pid!);
  assert.ok(identity, 'this machine shows processes in /proc');
  const exited = once(child, 'exit');
  return {
    identity,
    end: async () => {
      child.kill('SIGKILL');
      await exited;
    },
  };
}

describe('the liveness of a lease holder on this machine', () => {
  it('is gone only when its pid has no process, or one started at another time', async () => {
    const mine = processIdentity();
    assert.ok(mine);
    assert.equal(certainlyGone(mine, mine), false, 'this process is alive');
    const s = await sleeper();
    assert.equal(certainlyGone(s.identity, mine), false, 'a running process is alive');
    await s.end();
    assert.equal(certainlyGone(s.identity, mine), true, 'a killed and reaped process is gone');
    // The pid of this process with another start time: the pid was reused, the holder is gone.
    const [boot, ns, pid, start] = mine.split('/');
    assert.equal(certainlyGone(`${boot}/${ns}/${pid}/${Number(start) + 1}`, mine), true);
    // Another boot or another PID namespace: its pid means nothing here, so it is never taken for dead.
    assert.equal(certainlyGone(`other-boot/${ns}/${s.identity.split('/')[2]}/1`, mine), false);
    assert.equal(certainlyGone(`${boot}/pid:[1]/${s.identity.split('/')[2]}/1`, mine), false);
    // Nothing this process cannot read counts as gone.
    for (const odd of [
      '',
      '///',
      `${boot}/${ns}/0/1`,
      `${boot}/${ns}/-5/1`,
      `${boot}/${ns}/1e3/1`,
      `${boot}/${ns}/x/1`,
    ])
      assert.equal(certainlyGone(odd, mine), false, odd);
    assert.equal(certainlyGone(s.identity, null), false, 'without an identity of its own nothing is gone');
  });

  it('lets the lease of a holder that died here be taken at once, and no other', async () => {
    const stores = openMemoryStores();
    const leases = stores.docs.collection<{ _id: string; holder: string; expiresAt: number; process?: string }>(
      'projection_lease',
    );
    const b = new ProjectionLease(stores.docs);
    const c = new ProjectionLease(stores.docs);
    const s = await sleeper();
    try {
      const expiresAt = Date.now() + 60_000;
      await leases.insertOne({ _id: 'projector', holder: 'dead:1:x', expiresAt, process: s.identity });
      assert.equal(await b.acquire(), false, 'a live holder keeps its lease');
      const mine = processIdentity()!;
      await leases.updateOne({ _id: 'projector' }, { $set: { process: s.identity.replace(/^[^/]+/, 'other-boot') } });
      await s.end();
      assert.equal(await b.acquire(), false, 'a holder of another machine is only replaced when its lease runs out');
      await leases.updateOne({ _id: 'projector' }, { $set: { process: s.identity } });
      // Two standbys see it dead together: one conditional update wins.
      const [wonB, wonC] = await Promise.all([b.acquire(), c.acquire()]);
      assert.equal(Number(wonB) + Number(wonC), 1, `one of them takes it: ${wonB}, ${wonC}`);
      const winner = wonB ? b : c;
      assert.equal((await winner.current())?.holder, winner.holder);
      assert.equal((await leases.findOne({ _id: 'projector' }))?.process, mine, 'the new holder says where it runs');
      assert.equal(await (wonB ? c : b).acquire(), false, 'and keeps it');
    } finally {
      await s.end();
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

  it('lets one projector write at a time; a standby takes over when the holder hangs, is killed or stops', async () => {
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

    // A holder that hangs (alive, but neither projecting nor renewing): a write then is stored, but its answer cannot
    // show it (docs/design.md, "Projector lease"): a 503 that says it was saved, never a job read back as missing.
    // The hung holder's lease has 8-10 s left, more than the answer waits; the standby applies the write once it has
    // run out.
    first.child.kill('SIGSTOP');
    const gap = await client.post('/api/jobs', { name: 'during the gap', instruction: 'two' });
    assert.equal(gap.status, 503, gap.text);
    assert.equal(gap.body.code, 'projection_unavailable');
    assert.match(gap.body.message, /saved/);
    await waitFor('the standby to take over from the hung holder', () => takes(second.output) === 1, {
      timeoutMs: 40_000,
    });
    first.child.kill('SIGKILL');
    await waitFor(
      'the job written during the gap to be listed',
      async () => (await client.get('/api/jobs?search=gap')).body.total === 1,
      { timeoutMs: 20_000 },
    );
    const afterwards = await client.post<{ id: string }>('/api/jobs', { name: 'after', instruction: 'three' });
    assert.equal(afterwards.status, 201, afterwards.text);
    assert.equal((await client.get(`/api/jobs/${afterwards.body.id}`)).body.name, 'after');

    // A holder killed on this machine is seen dead: the standby takes over at its next poll, not once the lease's
    // 8-10 s have run out.
    const third = spawnSvc(dataDir, ['--roles', 'projector'], 'info');
    children.push(third.child);
    await waitFor('the third process to stand by', () => third.output().includes(standing), { timeoutMs: 90_000 });
    const exited = new Promise((r) => second.child.once('exit', r));
    second.child.kill('SIGKILL');
    await exited;
    const killedAt = Date.now();
    await waitFor('the third projector to take the lease', () => takes(third.output) === 1, { timeoutMs: 30_000 });
    const waited = Date.now() - killedAt;
    assert.ok(waited < 7000, `the standby waited ${waited} ms for the lease of a killed holder`);

    // A clean stop gives the lease up at once: the next standby does not wait for the ttl.
    const fourth = spawnSvc(dataDir, ['--roles', 'projector'], 'info');
    children.push(fourth.child);
    await waitFor('the fourth process to stand by', () => fourth.output().includes(standing), { timeoutMs: 90_000 });
    third.child.kill('SIGTERM');
    await waitFor('the third process to stop', () => third.child.exitCode !== null, { timeoutMs: 30_000 });
    assert.equal(third.child.exitCode, 0, third.output());
    await waitFor('the fourth projector to take the lease', () => takes(fourth.output) === 1, { timeoutMs: 30_000 });
    const list = await client.get('/api/jobs?pageSize=100');
    assert.deepEqual(list.body.items.map((j: { name: string }) => j.name).sort(), [
      'after',
      'before',
      'during the gap',
    ]);
  });
});
