import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { actorTypes } from '../../domain/audit.js';
import { DomainError } from '../../domain/decider.js';
import { AuditListEnvelope, AuditListQuery, JobHistoryQuery } from '../../schemas/audit.js';
import { IdParams } from '../../schemas/common.js';
import type { AuditFilter } from '../../app/queries/audit.js';
import { principalOf } from '../auth.js';
import type { AppDeps } from '../deps.js';
import { parseCsvFilter, parseListQuery, type ListRules } from '../list-query.js';

const listRules: ListRules = {
  sortKeys: { at: 'at', type: 'type' },
  defaultSort: '-at',
  searchFields: ['summary'],
};

/** An event type is a PascalCase name; anything else cannot match and is refused rather than ignored. */
const eventTypePattern = /^[A-Z][A-Za-z]{1,63}$/;
const maxTypes = 30;

function eventTypes(raw: string | undefined): string[] | undefined {
  const types = raw
    ?.split(',')
    .map((t) => t.trim())
    .filter(Boolean);
  if (!types || types.length === 0) return undefined;
  const bad = types.filter((t) => !eventTypePattern.test(t));
  if (bad.length > 0 || types.length > maxTypes)
    throw DomainError.validation([
      {
        field: 'type',
        code: 'invalid',
        message:
          bad.length > 0 ? `not an event type: ${bad.slice(0, 3).join(', ')}` : `takes at most ${maxTypes} event types`,
      },
    ]);
  return types;
}

function filterOf(q: JobHistoryQuery): Omit<AuditFilter, 'jobIds'> {
  const actors = parseCsvFilter('actor', q.actor, actorTypes);
  const types = eventTypes(q.type);
  return {
    ...(actors ? { actorTypes: actors } : {}),
    ...(q.actorId !== undefined ? { actorId: q.actorId } : {}),
    ...(types ? { types } : {}),
    ...(q.from !== undefined ? { from: q.from } : {}),
    ...(q.to !== undefined ? { to: q.to } : {}),
  };
}

/** The audit trail (docs/events.md, "Audit trail"): the workspace's changes for admins, a job's for its members. */
export default function auditRoutes(fastify: FastifyInstance, deps: AppDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.get(
    '/api/audit',
    {
      schema: {
        summary: "The workspace's change history",
        description:
          'Every change made in the workspace, newest first by default: who (user, token, run, reflection, scheduler, system), what (event type and a one-line summary), the stream and revision. Secrets, tokens and keys never appear.',
        tags: ['audit'],
        querystring: AuditListQuery,
        response: { 200: AuditListEnvelope },
      },
    },
    async (request) => {
      const q = request.query;
      const list = parseListQuery(q, listRules);
      const jobs = q.job
        ?.split(',')
        .map((j) => j.trim())
        .filter(Boolean);
      const { items, total } = await deps.queries
        .forPrincipal(principalOf(request))
        .audit.list(list, { ...filterOf(q), ...(jobs && jobs.length > 0 ? { jobIds: jobs } : {}) });
      return { items, page: list.page, pageSize: list.pageSize, total };
    },
  );

  app.get(
    '/api/jobs/:id/history',
    {
      schema: {
        summary: "A job's history",
        description:
          'Changes of the job across its streams (the job, its playbook, MCP grants, secret mappings, state writes, images, runs), newest first by default.',
        tags: ['audit'],
        params: IdParams,
        querystring: JobHistoryQuery,
        response: { 200: AuditListEnvelope },
      },
    },
    async (request) => {
      const list = parseListQuery(request.query, listRules);
      const { items, total } = await deps.queries
        .forPrincipal(principalOf(request))
        .audit.history(request.params.id, list, filterOf(request.query));
      return { items, page: list.page, pageSize: list.pageSize, total };
    },
  );
}
