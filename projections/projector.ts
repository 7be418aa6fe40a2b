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
  | { kind: 'derive'; collection: string; derive: (docs: DocumentStore) => Promise<DocOp[]> };

export interface IndexSpec {
  collection: string;
  keys: Array<[string, 1 | -1]>;
  unique?: boolean;
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
  project(event: RecordedEvent): DocOp[];
}
