import { auditActorName } from '../domain/audit.js';
import { streams } from '../domain/streams.js';
import { auditActorId, auditEntryOf } from '../projections/audit.js';
import type { AuditEntryDto } from '../schemas/audit.js';
import type { EventStore, Position } from '../store/event-store.js';
import { toAuditEntryDto } from './queries/audit.js';

export interface ExportFilter {
  workspaceId?: string;
  jobId?: string;
  /** At or after (Unix ms). */
  since?: number;
  /** Before (Unix ms). */
  until?: number;
}

/** A line of `svc audit export`: an entry as the API answers it, with its workspace. */
export type ExportedEntry = AuditEntryDto & { workspaceId: string };

const batch = 1000;

/**
 * The audit trail straight from the event log, oldest first (docs/events.md, "Audit trail"), for archiving. It
 * writes entries with the same summaries and display names as the audit read model, so an export does not depend
 * on the read models being current (or a server running), and it never holds more than one batch of events.
 */
export async function* exportAuditTrail(events: EventStore, filter: ExportFilter = {}): AsyncGenerator<ExportedEntry> {
  const names = new Map<string, string>();
  const erased = await erasedWorkspaces(events);
  let after: Position | null = null;
  for (;;) {
    const page = await events.readAll({ after, limit: batch });
    if (page.length === 0) return;
    for (const e of page) {
      const named = auditActorName(e);
      if (named) names.set(auditActorId(named.type, named.id), named.name);
      const doc = auditEntryOf(e);
      if (!doc) continue;
      if (erased.has(doc.workspaceId) && doc.type !== 'WorkspaceErased') continue;
      if (filter.workspaceId !== undefined && doc.workspaceId !== filter.workspaceId) continue;
      if (filter.jobId !== undefined && doc.jobId !== filter.jobId) continue;
      if (filter.since !== undefined && doc.at < filter.since) continue;
      if (filter.until !== undefined && doc.at >= filter.until) continue;
      yield { workspaceId: doc.workspaceId, ...toAuditEntryDto(doc, names) };
    }
    after = page[page.length - 1]!.position;
  }
}

/**
 * Workspaces erased while their events are still in the log (EventStoreDB until its scavenge): their entries are
 * left out but the record of the erasure, as a rebuild of the read models leaves them (docs/design.md, "Workspace
 * erasure"). A store that deletes at once needs no look.
 */
async function erasedWorkspaces(events: EventStore): Promise<Set<string>> {
  if (events.deletesFromLogAtOnce) return new Set();
  const records = await events.readAll({ filter: { streamPrefixes: [`${streams.workspaceErasure.category}-`] } });
  return new Set(records.map((e) => streams.workspaceErasure.keyOf(e.streamId)).filter((k) => k !== null));
}
