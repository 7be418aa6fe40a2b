import type { Doc, DocumentStore } from '../store/document-store.js';
import type { EventStore, Position } from '../store/event-store.js';
import { ProjectionEngine, type EngineLogger, type ReplayProgress } from './engine.js';
import type { Projector } from './projector.js';

/** One way a live read model differs from the one its events give. */
export interface ProjectionDifference {
  projector: string;
  collection: string;
  /** The document's `_id`; null for a difference of the whole read model (a projector behind the log). */
  documentId: string | null;
  problem: string;
}

const page = 1000;
const maxPerCollection = 20;

/** JSON with sorted keys, so two documents with the same content compare equal whatever order fields were set in. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

function differingFields(live: Doc, replayed: Doc): string[] {
  const keys = new Set([...Object.keys(live), ...Object.keys(replayed)]);
  return [...keys].filter((k) => canonical(live[k]) !== canonical(replayed[k])).sort();
}

/** Every document of a collection, by id, one page at a time. */
async function* documents(docs: DocumentStore, collection: string): AsyncGenerator<Doc> {
  for (let skip = 0; ; skip += page) {
    const batch = await docs.collection(collection).find({}, { sort: [['_id', 1]], skip, limit: page });
    yield* batch;
    if (batch.length < page) return;
  }
}

/**
 * Replays the whole log into `scratch` (an empty document store) with every projector and compares each of their
 * collections with `live`, document by document (docs/events.md, "Verifying the read models"). The read models are
 * what the events say exactly when this answers no difference. A live projector whose checkpoint is not at the
 * log's head is reported too: its read model cannot be compared (stop the server, or let it catch up, first).
 */
export async function verifyProjections(
  events: EventStore,
  live: DocumentStore,
  scratch: DocumentStore,
  projectors: Projector[],
  log: EngineLogger,
  onProgress?: (progress: ReplayProgress) => void,
): Promise<ProjectionDifference[]> {
  const head = await events.headPosition();
  const liveStatus = await new ProjectionEngine(events, live, projectors, log).storedStatus();
  await new ProjectionEngine(events, scratch, projectors, log).replay(onProgress);
  const out: ProjectionDifference[] = [];
  for (const p of projectors) {
    const status = liveStatus.find((s) => s.name === p.name);
    const position = status?.position ?? null;
    const behind = head !== null && (position === null || events.comparePositions(position as Position, head) < 0);
    if (behind) {
      out.push({
        projector: p.name,
        collection: p.collections.join(', '),
        documentId: null,
        problem: `the live read model is not at the end of the log (checkpoint ${position ?? 'none'}, log at ${head ?? 'empty'})`,
      });
    }
    for (const collection of p.collections) out.push(...(await compare(p.name, collection, live, scratch)));
  }
  return out;
}

/** Walks both collections in id order, like a merge, so neither is held in memory whole. */
async function compare(
  projector: string,
  collection: string,
  live: DocumentStore,
  scratch: DocumentStore,
): Promise<ProjectionDifference[]> {
  const out: ProjectionDifference[] = [];
  const a = documents(live, collection);
  const b = documents(scratch, collection);
  let x = await a.next();
  let y = await b.next();
  let more = 0;
  const add = (documentId: string, problem: string) => {
    if (out.length < maxPerCollection) out.push({ projector, collection, documentId, problem });
    else more++;
  };
  while (!x.done || !y.done) {
    if (!x.done && (y.done || x.value._id < y.value._id)) {
      add(x.value._id, 'in the live read model, but the events give no such document');
      x = await a.next();
    } else if (!y.done && (x.done || y.value._id < x.value._id)) {
      add(y.value._id, 'missing from the live read model');
      y = await b.next();
    } else if (!x.done && !y.done) {
      const fields = differingFields(x.value, y.value);
      if (fields.length > 0) add(x.value._id, `fields differ from what the events give: ${fields.join(', ')}`);
      x = await a.next();
      y = await b.next();
    }
  }
  if (more > 0) out.push({ projector, collection, documentId: null, problem: `and ${more} more differing documents` });
  return out;
}
