import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ReadyPool } from '../../adapters/sandbox/ready-pool.js';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { waitFor } from '../wait.js';

/** Things the pool starts: numbered, alive until discarded (or killed by the test). */
function harness(options: Partial<ConstructorParameters<typeof ReadyPool>[2]> = {}, failFor = new Set<number>()) {
  let next = 0;
  const started: Array<{ n: number; key: number; alive: boolean }> = [];
  const discarded: number[] = [];
  const pool = new ReadyPool(
    async (key: number) => {
      if (failFor.has(key)) throw new Error(`cannot start ${key}`);
      const item = { n: next++, key, alive: true };
      started.push(item);
      return item;
    },
    async (item) => {
      item.alive = false;
      discarded.push(item.n);
    },
    { perKey: 1, keysKept: 2, idleMs: 60_000, delayMs: 0, ...options },
  );
  return { pool, started, discarded };
}

describe('ReadyPool: sandboxes started ahead of their runs', () => {
  it('hands out nothing before a key is used, then one ready item per take, never the same twice', async () => {
    const { pool, started } = harness();
    assert.equal(pool.take(64), null, 'a key never asked for has nothing ready');
    await pool.settled();
    assert.equal(pool.size, 1, 'the take refilled the key');
    const a = pool.take(64);
    assert.equal(a, started[0]);
    assert.equal(pool.take(64), null, 'taken: the next take finds nothing until the refill');
    await pool.settled();
    const b = pool.take(64);
    assert.ok(b && b !== a, 'a refill is a new item, never one handed out before');
    await pool.close();
  });

  it('is bounded per key and in keys: the least recently used key is discarded', async () => {
    const { pool, started, discarded } = harness({ perKey: 2 });
    for (const key of [1, 2, 3]) {
      pool.want(key);
      await pool.settled();
    }
    assert.equal(pool.size, 4, 'two keys of two items each');
    const ofKey1 = started.filter((s) => s.key === 1).map((s) => s.n);
    assert.deepEqual(discarded.sort(), ofKey1.sort(), "the oldest key's items were discarded");
    assert.equal(pool.take(1), null);
    await pool.close();
    assert.equal(pool.size, 0);
    assert.equal(started.filter((s) => s.alive).length, 0, 'close discards every ready item');
  });

  it('skips and discards an item that died while it waited', async () => {
    const { pool, started, discarded } = harness();
    pool.want(8);
    await pool.settled();
    started[0]!.alive = false;
    assert.equal(pool.take(8), null, 'a dead item is never handed out');
    assert.ok(discarded.includes(0));
    await pool.close();
  });

  it('discards an item nobody took within its idle time and does not replace it until asked again', async () => {
    const { pool, started, discarded } = harness({ idleMs: 30 });
    pool.want(16);
    await pool.settled();
    await waitFor('the idle item to be discarded', () => discarded.includes(0));
    assert.equal(pool.size, 0);
    assert.equal(started.length, 1, 'nothing was started to replace it');
    await pool.close();
  });

  it('a start that fails leaves the key empty (the caller takes its slow path) and starts nothing after close', async () => {
    const { pool, started } = harness({}, new Set([32]));
    pool.want(32);
    await pool.settled();
    assert.equal(pool.take(32), null);
    await pool.close();
    pool.want(64);
    await pool.settled();
    assert.equal(started.length, 0);
  });
  it('keeps no hold on an item once it is taken, long before its idle time would have ended it', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const pool = new ReadyPool(
      async () => ({ alive: true, payload: Buffer.alloc(1024) }),
      async () => {},
      { perKey: 1, keysKept: 2, idleMs: 60_000, delayMs: 60_000 },
    );
    pool.want(64);
    await waitFor('an item ready', () => pool.size === 1);
    let taken: object | null = pool.take(64);
    assert.ok(taken);
    const ref = new WeakRef(taken);
    taken = null;
    // The pool's idle timer of a taken item held it (its process and buffers, for a sandbox) for ten minutes.
    await waitFor(
      'the taken item to be collected',
      async () => {
        gc();
        await new Promise((r) => setImmediate(r));
        return ref.deref() === undefined;
      },
      { timeoutMs: 5_000 },
    );
    await pool.close();
  });
});
