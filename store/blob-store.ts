import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';

/**
 * What a stored blob is known by in an event: its key, the SHA-256 of its bytes (hex) and its length. A reader that
 * holds a reference checks the bytes it gets against the hash (docs/design.md, "Large payloads out of line").
 */
export interface BlobRef {
  key: string;
  sha256: string;
  bytes: number;
}

export interface BlobInfo {
  key: string;
  bytes: number;
}

/**
 * The third port beside events and documents: large bytes kept out of the log and the read models (artifacts, whole
 * timeline payloads, candidate scripts, build logs, event payloads over the inline limit). Keys are paths of
 * `/`-separated segments (`runs/<id>/artifacts/report.csv`); a prefix given to `list` or `deletePrefix` ends with `/`,
 * so `runs/ab/` never matches `runs/abc/`. A `put` replaces the key's bytes whole: a reader sees the old bytes or the
 * new ones, never a mix.
 */
export interface BlobStore {
  /** `files` (the data directory) or `gridfs` (MongoDB). */
  readonly kind: string;
  put(key: string, content: Buffer | string): Promise<BlobRef>;
  /** The bytes, or null when the key holds nothing. */
  get(key: string): Promise<Buffer | null>;
  /** The bytes as a stream with their length, or null: for downloads that should not be held in memory. */
  open(key: string): Promise<{ stream: Readable; bytes: number } | null>;
  /** Every blob under the prefix, by key (code-point order). */
  list(prefix: string): Promise<BlobInfo[]>;
  /** Removing a missing key is not an error. */
  delete(key: string): Promise<void>;
  /** Removes every blob under the prefix; answers how many went. */
  deletePrefix(prefix: string): Promise<number>;
  close(): Promise<void>;
}

/** A blob whose bytes no longer match the hash its reference recorded, or that is gone while its event is not. */
export class BlobIntegrityError extends Error {
  constructor(
    readonly key: string,
    reason: string,
  ) {
    super(`blob ${key} ${reason}`);
    this.name = 'BlobIntegrityError';
  }
}

export const sha256Hex = (content: Buffer) => createHash('sha256').update(content).digest('hex');

export function refOf(key: string, content: Buffer): BlobRef {
  return { key, sha256: sha256Hex(content), bytes: content.length };
}

/**
 * Refuses a key that is not a clean relative path: an empty, `.` or `..` segment, a NUL, or more than 1,024
 * characters. Segments may hold anything else (a run's output files are named by the job).
 */
export function checkBlobKey(key: string): string[] {
  const segments = key.split('/');
  if (key.length === 0 || key.length > 1024 || key.includes('\0'))
    throw new Error(`not a blob key: ${JSON.stringify(key)}`);
  for (const s of segments)
    if (s === '' || s === '.' || s === '..') throw new Error(`not a blob key: ${JSON.stringify(key)}`);
  return segments;
}

export function checkBlobPrefix(prefix: string): void {
  if (!prefix.endsWith('/')) throw new Error(`a blob prefix ends with "/": ${JSON.stringify(prefix)}`);
  checkBlobKey(prefix.slice(0, -1));
}

/** The bytes of a reference, checked against its hash; a missing blob or another hash is a `BlobIntegrityError`. */
export async function readRef(blobs: Pick<BlobStore, 'get'>, ref: BlobRef): Promise<Buffer> {
  const content = await blobs.get(ref.key);
  if (!content) throw new BlobIntegrityError(ref.key, 'is missing');
  if (content.length !== ref.bytes || sha256Hex(content) !== ref.sha256)
    throw new BlobIntegrityError(ref.key, 'does not match the sha256 its reference recorded');
  return content;
}

export const toBuffer = (content: Buffer | string) =>
  typeof content === 'string' ? Buffer.from(content, 'utf8') : content;
