import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { BlobIntegrityError, readRef, type BlobStore } from '../../store/blob-store.js';

async function drain(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk as Buffer));
  return Buffer.concat(chunks);
}

/**
 * The one contract every blob store adapter passes (docs/design.md, "Large payloads out of line"). Each test works
 * under a prefix of its own, so a shared server database can run it twice.
 */
export function blobStoreContract(name: string, open: () => Promise<BlobStore>): void {
  describe(`blob store contract: ${name}`, () => {
    let blobs: BlobStore;
    let root = '';
    before(async () => {
      blobs = await open();
    });
    after(async () => blobs.close());
    const fresh = () => {
      root = `contract-${randomUUID()}/`;
      return root;
    };

    it('stores bytes under a key and answers their sha256 and length; reads them back whole', async () => {
      const p = fresh();
      const content = randomBytes(3 * 1024 * 1024 + 17);
      const ref = await blobs.put(`${p}big.bin`, content);
      assert.deepEqual(ref, {
        key: `${p}big.bin`,
        sha256: createHash('sha256').update(content).digest('hex'),
        bytes: content.length,
      });
      assert.ok((await blobs.get(`${p}big.bin`))?.equals(content));
      assert.ok((await readRef(blobs, ref)).equals(content));
      const opened = await blobs.open(`${p}big.bin`);
      assert.equal(opened?.bytes, content.length);
      assert.ok((await drain(opened!.stream)).equals(content));
      const text = await blobs.put(`${p}note.txt`, 'héllo');
      assert.equal(text.bytes, 6, 'strings are stored as UTF-8');
      assert.equal((await blobs.get(`${p}note.txt`))?.toString('utf8'), 'héllo');
      assert.equal((await blobs.put(`${p}empty`, Buffer.alloc(0))).bytes, 0);
      assert.equal((await blobs.get(`${p}empty`))?.length, 0, 'an empty blob is not a missing one');
    });

    it('answers null for a missing key, and a reference to it is an integrity error', async () => {
      const p = fresh();
      assert.equal(await blobs.get(`${p}nothing`), null);
      assert.equal(await blobs.open(`${p}nothing`), null);
      await assert.rejects(
        readRef(blobs, { key: `${p}nothing`, sha256: '0'.repeat(64), bytes: 1 }),
        (err: unknown) => err instanceof BlobIntegrityError && /missing/.test(err.message),
      );
    });

    it('replaces a key whole; a reference to the old bytes no longer verifies', async () => {
      const p = fresh();
      const first = await blobs.put(`${p}log`, 'first version');
      await blobs.put(`${p}log`, 'second');
      assert.equal((await blobs.get(`${p}log`))?.toString(), 'second');
      assert.deepEqual(await blobs.list(p), [{ key: `${p}log`, bytes: 6 }], 'one blob per key');
      await assert.rejects(readRef(blobs, first), BlobIntegrityError);
    });

    it('keeps the last of racing writes of one key whole', async () => {
      const p = fresh();
      const versions = Array.from({ length: 8 }, (_, i) => Buffer.alloc(256 * 1024, 65 + i));
      await Promise.all(versions.map((v) => blobs.put(`${p}raced`, v)));
      const kept = await blobs.get(`${p}raced`);
      assert.ok(kept && versions.some((v) => v.equals(kept)), 'one whole version, not a mix');
      assert.equal((await blobs.list(p)).length, 1);
    });

    it('lists a prefix in key order with sizes, and a prefix never matches a longer segment', async () => {
      const p = fresh();
      for (const key of ['runs/ab/x', 'runs/abc/y', 'runs/ab/sub/z z.txt', 'runs/ab/a.txt', 'runs/ab/é'])
        await blobs.put(`${p}${key}`, key);
      assert.deepEqual(
        (await blobs.list(`${p}runs/ab/`)).map((b) => [b.key.slice(p.length), b.bytes]),
        [
          ['runs/ab/a.txt', 13],
          ['runs/ab/sub/z z.txt', 19],
          ['runs/ab/x', 9],
          ['runs/ab/é', 10],
        ],
      );
      assert.deepEqual(await blobs.list(`${p}runs/none/`), []);
      await assert.rejects(blobs.list(`${p}runs/ab`), /ends with "\/"/, 'a prefix must end with a slash');
    });

    it('deletes one key or a whole prefix, and deleting what is gone is no error', async () => {
      const p = fresh();
      for (const key of ['r/1/a', 'r/1/b/c', 'r/12/a', 'r/2/a']) await blobs.put(`${p}${key}`, 'x');
      await blobs.delete(`${p}r/2/a`);
      await blobs.delete(`${p}r/2/a`);
      assert.equal(await blobs.get(`${p}r/2/a`), null);
      assert.equal(await blobs.deletePrefix(`${p}r/1/`), 2);
      assert.equal(await blobs.deletePrefix(`${p}r/1/`), 0);
      assert.deepEqual(
        (await blobs.list(`${p}r/`)).map((b) => b.key.slice(p.length)),
        ['r/12/a'],
        'r/12 is not under r/1',
      );
    });

    it('refuses keys that are not clean relative paths', async () => {
      const p = fresh();
      for (const key of ['', '/abs', `${p}../escape`, `${p}a//b`, `${p}./a`, `${p}a/`, `${p}nul\0`, 'x'.repeat(1025)])
        await assert.rejects(blobs.put(key, 'x'), /not a blob key/, JSON.stringify(key));
      await assert.rejects(blobs.get(`${p}../../etc/passwd`), /not a blob key/);
      await assert.rejects(blobs.deletePrefix('../'), /not a blob key/);
    });
  });
}
