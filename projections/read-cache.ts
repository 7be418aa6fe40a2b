import type { ProjectionEngine } from './engine.js';

const maxEntries = 5000;

/**
 * Answers derived from read models, kept until the projection engine changes one of the collections they were
 * read from. Invalidation happens before read-your-writes waiters resolve, so a cached answer is never older than
 * the caller's own write. Only a process whose engine runs sees every change; elsewhere (an api-only process, or a
 * projector standing by for the lease) the cache is off, and an engine that starts drops everything cached before.
 */
export class ReadCache {
  private readonly entries = new Map<string, unknown>();
  private readonly keysOf = new Map<string, Set<string>>();
  /** Bumped on every change: a load that overlapped a change must not be remembered, it may have read the old state. */
  private readonly generation = new Map<string, number>();

  constructor(
    engine: ProjectionEngine,
    private readonly isEnabled: () => boolean,
  ) {
    engine.onChange((collections) => {
      for (const c of collections) {
        this.generation.set(c, (this.generation.get(c) ?? 0) + 1);
        const keys = this.keysOf.get(c);
        if (!keys) continue;
        for (const k of keys) this.entries.delete(k);
        keys.clear();
      }
    });
  }

  get enabled(): boolean {
    return this.isEnabled();
  }

  /** The cached value, without waiting: the hot path of list routes. */
  peek<T>(key: string): T | undefined {
    return this.enabled ? (this.entries.get(key) as T | undefined) : undefined;
  }

  /** The cached value for `key`, else `load()`'s, remembered until one of `collections` changes. */
  async get<T>(collections: string[], key: string, load: () => Promise<T>): Promise<T> {
    if (!this.enabled) return load();
    if (this.entries.has(key)) return this.entries.get(key) as T;
    const before = collections.map((c) => this.generation.get(c) ?? 0);
    const value = await load();
    if (collections.some((c, i) => (this.generation.get(c) ?? 0) !== before[i])) return value;
    // A crude bound: dropping everything is cheaper than tracking recency, and a miss is only slower.
    if (this.entries.size >= maxEntries) {
      this.entries.clear();
      this.keysOf.clear();
    }
    this.entries.set(key, value);
    for (const c of collections) {
      let keys = this.keysOf.get(c);
      if (!keys) this.keysOf.set(c, (keys = new Set()));
      keys.add(key);
    }
    return value;
  }
}
