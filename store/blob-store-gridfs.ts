import { GridFSBucket, MongoClient, type Collection, type Db, type GridFSFile } from 'mongodb';
import type { Readable } from 'node:stream';
import {
  checkBlobKey,
  checkBlobPrefix,
  refOf,
  toBuffer,
  type BlobInfo,
  type BlobRef,
  type BlobStore,
} from './blob-store.js';

const escapeRegex = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * The scaled blob store: GridFS in the MongoDB database of the read models (bucket `blobs`), so replicas on several
 * hosts share artifacts and payloads without a shared volume. A key is a file name; a `put` uploads a new file under
 * it and then removes the older ones, and readers take the newest, so a reader sees one whole version.
 */
export class GridFsBlobStore implements BlobStore {
  readonly kind = 'gridfs';
  private readonly bucket: GridFSBucket;
  private readonly files: Collection<GridFSFile>;
  private indexed: Promise<unknown> | null = null;

  constructor(
    private readonly client: MongoClient | null,
    db: Db,
    bucketName = 'blobs',
  ) {
    this.bucket = new GridFSBucket(db, { bucketName });
    this.files = db.collection<GridFSFile>(`${bucketName}.files`);
  }

  private ready(): Promise<unknown> {
    // The driver makes its own index on the first upload; listing by prefix and reading the newest need this one.
    this.indexed ??= this.files.createIndex({ filename: 1, uploadDate: -1 });
    return this.indexed;
  }

  private async newest(key: string): Promise<GridFSFile | null> {
    await this.ready();
    const [file] = await this.bucket.find({ filename: key }, { sort: { uploadDate: -1, _id: -1 }, limit: 1 }).toArray();
    return file ?? null;
  }

  async put(key: string, content: Buffer | string): Promise<BlobRef> {
    checkBlobKey(key);
    await this.ready();
    const bytes = toBuffer(content);
    const upload = this.bucket.openUploadStream(key);
    await new Promise<void>((resolve, reject) => {
      upload.once('error', reject);
      upload.once('finish', () => resolve());
      upload.end(bytes);
    });
    // Older versions go once the new one is whole; a crash between leaves them, and readers take the newest. Two
    // racing puts each remove only what is strictly older than their own upload, so one of them always stays.
    const [mine] = await this.bucket.find({ _id: upload.id }).toArray();
    if (mine) {
      const older = await this.bucket
        .find({
          filename: key,
          $or: [{ uploadDate: { $lt: mine.uploadDate } }, { uploadDate: mine.uploadDate, _id: { $lt: mine._id } }],
        })
        .toArray();
      for (const f of older) await this.deleteFile(f);
    }
    return refOf(key, bytes);
  }

  private async deleteFile(f: GridFSFile): Promise<void> {
    try {
      await this.bucket.delete(f._id);
    } catch (err) {
      // Another replica removed it first: the outcome is the same.
      if (!(err instanceof Error && /not found/i.test(err.message))) throw err;
    }
  }

  async get(key: string): Promise<Buffer | null> {
    const opened = await this.open(key);
    if (!opened) return null;
    const chunks: Buffer[] = [];
    for await (const chunk of opened.stream) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  }

  async open(key: string): Promise<{ stream: Readable; bytes: number } | null> {
    checkBlobKey(key);
    const file = await this.newest(key);
    if (!file) return null;
    return { stream: this.bucket.openDownloadStream(file._id), bytes: file.length };
  }

  async list(prefix: string): Promise<BlobInfo[]> {
    checkBlobPrefix(prefix);
    await this.ready();
    const files = await this.bucket
      .find({ filename: { $regex: `^${escapeRegex(prefix)}` } }, { sort: { filename: 1, uploadDate: -1 } })
      .toArray();
    const out: BlobInfo[] = [];
    for (const f of files) if (out.at(-1)?.key !== f.filename) out.push({ key: f.filename, bytes: f.length });
    return out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  async delete(key: string): Promise<void> {
    checkBlobKey(key);
    for (const f of await this.bucket.find({ filename: key }).toArray()) await this.deleteFile(f);
  }

  async deletePrefix(prefix: string): Promise<number> {
    checkBlobPrefix(prefix);
    const files = await this.bucket.find({ filename: { $regex: `^${escapeRegex(prefix)}` } }).toArray();
    for (const f of files) await this.deleteFile(f);
    return new Set(files.map((f) => f.filename)).size;
  }

  async close(): Promise<void> {
    await this.client?.close();
  }
}

/** The database is the URL's path (`mongodb://host/svc`), else `dbName`, else `svc`, as for the document store. */
export async function openGridFsBlobStore(url: string, dbName?: string, bucketName?: string): Promise<GridFsBlobStore> {
  const client = new MongoClient(url, { serverSelectionTimeoutMS: 10_000 });
  await client.connect();
  const fromUrl = /^mongodb(?:\+srv)?:\/\/[^/]+\/([^?]+)/.exec(url)?.[1];
  return new GridFsBlobStore(client, client.db(fromUrl ? decodeURIComponent(fromUrl) : (dbName ?? 'svc')), bucketName);
}
