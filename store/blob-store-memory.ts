import { Readable } from 'node:stream';
import {
  checkBlobKey,
  checkBlobPrefix,
  refOf,
  toBuffer,
  type BlobInfo,
  type BlobRef,
  type BlobStore,
} from './blob-store.js';

/** Blobs in memory, beside the in-memory SQLite stores that describe the API offline (`svc openapi`). */
export class MemoryBlobStore implements BlobStore {
  readonly kind = 'memory';
  private readonly blobs = new Map<string, Buffer>();

  async put(key: string, content: Buffer | string): Promise<BlobRef> {
    checkBlobKey(key);
    const bytes = Buffer.from(toBuffer(content));
    this.blobs.set(key, bytes);
    return refOf(key, bytes);
  }

  async get(key: string): Promise<Buffer | null> {
    checkBlobKey(key);
    return this.blobs.get(key) ?? null;
  }

  async open(key: string): Promise<{ stream: Readable; bytes: number } | null> {
    const content = await this.get(key);
    return content ? { stream: Readable.from([content]), bytes: content.length } : null;
  }

  async list(prefix: string): Promise<BlobInfo[]> {
    checkBlobPrefix(prefix);
    return [...this.blobs]
      .filter(([key]) => key.startsWith(prefix))
      .map(([key, content]) => ({ key, bytes: content.length }))
      .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  async delete(key: string): Promise<void> {
    checkBlobKey(key);
    this.blobs.delete(key);
  }

  async deletePrefix(prefix: string): Promise<number> {
    const keys = (await this.list(prefix)).map((b) => b.key);
    for (const key of keys) this.blobs.delete(key);
    return keys.length;
  }

  async close(): Promise<void> {}
}
