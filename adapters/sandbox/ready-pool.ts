import { ignoreFailure } from '../../domain/ignore-failure.js';

/** What a pool holds: something started ahead of its use, that can tell whether it is still alive. */
export interface Poolable {
  readonly alive: boolean;
}

export interface ReadyPoolOptions {
  /** Ready ones kept per key. */
  perKey: number;
  /** Keys (disk sizes) kept, by last use; an older key's ready ones are discarded. */
  keysKept: number;
  /** A ready one not taken for this long is discarded and not replaced until its key is asked for again. */
  idleMs: number;
  /** A refill starts this long after a take, so that its processes do not land on the run that took one. */
  delayMs: number;
}

interface Entry<T> {
  item: T;
  /** The idle end's timer, while the entry is listed. */
  expiry?: NodeJS.Timeout;
}

/**
 * Things started ahead of their use (docs/design.md, "Sandbox provisioning"): each is handed out once and never
 * again, refilled in the background after a take, bounded per key and in keys, and discarded when unused. `start`
 * makes one; `discard` ends one that will not be handed out.
 */
export class ReadyPool<T extends Poolable> {
  private readonly ready = new Map<number, Array<Entry<T>>>();
  private readonly filling = new Map<number, Promise<void>>();
  private readonly recent: number[] = [];
  /** Refills waiting for their delay. */
  private readonly timers = new Set<NodeJS.Timeout>();
  /** Idle ends of ready ones. */
  private readonly expiries = new Set<NodeJS.Timeout>();
  private closed = false;

  constructor(
    private readonly start: (key: number) => Promise<T>,
    private readonly discard: (item: T) => Promise<void>,
    private readonly options: ReadyPoolOptions,
  ) {}

  /** A ready one for `key`, now or null; either way the key is refilled later. */
  take(key: number): T | null {
    this.touch(key);
    const list = this.ready.get(key) ?? [];
    let found: T | null = null;
    while (!found && list.length) {
      const { item } = this.unlist(list.shift()!);
      if (item.alive) found = item;
      else this.drop(item);
    }
    this.later(() => this.fill(key), this.options.delayMs);
    return found;
  }

  /** Fills `key` now, ahead of any take (a size the service expects to be asked for). */
  want(key: number): void {
    this.touch(key);
    this.fill(key);
  }

  /** Resolves when no refill is running or scheduled: every key in use has its ready ones (for benchmarks, tests). */
  async settled(): Promise<void> {
    while (this.filling.size || this.timers.size) {
      await Promise.all([...this.filling.values()]);
      if (this.timers.size) await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** How many are ready now, over every key. */
  get size(): number {
    let n = 0;
    for (const list of this.ready.values()) n += list.length;
    return n;
  }

  /** Discards every ready one and starts no more. */
  async close(): Promise<void> {
    this.closed = true;
    for (const t of [...this.timers, ...this.expiries]) clearTimeout(t);
    this.timers.clear();
    this.expiries.clear();
    await Promise.all([...this.filling.values()]);
    const all = [...this.ready.values()].flat();
    this.ready.clear();
    await Promise.all(all.map(({ item }) => this.discard(item).catch(ignoreFailure('closing: nothing waits on it'))));
  }

  private later(f: () => void, ms: number, set = this.timers): NodeJS.Timeout | undefined {
    if (this.closed) return undefined;
    const t = setTimeout(() => {
      set.delete(t);
      f();
    }, ms);
    t.unref();
    set.add(t);
    return t;
  }

  /**
   * An entry leaving the list: its idle end is cleared with it, or the timer would hold the sandbox it names (its
   * process, sockets, buffers) for the whole idle time after a run took it (docs/performance.md, "After the merge:
   * the page cache at SQLite's default").
   */
  private unlist(entry: Entry<T>): Entry<T> {
    if (entry.expiry) {
      clearTimeout(entry.expiry);
      this.expiries.delete(entry.expiry);
    }
    return entry;
  }

  private touch(key: number): void {
    const at = this.recent.indexOf(key);
    if (at >= 0) this.recent.splice(at, 1);
    this.recent.unshift(key);
    for (const old of this.recent.splice(this.options.keysKept)) {
      for (const entry of this.ready.get(old)?.splice(0) ?? []) this.drop(this.unlist(entry).item);
    }
  }

  private drop(item: T): void {
    this.discard(item).catch(ignoreFailure('a discarded ready one left behind is swept at the next start'));
  }

  private fill(key: number): void {
    if (this.closed || this.filling.has(key)) return;
    const run = (async () => {
      const list = this.ready.get(key) ?? [];
      this.ready.set(key, list);
      while (!this.closed && list.length < this.options.perKey && this.recent.includes(key)) {
        const item = await this.start(key);
        if (this.closed || !this.recent.includes(key)) {
          this.drop(item);
          break;
        }
        const entry: Entry<T> = { item };
        list.push(entry);
        entry.expiry = this.later(() => this.expire(key, entry), this.options.idleMs, this.expiries);
      }
    })()
      .catch(ignoreFailure('the next create of this key takes the slow path and reports any error there'))
      .finally(() => this.filling.delete(key));
    this.filling.set(key, run);
  }

  private expire(key: number, entry: Entry<T>): void {
    const list = this.ready.get(key);
    const at = list?.indexOf(entry) ?? -1;
    if (at < 0) return;
    list!.splice(at, 1);
    this.drop(entry.item);
  }
}
