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
      derive: (docs: DocumentStore) => Promise<DocOp[]>;
      /**
       * Names what the derive recomputes (a job's run fields), for a replay to run it once per page instead of once
       * per event: the last one issued with the key runs when the page's events are applied, in the order of their
       * last issue (docs/design.md, "Replay"). Only for a derive that gives the same result run anywhere later in
       * the page: every event that changes what it reads, in a way that changes its result, must issue it again.
       */
      key?: string;
    };

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
