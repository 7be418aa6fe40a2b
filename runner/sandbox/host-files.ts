import { closeSync, constants, fchmodSync, fchownSync, fstatSync, ftruncateSync, mkdirSync, openSync, readdirSync, readSync, writeSync, type Stats } from 'node:fs';
import { posix } from 'node:path';
import type { FileIn, FileOut } from './types.js';

const { O_RDONLY, O_WRONLY, O_CREAT, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK, O_NOCTTY } = constants;
/** A directory, never through a link. */
const dirFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW;
/** A file to read: never through a link, and a FIFO swapped in cannot block the open. */
const readFlags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY;
const writeFlags = O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY;
/** Bounds on a walk, so a sandbox cannot make collection hold thousands of descriptors or list forever. */
const maxDepth = 64;
const maxEntries = 100_000;

/** The path of `name` inside the directory open as `fd`: Node has no openat, /proc/self/fd gives the same anchoring. */
const at = (fd: number, name: string) => `/proc/self/fd/${fd}/${name}`;

function code(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException).code;
}

function checkName(name: string, path: string): void {
  if (name === '' || name === '.' || name === '..' || name.includes('/') || name.includes('\0')) throw new Error(`${path} has a bad path component`);
}

/**
 * Files of a sandbox whose writable directories live on the host (bwrap), read and written as root. Every path
 * component is opened relative to the descriptor of its parent with O_NOFOLLOW, so a link the sandbox plants, or
 * swaps in while the host walks (a rename race), can never point the host at one of its own files; what is read is
 * checked on the open descriptor, not on the name (docs/security.md, "Reading back from sandboxes").
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
   * The descriptor of the directory `parts` name below the mount, each step without following a link. With `create`,
   * missing directories are made and given to the sandbox's user. Throws ENOENT-coded errors when one is missing.
   */
  private openDir(path: string, host: string, parts: string[], create: boolean): number {
    let fd = openSync(host, dirFlags);
    try {
      for (const part of parts) {
        let next: number;
        try {
          next = openSync(at(fd, part), dirFlags);
        } catch (err) {
          if (code(err) === 'ENOENT' && create) {
            try {
              mkdirSync(at(fd, part), 0o755);
            } catch (made) {
              if (code(made) !== 'EEXIST') throw made;
            }
            next = openSync(at(fd, part), dirFlags);
            fchownSync(next, this.uid, this.uid);
          } else if (code(err) === 'ELOOP' || code(err) === 'ENOTDIR') {
            throw new Error(`${path} goes through something that is not a directory (${part}): a symbolic link is never followed`);
          } else throw err;
        }
        closeSync(fd);
        fd = next;
      }
      return fd;
    } catch (err) {
      closeSync(fd);
      throw err;
    }
  }

  put(files: FileIn[]): void {
    for (const f of files) {
      const { host, parts } = this.split(f.path);
      const name = parts.pop();
      if (name === undefined) throw new Error(`${f.path} is a directory of the sandbox, not a file`);
      const dir = this.openDir(f.path, host, parts, true);
      let fd: number;
      try {
        fd = openSync(at(dir, name), writeFlags, f.mode ?? 0o644);
      } catch (err) {
        if (code(err) === 'ELOOP') throw new Error(`${f.path} is a symbolic link`);
        throw err;
      } finally {
        closeSync(dir);
      }
      try {
        const st = fstatSync(fd);
        if (!st.isFile()) throw new Error(`${f.path} is not a regular file`);
        // A second name of a file the sandbox does not own is never truncated or written.
        if (st.nlink > 1 && st.uid !== this.uid) throw new Error(`${f.path} is a hard link to a file the sandbox does not own`);
        ftruncateSync(fd, 0);
        const content = Buffer.isBuffer(f.content) ? f.content : Buffer.from(f.content);
        for (let off = 0; off < content.length; ) off += writeSync(fd, content, off, content.length - off);
        fchmodSync(fd, f.mode ?? 0o644);
        fchownSync(fd, this.uid, this.uid);
      } finally {
        closeSync(fd);
      }
    }
  }

  /** A regular file's content as the open descriptor sees it; null for anything that is not a readable file. */
  private static content(fd: number, st: Stats, limit: number, path: string): Buffer {
    if (st.size > limit) throw new Error(`${path} is ${st.size} bytes, more than ${limit}`);
    const out = Buffer.alloc(st.size);
    let off = 0;
    while (off < st.size) {
      const n = readSync(fd, out, off, st.size - off, off);
      if (n === 0) break;
      off += n;
    }
    return out.subarray(0, off);
  }

  /** A file the sandbox may hand over: a regular file that is not a second name of a file it does not own. */
  private readable(st: Stats): boolean {
    return st.isFile() && (st.nlink === 1 || st.uid === this.uid);
  }

  read(path: string, maxBytes: number): Buffer | null {
    const { host, parts } = this.split(path);
    const name = parts.pop();
    if (name === undefined) throw new Error(`${path} is a directory`);
    let fd: number;
    try {
      const dir = this.openDir(path, host, parts, false);
      try {
        fd = openSync(at(dir, name), readFlags);
      } finally {
        closeSync(dir);
      }
    } catch (err) {
      if (code(err) === 'ENOENT') return null;
      if (code(err) === 'ELOOP') throw new Error(`${path} is a symbolic link`);
      throw err;
    }
    try {
      const st = fstatSync(fd);
      if (!this.readable(st)) throw new Error(`${path} is not a regular file of the sandbox`);
      return HostFiles.content(fd, st, maxBytes, path);
    } finally {
      closeSync(fd);
    }
  }

  readDir(path: string, maxTotal: number): { files: FileOut[]; truncated: boolean } {
    const { host, parts } = this.split(path);
    let root: number;
    try {
      root = this.openDir(path, host, parts, false);
    } catch (err) {
      if (code(err) === 'ENOENT') return { files: [], truncated: false };
      throw err;
    }
    const files: FileOut[] = [];
    let total = 0;
    let seen = 0;
    let truncated = false;
    const walk = (dir: number, prefix: string, depth: number) => {
      let entries;
      try {
        entries = readdirSync(at(dir, ''), { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1));
      } catch {
        return;
      }
      for (const e of entries) {
        if (++seen > maxEntries) {
          truncated = true;
          return;
        }
        // The entry's type is only a hint of what to skip: what counts is what the descriptor opened below is.
        if (!e.isDirectory() && !e.isFile()) continue;
        let fd: number;
        try {
          fd = openSync(at(dir, e.name), readFlags);
        } catch {
          continue;
        }
        try {
          const st = fstatSync(fd);
          const name = prefix + e.name;
          if (st.isDirectory()) {
            if (depth >= maxDepth) truncated = true;
            else walk(fd, `${name}/`, depth + 1);
          } else if (this.readable(st)) {
            if (truncated || total + st.size > maxTotal) {
              truncated = true;
              continue;
            }
            const content = HostFiles.content(fd, st, maxTotal - total, name);
            total += content.length;
            files.push({ name, size: content.length, content });
          }
        } finally {
          closeSync(fd);
        }
      }
    };
    try {
      walk(root, '', 0);
    } finally {
      closeSync(root);
    }
    return { files, truncated };
  }
}
