import { chownSync, closeSync, constants, fstatSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, readSync, writeFileSync } from 'node:fs';
import { dirname, join, posix, relative, sep } from 'node:path';
import type { FileIn, FileOut } from './types.js';

/**
 * Files of a sandbox whose writable directories live on the host (bwrap). Every path is mapped to the sandbox's own
 * directory and walked without following symlinks, so a link the agent planted cannot point the host elsewhere.
 */
export class HostFiles {
  constructor(
    /** Sandbox path prefix → host directory, e.g. `/workspace` → `<root>/<id>/workspace`. */
    private readonly mounts: Record<string, string>,
    private readonly uid: number,
  ) {}

  resolve(path: string): string {
    const clean = posix.normalize(path);
    for (const [prefix, host] of Object.entries(this.mounts)) {
      if (clean === prefix || clean.startsWith(`${prefix}/`)) {
        const rest = clean.slice(prefix.length).replace(/^\/+/, '');
        const target = join(host, rest);
        let at = host;
        for (const part of rest.split('/').filter(Boolean).slice(0, -1)) {
          at = join(at, part);
          try {
            if (lstatSync(at).isSymbolicLink()) throw new Error(`${path} goes through a symbolic link`);
          } catch (err) {
            if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
          }
        }
        return target;
      }
    }
    throw new Error(`${path} is outside the sandbox's writable directories (${Object.keys(this.mounts).join(', ')})`);
  }

  put(files: FileIn[]): void {
    for (const f of files) {
      const target = this.resolve(f.path);
      const dir = dirname(target);
      const made = mkdirSync(dir, { recursive: true });
      if (made) {
        for (let d = dir; d.length >= made.length; d = dirname(d)) chownSync(d, this.uid, this.uid);
      }
      try {
        if (lstatSync(target).isSymbolicLink()) throw new Error(`${f.path} is a symbolic link`);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      }
      writeFileSync(target, f.content, { mode: f.mode ?? 0o644 });
      chownSync(target, this.uid, this.uid);
    }
  }

  read(path: string, maxBytes: number): Buffer | null {
    let fd: number;
    try {
      fd = openSync(this.resolve(path), constants.O_RDONLY | constants.O_NOFOLLOW);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
    try {
      const size = fstatSync(fd).size;
      if (size > maxBytes) throw new Error(`${path} is ${size} bytes, more than ${maxBytes}`);
      const out = Buffer.alloc(size);
      let off = 0;
      while (off < size) {
        const n = readSync(fd, out, off, size - off, off);
        if (n === 0) break;
        off += n;
      }
      return out.subarray(0, off);
    } finally {
      closeSync(fd);
    }
  }

  readDir(path: string, maxTotal: number): { files: FileOut[]; truncated: boolean } {
    const root = this.resolve(path);
    const files: FileOut[] = [];
    let total = 0;
    let truncated = false;
    const walk = (dir: string) => {
      let entries;
      try {
        entries = readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1));
      } catch {
        return;
      }
      for (const e of entries) {
        const full = join(dir, e.name);
        if (e.isDirectory()) walk(full);
        else if (e.isFile()) {
          const size = lstatSync(full).size;
          if (truncated || total + size > maxTotal) {
            truncated = true;
            continue;
          }
          total += size;
          files.push({ name: relative(root, full).split(sep).join('/'), size, content: readFileSync(full) });
        }
      }
    };
    walk(root);
    return { files, truncated };
  }
}
