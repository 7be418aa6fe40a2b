/** A minimal ustar writer and reader: what the docker backend needs to move files in and out of containers. */

export interface TarEntry {
  name: string;
  type: 'file' | 'dir';
  mode: number;
  uid: number;
  gid: number;
  content?: Buffer;
}

function octal(value: number, width: number): string {
  return value.toString(8).padStart(width - 1, '0') + '\0';
}

function header(e: TarEntry, size: number): Buffer {
  const h = Buffer.alloc(512, 0);
  let name = e.name;
  let prefix = '';
  if (Buffer.byteLength(name) > 100) {
    const cut = name.lastIndexOf('/', 154);
    if (cut <= 0 || Buffer.byteLength(name.slice(cut + 1)) > 100)
      throw new Error(`path too long for the archive: ${e.name}`);
    prefix = name.slice(0, cut);
    name = name.slice(cut + 1);
  }
  h.write(name, 0, 100, 'utf8');
  h.write(octal(e.mode & 0o7777, 8), 100, 'ascii');
  h.write(octal(e.uid, 8), 108, 'ascii');
  h.write(octal(e.gid, 8), 116, 'ascii');
  h.write(octal(size, 12), 124, 'ascii');
  h.write(octal(Math.floor(Date.now() / 1000), 12), 136, 'ascii');
  h.write('        ', 148, 'ascii');
  h.write(e.type === 'dir' ? '5' : '0', 156, 'ascii');
  h.write('ustar\0', 257, 'ascii');
  h.write('00', 263, 'ascii');
  h.write(prefix, 345, 155, 'utf8');
  let sum = 0;
  for (const b of h) sum += b;
  h.write(octal(sum, 7) + ' ', 148, 'ascii');
  return h;
}

export function pack(entries: TarEntry[]): Buffer {
  const parts: Buffer[] = [];
  for (const e of entries) {
    checkedName(e.name);
    const content = e.type === 'file' ? (e.content ?? Buffer.alloc(0)) : Buffer.alloc(0);
    parts.push(header(e, content.length), content, Buffer.alloc((512 - (content.length % 512)) % 512));
  }
  parts.push(Buffer.alloc(1024));
  return Buffer.concat(parts);
}

export interface TarHeader {
  /** The entry's path, checked: relative, no `.` or `..` component. */
  name: string;
  /** Links and anything else are reported as such and never given content (docs/security.md). */
  type: 'file' | 'dir' | 'symlink' | 'other';
  size: number;
}

export interface ReadEntry extends TarHeader {
  /** Null when `keep` declined it. */
  content: Buffer | null;
}

const field = (b: Buffer, start: number, len: number) =>
  b
    .subarray(start, start + len)
    .toString('utf8')
    .replace(/\0.*$/s, '');

/** A path from an archive the sandbox shaped: refused unless it is relative and stays below where it is read. */
export function checkedName(raw: string): string {
  const name = raw.replace(/\/+$/, '');
  const parts = name.split('/');
  if (
    name === '' ||
    raw.startsWith('/') ||
    parts.some((p) => p === '' || p === '.' || p === '..') ||
    name.includes('\0')
  ) {
    throw new Error(
      `the archive holds an entry with a name that is not a plain relative path: ${JSON.stringify(raw.slice(0, 200))}`,
    );
  }
  return name;
}

/** Pulls exact byte counts out of a stream of chunks. */
class ChunkReader {
  private chunks: Buffer[] = [];
  private have = 0;
  private readonly it: AsyncIterator<Buffer | string>;
  /** Bytes taken from the stream so far. */
  pulled = 0;

  constructor(source: AsyncIterable<Buffer | string>) {
    this.it = source[Symbol.asyncIterator]();
  }

  private async fill(n: number): Promise<boolean> {
    while (this.have < n) {
      const r = await this.it.next();
      if (r.done) return false;
      const b = Buffer.isBuffer(r.value) ? r.value : Buffer.from(r.value);
      this.chunks.push(b);
      this.have += b.length;
      this.pulled += b.length;
    }
    return true;
  }

  async take(n: number): Promise<Buffer | null> {
    if (!(await this.fill(n))) return null;
    const all = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks);
    const rest = all.subarray(n);
    this.chunks = rest.length > 0 ? [rest] : [];
    this.have = rest.length;
    return Buffer.from(all.subarray(0, n));
  }

  async skip(n: number): Promise<boolean> {
    while (n > 0) {
      if (this.have === 0 && !(await this.fill(1))) return false;
      const head = this.chunks[0]!;
      const drop = Math.min(n, head.length);
      if (drop === head.length) this.chunks.shift();
      else this.chunks[0] = head.subarray(drop);
      this.have -= drop;
      n -= drop;
    }
    return true;
  }

  async close(): Promise<void> {
    await this.it.return?.();
  }
}

/**
 * Reads ustar, GNU long names and PAX `path` records (docker writes those for long paths) from a stream, holding only
 * the content of entries `keep` accepts, and stopping (with `cut`) once more than `maxStreamBytes` came in, so an
 * archive of any size costs bounded memory and time. A malformed header or a name outside the archive throws.
 */
export async function readTar(
  source: AsyncIterable<Buffer | string>,
  options: { keep(header: TarHeader): boolean; maxStreamBytes: number },
): Promise<{ entries: ReadEntry[]; cut: boolean }> {
  const reader = new ChunkReader(source);
  const entries: ReadEntry[] = [];
  let longName: string | null = null;
  try {
    for (;;) {
      if (reader.pulled > options.maxStreamBytes) return { entries, cut: true };
      const h = await reader.take(512);
      if (!h || h.every((b) => b === 0)) return { entries, cut: false };
      const rawSize = field(h, 124, 12).trim();
      const size = rawSize === '' ? 0 : /^[0-7]+$/.test(rawSize) ? parseInt(rawSize, 8) : Number.NaN;
      if (!Number.isSafeInteger(size) || size < 0)
        throw new Error('the archive has an entry whose size cannot be read');
      const padded = Math.ceil(size / 512) * 512;
      const flag = String.fromCharCode(h[156]!);
      if (flag === 'L' || flag === 'x') {
        // Metadata records are small; a huge one is a malformed archive.
        if (size > 1024 * 1024) throw new Error('the archive has an oversized name record');
        const body = await reader.take(padded);
        if (!body) throw new Error('the archive ends inside a name record');
        const text = body.subarray(0, size).toString('utf8');
        if (flag === 'L') longName = text.replace(/\0.*$/s, '');
        else longName = /(?:^|\n)\d+ path=([^\n]*)\n/.exec(text)?.[1] ?? longName;
        continue;
      }
      const prefix = field(h, 345, 155);
      const raw = longName ?? (prefix ? `${prefix}/${field(h, 0, 100)}` : field(h, 0, 100));
      longName = null;
      if (flag === 'g') {
        if (!(await reader.skip(padded))) throw new Error('the archive ends inside an entry');
        continue;
      }
      const type = flag === '0' || flag === '\0' ? 'file' : flag === '5' ? 'dir' : flag === '2' ? 'symlink' : 'other';
      const header: TarHeader = { name: checkedName(raw), type, size: type === 'file' ? size : 0 };
      if (type === 'file' && options.keep(header)) {
        const body = await reader.take(padded);
        if (!body) throw new Error('the archive ends inside an entry');
        entries.push({ ...header, content: body.subarray(0, size) });
      } else {
        if (!(await reader.skip(padded))) throw new Error('the archive ends inside an entry');
        entries.push({ ...header, content: null });
      }
    }
  } finally {
    await reader.close();
  }
}
