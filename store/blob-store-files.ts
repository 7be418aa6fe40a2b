import { randomUUID } from 'node:crypto';
import { createReadStream, type Dirent } from 'node:fs';
import { mkdir, open, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { join, relative, resolve, sep } from 'node:path';
import {
  checkBlobKey,
  checkBlobPrefix,
  refOf,
  toBuffer,
  type BlobInfo,
  type BlobRef,
  type BlobStore,
} from './blob-store.js';

const notFound = (err: unknown) =>
  err instanceof Error &&
  ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ENOTDIR');

/**
 * The embedded blob store: one file per key under the data directory, at the key's own path (`runs/<id>/…`,
 * `images/<id>/build.log`), which is where the service kept these files before the port existed, so older data reads
 * as it is. A write goes to `.blob-tmp/` first and is renamed into place, so a reader never sees half of it.
 */
export class FileBlobStore implements BlobStore {
  readonly kind = 'files';
  private readonly tmp: string;

  constructor(private readonly root: string) {
    this.root = resolve(root);
    this.tmp = join(this.root, '.blob-tmp');
  }

  private path(key: string): string {
    const target = resolve(this.root, ...checkBlobKey(key));
    // checkBlobKey already refuses `..`; this keeps the rule local to the one place a path is made.
    if (!target.startsWith(this.root + sep)) throw new Error(`blob key leaves the store: ${key}`);
    return target;
  }

  async put(key: string, content: Buffer | string): Promise<BlobRef> {
    const bytes = toBuffer(content);
    const target = this.path(key);
    await mkdir(this.tmp, { recursive: true });
    await mkdir(join(target, '..'), { recursive: true });
    const temp = join(this.tmp, randomUUID());
    const handle = await open(temp, 'w');
    try {
      await handle.writeFile(bytes);
      // A reference is appended to the log right after: the bytes must survive a crash that the event survives.
      await handle.sync();
    } finally {
      await handle.close();
    }
    try {
      await rename(temp, target);
    } catch (err) {
      await rm(temp, { force: true });
      throw err;
    }
    return refOf(key, bytes);
  }

  async get(key: string): Promise<Buffer | null> {
    try {
      return await readFile(this.path(key));
    } catch (err) {
      if (notFound(err) || (err as NodeJS.ErrnoException).code === 'EISDIR') return null;
      throw err;
    }
  }

  async open(key: string): Promise<{ stream: ReturnType<typeof createReadStream>; bytes: number } | null> {
    const file = this.path(key);
    try {
      const s = await stat(file);
      if (!s.isFile()) return null;
      return { stream: createReadStream(file), bytes: s.size };
    } catch (err) {
      if (notFound(err)) return null;
      throw err;
    }
  }

  async list(prefix: string): Promise<BlobInfo[]> {
    checkBlobPrefix(prefix);
    const base = this.path(prefix.slice(0, -1));
    let entries: Dirent[];
    try {
      entries = (await readdir(base, { recursive: true, withFileTypes: true })) as Dirent[];
    } catch (err) {
      if (notFound(err)) return [];
      throw err;
    }
    const out: BlobInfo[] = [];
    for (const d of entries) {
      if (!d.isFile()) continue;
      const full = join(d.parentPath ?? d.path, d.name);
      const key = prefix + relative(base, full).split(sep).join('/');
      out.push({ key, bytes: (await stat(full)).size });
    }
    return out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  async delete(key: string): Promise<void> {
    await rm(this.path(key), { force: true });
  }

  async deletePrefix(prefix: string): Promise<number> {
    const count = (await this.list(prefix)).length;
    await rm(this.path(prefix.slice(0, -1)), { recursive: true, force: true });
    return count;
  }

  async close(): Promise<void> {}
}
