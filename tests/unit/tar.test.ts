import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { pack, readTar, type TarHeader } from '../../adapters/sandbox/tar.js';

/**
 * The docker backend reads archives whose every byte the sandbox chose (docs/security.md, "Reading back from
 * sandboxes"): names that leave the directory, links, lying sizes and endless streams are what these feed it.
 */

/** One raw ustar header, with whatever name, type and size a hostile archive would carry. */
function header(name: string, flag: string, size: number | string, prefix = ''): Buffer {
  const h = Buffer.alloc(512, 0);
  h.write(name, 0, 100, 'utf8');
  h.write('0000644\0', 100, 'ascii');
  h.write('0001750\0', 108, 'ascii');
  h.write('0001750\0', 116, 'ascii');
  h.write(typeof size === 'number' ? `${size.toString(8).padStart(11, '0')}\0` : size, 124, 12, 'ascii');
  h.write('00000000000\0', 136, 'ascii');
  h.write('        ', 148, 'ascii');
  h.write(flag, 156, 'ascii');
  h.write('ustar\0', 257, 'ascii');
  h.write('00', 263, 'ascii');
  h.write(prefix, 345, 155, 'utf8');
  let sum = 0;
  for (const b of h) sum += b;
  h.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'ascii');
  return h;
}
const body = (content: Buffer) => Buffer.concat([content, Buffer.alloc((512 - (content.length % 512)) % 512)]);
const end = Buffer.alloc(1024);
const all = { keep: () => true, maxStreamBytes: 1 << 30 };
const chunked = (b: Buffer, size = 7) =>
  (async function* () {
    for (let i = 0; i < b.length; i += size) yield b.subarray(i, i + size);
  })();

describe('reading archives from a sandbox', () => {
  it('reads what pack writes, in chunks of any size', async () => {
    const tar = pack([
      { name: 'outputs', type: 'dir', mode: 0o755, uid: 1000, gid: 1000 },
      { name: 'outputs/a.txt', type: 'file', mode: 0o644, uid: 1000, gid: 1000, content: Buffer.from('aaa') },
      {
        name: `outputs/${'d'.repeat(120)}/b.txt`,
        type: 'file',
        mode: 0o644,
        uid: 1000,
        gid: 1000,
        content: Buffer.alloc(700, 1),
      },
    ]);
    for (const size of [1, 7, 512, 100_000]) {
      const read = await readTar(chunked(tar, size), all);
      assert.equal(read.cut, false);
      assert.deepEqual(
        read.entries.map((e) => [e.name, e.type, e.size, e.content?.length ?? null]),
        [
          ['outputs', 'dir', 0, null],
          ['outputs/a.txt', 'file', 3, 3],
          [`outputs/${'d'.repeat(120)}/b.txt`, 'file', 700, 700],
        ],
      );
    }
  });

  it('refuses names that are absolute or climb out, however they are spelled', async () => {
    const hostile: Buffer[] = [
      header('../etc/passwd', '0', 0),
      header('/etc/passwd', '0', 0),
      header('outputs/../../x', '0', 0),
      header('outputs/./x', '0', 0),
      header('outputs//x', '0', 0),
      header('x', '0', 0, '/abs'),
      header('..', '5', 0),
      // A GNU long name and a PAX path record override the header's harmless name.
      Buffer.concat([header('././@LongLink', 'L', 12), body(Buffer.from('../../escape')), header('harmless', '0', 0)]),
      Buffer.concat([header('pax', 'x', 24), body(Buffer.from('24 path=/etc/shadow\n')), header('harmless', '0', 0)]),
    ];
    for (const tar of hostile) {
      await assert.rejects(
        readTar(chunked(Buffer.concat([tar, end])), all),
        /not a plain relative path/,
        `accepted ${tar.subarray(0, 40).toString('utf8')}`,
      );
    }
    assert.throws(
      () => pack([{ name: '../x', type: 'file', mode: 0o644, uid: 0, gid: 0 }]),
      /not a plain relative path/,
    );
  });

  it('gives links and other entries no content, and never keeps a file the caller declines', async () => {
    const tar = Buffer.concat([
      header('outputs/link', '2', 0),
      header('outputs/hard', '1', 0),
      header('outputs/fifo', '6', 0),
      header('outputs/big', '0', 2048),
      body(Buffer.alloc(2048, 7)),
      header('outputs/small', '0', 2),
      body(Buffer.from('ok')),
      end,
    ]);
    const seen: TarHeader[] = [];
    const read = await readTar(chunked(tar), { keep: (h) => (seen.push(h), h.size < 100), maxStreamBytes: 1 << 20 });
    assert.deepEqual(
      read.entries.map((e) => [e.name, e.type, e.content?.toString('utf8') ?? null]),
      [
        ['outputs/link', 'symlink', null],
        ['outputs/hard', 'other', null],
        ['outputs/fifo', 'other', null],
        ['outputs/big', 'file', null],
        ['outputs/small', 'file', 'ok'],
      ],
    );
    assert.deepEqual(
      seen.map((h) => h.name),
      ['outputs/big', 'outputs/small'],
      'only regular files are offered to keep',
    );
  });

  it('throws on a size it cannot read or an archive cut inside an entry', async () => {
    await assert.rejects(
      readTar(chunked(Buffer.concat([header('outputs/x', '0', '\x80\0\0\0\0\0\0\0\0\0\0\x10'), end])), all),
      /size/,
    );
    await assert.rejects(
      readTar(chunked(Buffer.concat([header('outputs/x', '0', 'zzzzzzzzzzz\0'), end])), all),
      /size/,
    );
    await assert.rejects(
      readTar(chunked(Buffer.concat([header('outputs/x', '0', 4096), Buffer.alloc(100)])), all),
      /ends inside/,
    );
    await assert.rejects(readTar(chunked(Buffer.concat([header('pax', 'x', 8 * 1024 * 1024), end])), all), /oversized/);
  });

  it('stops reading an endless stream once past its bound, holding only what fits', async () => {
    let produced = 0;
    async function* endless() {
      const one = Buffer.concat([header('outputs/f', '0', 1024 * 1024), Buffer.alloc(1024 * 1024, 1)]);
      for (;;) {
        produced += one.length;
        yield one;
      }
    }
    let kept = 0;
    const read = await readTar(endless(), { keep: () => kept++ < 2, maxStreamBytes: 8 * 1024 * 1024 });
    assert.equal(read.cut, true);
    assert.ok(produced < 12 * 1024 * 1024, `read ${produced} bytes of an endless archive`);
    assert.equal(read.entries.filter((e) => e.content !== null).length, 2);
  });
});
