import type { DocumentStore, Filter, Update } from '../store/document-store.js';
import type { RecordedEvent } from '../store/event-store.js';

/** A document change a projector asks for; the engine applies it. */
export type DocOp =
  | { kind: 'update'; collection: string; filter: Filter; update: Update; upsert?: boolean; many?: boolean }
  | { kind: 'delete'; collection: string; filter: Filter }
  /**
   * Changes computed from other read models, for values one event cannot carry (a job's ten latest runs). It must
   * only read collections of projectors listed before it, and recompute from them, so a replay gives the same result.
   */
  | {
      kind: 'derive';
      collection: string;
      /**
       * `memo` is given in a replay only: what the derive read on a former run, kept by the engine across the replay's
       * pages (`ReplayMemo`). The live feed gives none, and the derive reads the read models.
       */
      derive: (docs: DocumentStore, memo?: ReplayMemo) => Promise<DocOp[]>;
      /**
       * Called in a replay where the derive is issued, before it is deferred (`key`): brings what the derive keeps in
       * `memo` up to date with the change its event made, so a deferred run computes from the memo what it would
       * read. A change it cannot account for must delete its memo entry; the next run then reads the read models.
       */
      observe?: (docs: DocumentStore, memo: ReplayMemo) => Promise<void>;
      /**
       * Names what the derive recomputes (a job's run fields), for a replay to run it once per page instead of once
       * per event: the last one issued with the key runs when the page's events are applied, in the order of their
       * last issue (docs/design.md, "Replay"). Only for a derive that gives the same result run anywhere later in
       * the page: every event that changes what it reads, in a way that changes its result, must issue it again.
       */
      key?: string;
    };

/**
 * What derives keep between their runs during one replay (docs/design.md, "Replay"): a small state per job or per
 * hour, which spares the queries that state answers. Bounded: past `replayMemoEntries` entries the least recently set
 * is forgotten, and a forgotten entry only costs its derive the queries again. The engine empties it when a page is
 * rolled back, and forgets the entries that read a collection when a write to it goes by a filter other than `_id` (a
 * workspace's erasure) and may change a field they read, since no `observe` sees what it did.
 */
export interface ReplayMemo {
  get(key: string): unknown;
  /**
   * `reads`: the fields the value was read from, by collection (top-level names), which `observe` keeps it up to
   * date with. A job's runs renamed (a write of `jobName` to many runs) leaves an entry that reads no name alone.
   */
  set(key: string, value: unknown, reads: MemoReads): void;
  delete(key: string): void;
  /**
   * True while an entry missing stands for documents never written: `collection` was empty as the replay began,
   * every projector replays from the log's start, and no entry has been forgotten since (a job without an entry has
   * had no run). A derive whose `observe` then makes its entry at the first change sees every change.
   */
  fromEmpty(collection: string): boolean;
}

/** The fields a memo entry was read from, by collection. */
export type MemoReads = Readonly<Record<string, readonly string[]>>;

export interface IndexSpec {
  collection: string;
  keys: Array<[string, 1 | -1]>;
  unique?: boolean;
  /**
   * Built once a replay that started from an empty read model ends, instead of kept up to date by every write of it
   * (docs/design.md, "Replay"). Only for indexes no projector's own filter (a `derive`'s query, a many-document update
   * or delete) reads, and never for a unique one: those must hold while the replay writes.
   */
  afterReplay?: boolean;
}

/**
 * A projector is a pure mapping from an event to document changes. Every change must be idempotent (set values
 * derived from the event, never blind increments) because a crash between applying and checkpointing replays it.
 */
export interface Projector {
  name: string;
  /** Bumped when the mapping changes; a stored checkpoint of another version triggers a rebuild at start. */
  version: number;
  collections: string[];
  indexes: IndexSpec[];
  /**
   * The stream categories whose events `project` maps (`streams.run`, ...). The engine offers the projector no event
   * of another category, live or in a replay, and a replay reads from the log only the categories some projector
   * names (docs/design.md, "Replay"): most of a log is run timelines, which no read model maps. Absent: every event.
   */
  categories?: ReadonlyArray<{ readonly category: string }>;
  project(event: RecordedEvent): DocOp[];
}
