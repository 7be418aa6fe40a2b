import { MongoClient, MongoServerError, type Collection as MongoCollection, type Db, type Document } from 'mongodb';
import {
  DuplicateKeyError,
  type Collection,
  type CountOptions,
  type Doc,
  type DocumentStore,
  type Filter,
  type FindOptions,
  type IndexOptions,
  type Search,
  type Update,
  type UpdateOptions,
  type UpdateResult,
} from './document-store.js';

const escapeRegex = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

function withSearch(filter: Filter, search: Search | undefined): Document {
  if (!search || search.text === '' || search.fields.length === 0) return filter as Document;
  const regex = { $regex: escapeRegex(search.text), $options: 'i' };
  return { $and: [filter, { $or: search.fields.map((f) => ({ [f]: regex })) }] };
}

function isDuplicate(err: unknown): boolean {
  return err instanceof MongoServerError && err.code === 11000;
}

class MongoDocCollection<T extends Doc> implements Collection<T> {
  constructor(
    private readonly c: MongoCollection<Document>,
    readonly name: string,
  ) {}

  async createIndex(keys: Array<[string, 1 | -1]>, options: IndexOptions = {}): Promise<void> {
    await this.c.createIndex(Object.fromEntries(keys), {
      unique: options.unique ?? false,
      ...(options.name ? { name: options.name } : {}),
    });
  }

  async findOne(filter: Filter, options: Omit<FindOptions, 'limit'> = {}): Promise<T | null> {
    const [doc] = await this.find(filter, { ...options, limit: 1 });
    return doc ?? null;
  }

  /**
   * MongoDB sorts null and missing first when ascending; the port wants them last either way, so sorted reads go
   * through a pipeline that sorts on an "is null" key before each field.
   */
  async find(filter: Filter, options: FindOptions = {}): Promise<T[]> {
    const match = withSearch(filter, options.search);
    const sort = options.sort ?? [];
    const pipeline: Document[] = [{ $match: match }];
    if (sort.length > 0) {
      const helpers: Document = {};
      const order: Document = {};
      sort.forEach(([field, dir], i) => {
        if (field !== '_id') {
          helpers[`__null${i}`] = { $cond: [{ $eq: [{ $ifNull: [`$${field}`, null] }, null] }, 1, 0] };
          order[`__null${i}`] = 1;
        }
        order[field] = dir;
      });
      if (Object.keys(helpers).length > 0) pipeline.push({ $addFields: helpers });
      pipeline.push({ $sort: order });
      if (Object.keys(helpers).length > 0)
        pipeline.push({ $project: Object.fromEntries(Object.keys(helpers).map((k) => [k, 0])) });
    }
    if (options.skip) pipeline.push({ $skip: options.skip });
    if (options.limit !== undefined) pipeline.push({ $limit: options.limit });
    return (await this.c.aggregate(pipeline).toArray()) as T[];
  }

  async count(filter: Filter, options: CountOptions = {}): Promise<number> {
    return this.c.countDocuments(withSearch(filter, options.search));
  }

  async insertOne(doc: T): Promise<void> {
    try {
      await this.c.insertOne(doc as Document);
    } catch (err) {
      if (isDuplicate(err)) throw new DuplicateKeyError(this.name, `_id ${doc._id}`);
      throw err;
    }
  }

  private async run(many: boolean, filter: Filter, update: Update, options: UpdateOptions): Promise<UpdateResult> {
    try {
      const r = many
        ? await this.c.updateMany(filter as Document, update as Document, { upsert: options.upsert ?? false })
        : await this.c.updateOne(filter as Document, update as Document, { upsert: options.upsert ?? false });
      return {
        matched: r.matchedCount,
        modified: r.modifiedCount,
        upsertedId: r.upsertedId === null ? null : String(r.upsertedId),
      };
    } catch (err) {
      if (isDuplicate(err)) throw new DuplicateKeyError(this.name, 'a unique index rejected the update');
      throw err;
    }
  }

  updateOne(filter: Filter, update: Update, options: UpdateOptions = {}): Promise<UpdateResult> {
    return this.run(false, filter, update, options);
  }

  updateMany(filter: Filter, update: Update, options: UpdateOptions = {}): Promise<UpdateResult> {
    return this.run(true, filter, update, options);
  }

  async deleteMany(filter: Filter): Promise<number> {
    return (await this.c.deleteMany(filter as Document)).deletedCount;
  }

  async saveMany(docs: T[]): Promise<void> {
    if (docs.length === 0) return;
    try {
      await this.c.bulkWrite(
        docs.map((doc) => ({
          replaceOne: { filter: { _id: doc._id } as Document, replacement: doc as Document, upsert: true },
        })),
        { ordered: true },
      );
    } catch (err) {
      if (isDuplicate(err)) throw new DuplicateKeyError(this.name, 'a unique index rejected a document');
      throw err;
    }
  }

  async drop(): Promise<void> {
    await this.c.deleteMany({});
  }

  async dropIndexes(): Promise<void> {
    try {
      await this.c.dropIndexes();
    } catch (err) {
      // A collection never written has no indexes to drop ("ns not found").
      if (err instanceof MongoServerError && err.code === 26) return;
      throw err;
    }
  }
}

/** The scaled document store: MongoDB through the official driver, speaking only the port's subset. */
export class MongoDocumentStore implements DocumentStore {
  readonly kind = 'mongodb';

  constructor(
    private readonly client: MongoClient,
    private readonly db: Db,
  ) {}

  collection<T extends Doc = Doc>(name: string): Collection<T> {
    return new MongoDocCollection<T>(this.db.collection(name), name);
  }

  /** A server database: what it keeps of deleted documents on its disk is its own. */
  async flushDeletions(): Promise<void> {}

  async close(): Promise<void> {
    await this.client.close();
  }
}

/** The database is the URL's path (`mongodb://host/svc`), else `dbName`, else `svc`. */
export async function openMongoDocumentStore(url: string, dbName?: string): Promise<MongoDocumentStore> {
  const client = new MongoClient(url, { serverSelectionTimeoutMS: 10_000 });
  await client.connect();
  const fromUrl = /^mongodb(?:\+srv)?:\/\/[^/]+\/([^?]+)/.exec(url)?.[1];
  return new MongoDocumentStore(client, client.db(fromUrl ? decodeURIComponent(fromUrl) : (dbName ?? 'svc')));
}
