import { constants, type Stats } from 'node:fs';
import { mkdir, open, readdir, type FileHandle } from 'node:fs/promises';
import { posix } from 'node:path';
import type { FileIn, FileOut } from './types.js';

const { O_RDONLY, O_WRONLY, O_CREAT, O_EXCL, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK, O_NOCTTY } = constants;
/** A directory, never through a link. */
const dirFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW;
/** A file to read: never through a link, and a FIFO swapped in cannot block the open. */
const readFlags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY;
const writeFlags = O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY;
/** Bounds on a walk, so a sandbox cannot make collection hold thousands of descriptors or list forever. */
const maxDepth = 32;
const maxEntries = 100_000;
/** Entries of a directory opened and read at once: the thread pool works on several files while the walk goes on. */
const batch = 8;

/** The path of `name` inside the directory open as `dir`: Node has no openat, /proc/self/fd gives the same anchoring. */
const at = (dir: FileHandle, name: string) => `/proc/self/fd/${dir.fd}/${name}`;

function code(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException).code;
}

function checkName(name: string, path: string): void {
  if (name === '' || name === '.' || name === '..' || name.includes('/') || name.includes('\0'))
    throw new Error(`${path} has a bad path component`);
}

/**
 * Files of a sandbox whose writable directories live on the host (bwrap), read and written as root. Every path
 * component is opened relative to the descriptor of its parent with O_NOFOLLOW, so a link the sandbox plants, or
 * swaps in while the host walks (a rename race), can never point the host at one of its own files; what is read is
 * checked on the open descriptor, not on the name (docs/security.md, "Reading back from sandboxes"). Everything is
 * asynchronous: a sandbox with a hundred thousand files must not hold the event loop the API shares.
 */
export class HostFiles {
  constructor(
    /** Sandbox path prefix → host directory, e.g. `/workspace` → `<root>/<id>/workspace`. */
    private readonly mounts: Record<string, string>,
    private readonly uid: number,
  ) {}

  /** The host directory of the mount `path` is in, and the components below it. */
  private split(path: string): { host: string; parts: string[] } {
    if (!path.startsWith('/')) throw new Error(`${path} is not an absolute path`);
    const clean = posix.normalize(path);
    for (const [prefix, host] of Object.entries(this.mounts)) {
      if (clean === prefix || clean.startsWith(`${prefix}/`)) {
        const parts = clean.slice(prefix.length).split('/').filter(Boolean);
        for (const p of parts) checkName(p, path);
        return { host, parts };
      }
    }
    throw new Error(`${path} is outside the sandbox's writable directories (${Object.keys(this.mounts).join(', ')})`);
  }

  /**
   * The directory `parts` name below the mount, each step opened without following a link. With `create`, missing
   * directories are made and given to the sandbox's user. Rejects with an ENOENT-coded error when one is missing.
   */
  private async openDir(path: string, host: string, parts: string[], create: boolean): Promise<FileHandle> {
    let dir = await open(host, dirFlags);
    try {
      for (const part of parts) {
        let next: FileHandle;
        try {
          next = await open(at(dir, part), dirFlags);
        } catch (err) {
          if (code(err) === 'ENOENT' && create) {
            try {
              await mkdir(at(dir, part), 0o755);
            } catch (made) {
              if (code(made) !== 'EEXIST') throw made;
            }
            next = await open(at(dir, part), dirFlags);
            await next.chown(this.uid, this.uid);
          } else if (code(err) === 'ELOOP' || code(err) === 'ENOTDIR') {
            throw new Error(
              `${path} goes through something that is not a directory (${part}): a symbolic link is never followed`,
            );
          } else throw err;
        }
        await dir.close();
        dir = next;
        if (!this.owned(await dir.stat()))
          throw new Error(`${path} goes through a directory the sandbox does not own (${part})`);
      }
      return dir;
    } catch (err) {
      await dir.close();
      throw err;
    }
  }

  async put(files: FileIn[]): Promise<void> {
    for (const f of files) {
      const { host, parts } = this.split(f.path);
      const name = parts.pop();
      if (name === undefined) throw new Error(`${f.path} is a directory of the sandbox, not a file`);
      const dir = await this.openDir(f.path, host, parts, true);
      let file: FileHandle;
      let created = true;
      try {
        // A new file is the host's own until it is given away; an existing one is opened without creating.
        file = await open(at(dir, name), writeFlags | O_CREAT | O_EXCL, f.mode ?? 0o644).catch(async (err: unknown) => {
          if (code(err) !== 'EEXIST') throw err;
          created = false;
          return open(at(dir, name), writeFlags);
        });
      } catch (err) {
        if (code(err) === 'ELOOP') throw new Error(`${f.path} is a symbolic link`);
        throw err;
      } finally {
        await dir.close();
      }
      try {
        const st = await file.stat();
        if (!st.isFile()) throw new Error(`${f.path} is not a regular file`);
        // Whatever the sandbox can make is its own: a file of anyone else (a hard link to one) is never truncated.
        if (!created && !this.owned(st)) throw new Error(`${f.path} is a file the sandbox does not own`);
        await file.chown(this.uid, this.uid);
        await file.truncate(0);
        await file.writeFile(Buffer.isBuffer(f.content) ? f.content : Buffer.from(f.content));
        await file.chmod(f.mode ?? 0o644);
      } finally {
        await file.close();
      }
    }
  }

  /** A regular file's content as the open descriptor sees it, at most its size when it was checked. */
  private static async content(file: FileHandle, st: Stats, limit: number, path: string): Promise<Buffer> {
    if (st.size > limit) throw new Error(`${path} is ${st.size} bytes, more than ${limit}`);
    // Only the bytes read are answered, so the buffer need not be zeroed first.
    const out = Buffer.allocUnsafe(st.size);
    let off = 0;
    while (off < st.size) {
      const { bytesRead } = await file.read(out, off, st.size - off, off);
      if (bytesRead === 0) break;
      off += bytesRead;
    }
    return out.subarray(0, off);
  }

  /**
   * Everything a sandbox creates belongs to its one host uid (its root included), and so does what the host puts in
   * it, so anything else found inside (a hard link to a host file, whatever a link might have led to) is not the
   * sandbox's to hand over: a second line behind the no-follow opens.
   */
  private owned(st: Stats): boolean {
    return st.uid === this.uid;
  }

  /** A file the sandbox may hand over: a regular file of its own. */
  private readable(st: Stats): boolean {
    return st.isFile() && this.owned(st);
  }

  async read(path: string, maxBytes: number): Promise<Buffer | null> {
    const { host, parts } = this.split(path);
    const name = parts.pop();
    if (name === undefined) throw new Error(`${path} is a directory`);
    let file: FileHandle;
    try {
      const dir = await this.openDir(path, host, parts, false);
      try {
        file = await open(at(dir, name), readFlags);
      } finally {
        await dir.close();
      }
    } catch (err) {
      if (code(err) === 'ENOENT') return null;
      if (code(err) === 'ELOOP') throw new Error(`${path} is a symbolic link`);
      throw err;
    }
    try {
      const st = await file.stat();
      if (!this.readable(st)) throw new Error(`${path} is not a regular file of the sandbox`);
      return await HostFiles.content(file, st, maxBytes, path);
    } finally {
      await file.close();
    }
  }

  async readDir(path: string, maxTotal: number): Promise<{ files: FileOut[]; truncated: boolean }> {
    const { host, parts } = this.split(path);
    let root: FileHandle;
    try {
      root = await this.openDir(path, host, parts, false);
    } catch (err) {
      if (code(err) === 'ENOENT') return { files: [], truncated: false };
      throw err;
    }
    const files: FileOut[] = [];
    let total = 0;
    let seen = 0;
    let truncated = false;
    const walk = async (dir: FileHandle, prefix: string, depth: number): Promise<void> => {
      let entries;
      try {
        entries = (await readdir(at(dir, ''), { withFileTypes: true })).sort((a, b) => (a.name < b.name ? -1 : 1));
      } catch {
        return;
      }
      if (seen + entries.length > maxEntries) {
        truncated = true;
        entries = entries.slice(0, Math.max(0, maxEntries - seen));
      }
      seen += entries.length;
      // The entry's type is only a hint of what to skip: what counts is what the descriptor opened below is.
      const wanted = entries.filter((e) => e.isDirectory() || e.isFile());
      for (let i = 0; i < wanted.length; i += batch) {
        const opened = await Promise.all(
          wanted.slice(i, i + batch).map(async (e) => {
            try {
              const file = await open(at(dir, e.name), readFlags);
              try {
                return { name: prefix + e.name, file, st: await file.stat() };
              } catch {
                await file.close();
                return null;
              }
            } catch {
              return null;
            }
          }),
        );
        try {
          const reads: Array<Promise<void>> = [];
          // In name order, a directory's files before the next entry's: the cap keeps a prefix of the path order.
          for (const o of opened) {
            if (!o) continue;
            if (o.st.isDirectory()) {
              if (!this.owned(o.st)) continue;
              if (depth >= maxDepth) truncated = true;
              else await walk(o.file, `${o.name}/`, depth + 1);
            } else if (this.readable(o.st)) {
              if (truncated || total + o.st.size > maxTotal) {
                truncated = true;
                continue;
              }
              total += o.st.size;
              const out: FileOut = { name: o.name, size: 0, content: Buffer.alloc(0) };
              files.push(out);
              reads.push(
                HostFiles.content(o.file, o.st, o.st.size, o.name).then((content) => {
                  out.content = content;
                  out.size = content.length;
                }),
              );
            }
          }
          await Promise.all(reads);
        } finally {
          await Promise.all(opened.map(async (o) => o?.file.close()));
        }
      }
    };
    try {
      await walk(root, '', 0);
    } finally {
      await root.close();
    }
    return { files, truncated };
  }
}
