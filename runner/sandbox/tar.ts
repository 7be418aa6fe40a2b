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
    if (cut <= 0 || Buffer.byteLength(name.slice(cut + 1)) > 100) throw new Error(`path too long for the archive: ${e.name}`);
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
    const content = e.type === 'file' ? (e.content ?? Buffer.alloc(0)) : Buffer.alloc(0);
    parts.push(header(e, content.length), content, Buffer.alloc((512 - (content.length % 512)) % 512));
  }
  parts.push(Buffer.alloc(1024));
  return Buffer.concat(parts);
}

export interface UnpackedEntry {
  name: string;
  type: 'file' | 'dir' | 'other';
  size: number;
  content: Buffer;
}

const field = (b: Buffer, start: number, len: number) => b.subarray(start, start + len).toString('utf8').replace(/\0.*$/s, '');

/** Reads ustar, GNU long names and PAX `path` records (docker writes those for long paths). */
export function unpack(tar: Buffer): UnpackedEntry[] {
  const out: UnpackedEntry[] = [];
  let off = 0;
  let longName: string | null = null;
  while (off + 512 <= tar.length) {
    const h = tar.subarray(off, off + 512);
    if (h.every((b) => b === 0)) break;
    const size = parseInt(field(h, 124, 12).trim() || '0', 8);
    const flag = String.fromCharCode(h[156]!);
    const body = tar.subarray(off + 512, off + 512 + size);
    off += 512 + Math.ceil(size / 512) * 512;
    if (flag === 'L') {
      longName = body.toString('utf8').replace(/\0.*$/s, '');
      continue;
    }
    if (flag === 'x') {
      const path = /\d+ path=([^\n]*)\n/.exec(body.toString('utf8'))?.[1];
      if (path) longName = path;
      continue;
    }
    if (flag === 'g') continue;
    const prefix = field(h, 345, 155);
    const name = longName ?? (prefix ? `${prefix}/${field(h, 0, 100)}` : field(h, 0, 100));
    longName = null;
    const type = flag === '0' || flag === '\0' ? 'file' : flag === '5' ? 'dir' : 'other';
    out.push({ name, type, size, content: type === 'file' ? Buffer.from(body) : Buffer.alloc(0) });
  }
  return out;
}
