import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { pageCacheKib, useWal } from '../../store/sqlite-wal.js';

/** The embedded stores' connections keep a small page cache (docs/performance.md, "Memory through a long life"). */
describe('the embedded stores’ connection settings', () => {
  it('bound the page cache of a file database to pageCacheKib, far below the 16,000 KiB of better-sqlite3’s build', () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-page-cache-'));
    const db = new Database(join(dir, 'x.db'));
    try {
      // better-sqlite3 builds SQLite with a page cache of 16,000 KiB per connection (SQLite's own default is 2,000).
      assert.equal(db.pragma('cache_size', { simple: true }), -16000, 'the default, before');
      useWal(db);
      assert.equal(db.pragma('cache_size', { simple: true }), -pageCacheKib);
      assert.ok(pageCacheKib <= 2000);
      assert.equal(db.pragma('journal_mode', { simple: true }), 'wal');
      // Reads past the cache still answer: 4 MB of rows through a smaller cache.
      db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT)');
      const insert = db.prepare('INSERT INTO t (body) VALUES (?)');
      db.transaction(() => {
        for (let i = 0; i < 4000; i++) insert.run('x'.repeat(1000) + i);
      })();
      const row = db.prepare('SELECT body FROM t WHERE id = ?').get(1234) as { body: string };
      assert.equal(row.body, 'x'.repeat(1000) + 1233);
      assert.equal((db.prepare('SELECT count(*) AS n FROM t').get() as { n: number }).n, 4000);
    } finally {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
