import { auditActorName, auditFacts } from '../domain/audit.js';
import { streams } from '../domain/streams.js';
import type { Doc } from '../store/document-store.js';
import type { Actor, RecordedEvent } from '../store/event-store.js';
import type { DocOp, Projector } from './projector.js';

export const auditCollection = 'audit';
export const auditActorsCollection = 'audit_actors';

/** One change of a workspace, as the audit trail lists it (docs/events.md, "Audit trail"). */
export interface AuditDoc extends Doc {
  workspaceId: string;
  /** When the change was decided (the event's metadata), Unix ms. */
  at: number;
  actorType: Actor['type'];
  actorId: string | null;
  type: string;
  summary: string;
  streamId: string;
  revision: number;
  jobId: string | null;
}

/** A display name learnt from the log; kept after its token or user is gone, so old entries still name them. */
export interface AuditActorDoc extends Doc {
  name: string;
  /** The workspace of a token's or run's name, so it goes with the workspace; null for a user's. */
  workspaceId?: string | null;
}

/** Sorts an event after its stream's earlier ones when two share a millisecond. */
export const auditEntryId = (streamId: string, revision: number) => `${streamId}@${String(revision).padStart(10, '0')}`;
export const auditActorId = (type: string, id: string) => `${type}:${id}`;

/** The trail's entry for an event, or null when the event is not one an auditor sees (domain/audit.ts). */
export function auditEntryOf(e: RecordedEvent): AuditDoc | null {
  const facts = auditFacts(e);
  if (!facts) return null;
  return {
    _id: auditEntryId(e.streamId, e.revision),
    workspaceId: facts.workspaceId,
    at: e.metadata.ts,
    actorType: e.metadata.actor.type,
    actorId: e.metadata.actor.id,
    type: e.type,
    summary: facts.summary,
    streamId: e.streamId,
    revision: e.revision,
    jobId: facts.jobId,
  };
}

export const auditProjector: Projector = {
  name: 'audit',
  version: 3,
  collections: [auditCollection, auditActorsCollection],
  // Newest first is how the trail is read: descending indexes serve `-at` pages without sorting the workspace's log.
  // Only the API reads them, so a replay builds them at its end.
  indexes: [
    {
      collection: auditCollection,
      keys: [
        ['workspaceId', 1],
        ['at', -1],
      ],
      afterReplay: true,
    },
    {
      collection: auditCollection,
      keys: [
        ['workspaceId', 1],
        ['jobId', 1],
        ['at', -1],
      ],
      afterReplay: true,
    },
    {
      collection: auditCollection,
      keys: [
        ['workspaceId', 1],
        ['actorType', 1],
        ['at', -1],
      ],
      afterReplay: true,
    },
  ],
  // Every category domain/audit.ts summarises or learns a name from.
  categories: [
    streams.apiToken,
    streams.invite,
    streams.job,
    streams.jobImages,
    streams.jobMcp,
    streams.jobRuns,
    streams.jobSecrets,
    streams.jobState,
    streams.mcpOauth,
    streams.mcpServer,
    streams.membership,
    streams.playbook,
    streams.provider,
    streams.run,
    streams.secret,
    streams.settings,
    streams.user,
    streams.workspace,
    streams.workspaceErasure,
  ],
  project(e: RecordedEvent): DocOp[] {
    const ops: DocOp[] = [];
    // A deleted run's own entries go with its streams, so the trail is what a replay of the log gives; the deletion
    // itself stays, with its actor (docs/events.md, "Deleting a stream").
    const deleted = streams.jobRuns.decode(e);
    if (deleted?.event.type === 'RunDeleted') {
      const runId = deleted.event.data.runId;
      ops.push(
        { kind: 'delete', collection: auditCollection, filter: { streamId: streams.run.id(runId) } },
        { kind: 'delete', collection: auditActorsCollection, filter: { _id: auditActorId('run', runId) } },
      );
    }
    const named = auditActorName(e);
    if (named)
      ops.push({
        kind: 'update',
        collection: auditActorsCollection,
        filter: { _id: auditActorId(named.type, named.id) },
        // A token's or run's name is its workspace's, and goes with it; a user's is the instance's.
        update: { $set: { name: named.name, workspaceId: named.type === 'user' ? null : e.metadata.workspaceId } },
        upsert: true,
      });
    const entry = auditEntryOf(e);
    if (entry) {
      const { _id, ...fields } = entry;
      const doc: Omit<AuditDoc, '_id'> = fields;
      ops.push({
        kind: 'update',
        collection: auditCollection,
        filter: { _id },
        update: { $set: doc as Record<string, never> },
        upsert: true,
      });
    }
    return ops;
  },
};
