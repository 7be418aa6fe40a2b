import type { ActorType } from '../../domain/audit.js';
import {
  auditActorId,
  auditActorsCollection,
  auditCollection,
  type AuditActorDoc,
  type AuditDoc,
} from '../../projections/audit.js';
import type { AuditEntryDto } from '../../schemas/audit.js';
import type { DocumentStore, Filter } from '../../store/document-store.js';
import type { JobQueries } from './jobs.js';
import type { Page, PageRequest } from './list.js';

export interface AuditFilter {
  jobIds?: readonly string[];
  actorTypes?: readonly ActorType[];
  actorId?: string;
  types?: readonly string[];
  /** At or after (ms). */
  from?: number;
  /** Before (ms). */
  to?: number;
}

/** The document key a name of this actor is kept under, if actors of its kind have names. */
function nameKey(type: ActorType, id: string | null): string | null {
  if (id === null) return null;
  if (type === 'user' || type === 'token' || type === 'run') return auditActorId(type, id);
  // A reflection's actor id is the run it reflected on.
  if (type === 'reflection') return auditActorId('run', id);
  return null;
}

function displayName(type: ActorType, id: string | null, names: Map<string, string>): string | null {
  if (type === 'scheduler') return 'the scheduler';
  const key = nameKey(type, id);
  const name = key ? names.get(key) : undefined;
  if (type === 'system') return id === null ? 'the service' : `the service (${id})`;
  if (name === undefined) return null;
  return type === 'reflection' ? `reflection on ${name}` : name;
}

/** The API record of an entry: its fields as stored, and the actor's display name where one is known. */
export function toAuditEntryDto(d: AuditDoc, names: Map<string, string>): AuditEntryDto {
  return {
    id: d._id,
    at: d.at,
    actor: { type: d.actorType, id: d.actorId, name: displayName(d.actorType, d.actorId, names) },
    type: d.type,
    summary: d.summary,
    streamId: d.streamId,
    revision: d.revision,
    jobId: d.jobId,
  };
}

/**
 * The audit trail of one workspace (docs/events.md, "Audit trail"), read from its read model. A job's history is
 * the same trail narrowed to the job, found only while the job is (docs/api.md, "The tenant rule").
 */
export class AuditQueries {
  constructor(
    private readonly docs: DocumentStore,
    private readonly jobs: JobQueries,
    private readonly workspaceId: string,
  ) {}

  async list(page: PageRequest, by: AuditFilter): Promise<Page<AuditEntryDto>> {
    const filter: Filter = { workspaceId: this.workspaceId };
    if (by.jobIds && by.jobIds.length > 0) filter.jobId = { $in: [...by.jobIds] };
    if (by.actorTypes && by.actorTypes.length > 0) filter.actorType = { $in: [...by.actorTypes] };
    if (by.actorId !== undefined) filter.actorId = by.actorId;
    if (by.types && by.types.length > 0) filter.type = { $in: [...by.types] };
    if (by.from !== undefined || by.to !== undefined)
      filter.at = {
        ...(by.from !== undefined ? { $gte: by.from } : {}),
        ...(by.to !== undefined ? { $lt: by.to } : {}),
      };
    const entries = this.docs.collection<AuditDoc>(auditCollection);
    const [items, total] = await Promise.all([
      entries.find(filter, page.find),
      entries.count(filter, { search: page.search }),
    ]);
    const names = await this.names(items);
    return { items: items.map((d) => toAuditEntryDto(d, names)), total };
  }

  /** One job's history across its streams; `not_found` for a missing, archived or foreign job. */
  async history(jobId: string, page: PageRequest, by: Omit<AuditFilter, 'jobIds'>): Promise<Page<AuditEntryDto>> {
    await this.jobs.get(jobId);
    return this.list(page, { ...by, jobIds: [jobId] });
  }

  private async names(items: AuditDoc[]): Promise<Map<string, string>> {
    const keys = [...new Set(items.map((d) => nameKey(d.actorType, d.actorId)).filter((k) => k !== null))];
    if (keys.length === 0) return new Map();
    const docs = await this.docs.collection<AuditActorDoc>(auditActorsCollection).find({ _id: { $in: keys } });
    return new Map(docs.map((d) => [d._id, d.name]));
  }
}
