import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Type from 'typebox';
import { nextMode } from '../../domain/modes.js';
import type { JobDoc } from '../../projections/jobs.js';
import { AtQuery } from '../../schemas/audit.js';
import { IdParams } from '../../schemas/common.js';
import { JobDto, JobFields, JobListDto, JobListEnvelope, JobListQuery, JobPatchBody } from '../../schemas/job.js';
import { asProviderError } from './compile.js';
import { principalOf } from '../auth.js';
import { requestContext } from '../context.js';
import { parseCsvFilter, parseListQuery, type ListRules } from '../list-query.js';
import type { AppDeps } from '../deps.js';
import type { WorkspaceQueries } from '../../app/queries/index.js';

const listRules: ListRules = {
  sortKeys: {
    name: 'sortName',
    createdAt: 'createdAt',
    updatedAt: 'updatedAt',
    nextRunAt: 'nextRunAt',
    enabled: 'enabled',
    runCount: 'runCount',
  },
  defaultSort: 'name',
  searchFields: ['name', 'instruction'],
};

function modeOf(doc: JobDoc) {
  return nextMode({
    playbookEmpty: doc.playbookEmpty,
    hasMain: doc.playbookHasMain,
    modePin: doc.modePin,
    demoted: doc.demoted,
  });
}

export function toJobDto(doc: JobDoc): JobDto {
  return {
    id: doc._id,
    name: doc.name,
    instruction: doc.instruction,
    spec: doc.spec,
    modelId: doc.modelId,
    image: doc.image,
    network: doc.network,
    allowedDomains: doc.allowedDomains,
    allowPrivateNetwork: doc.allowPrivateNetwork,
    runAsRoot: doc.runAsRoot,
    limits: doc.limits,
    selfImprove: doc.selfImprove,
    modePin: doc.modePin,
    concurrency: doc.concurrency,
    cron: doc.cron,
    timezone: doc.timezone,
    nextRunAt: doc.nextRunAt,
    enabled: doc.enabled,
    playbookVersion: doc.playbookVersion,
    hasWebhookToken: doc.hasWebhookToken,
    createdAt: doc.createdAt,
    updatedAt: doc.updatedAt,
    lastRun: doc.lastRun,
    demoted: doc.demoted,
    graduatedVersion: doc.graduatedVersion,
    nextMode: modeOf(doc),
  };
}

export function toJobListDto(doc: JobDoc): JobListDto {
  return {
    id: doc._id,
    name: doc.name,
    cron: doc.cron,
    timezone: doc.timezone,
    scheduleHuman: doc.scheduleHuman,
    nextRunAt: doc.nextRunAt,
    enabled: doc.enabled,
    modePin: doc.modePin,
    createdAt: doc.createdAt,
    updatedAt: doc.updatedAt,
    lastRun: doc.recentRuns?.[0] ?? doc.lastRun,
    lastMode: doc.lastMode,
    runCount: doc.runCount,
    recentRuns: doc.recentRuns,
    nextMode: modeOf(doc),
    inputs: doc.spec.inputs ?? null,
  };
}

/**
 * A page of the caller's jobs as `GET /api/jobs` takes the query (also the MCP server's `list_jobs`). The query is
 * checked at once; the answer is read when the returned function is called, so the route can serve it from its cache.
 */
export function listJobs(jobs: WorkspaceQueries['jobs'], q: JobListQuery): () => Promise<JobListEnvelope> {
  const list = parseListQuery(q, listRules);
  const enabled = parseCsvFilter('enabled', q.enabled, ['true', 'false'] as const);
  return async () => {
    const { items, total } = await jobs.list(
      list,
      enabled?.map((v) => v === 'true'),
    );
    return { items: items.map(toJobListDto), page: list.page, pageSize: list.pageSize, total };
  };
}

/** A page already serialized goes out as it is. */
const asIs = (s: unknown) => s as string;

export default function jobRoutes(fastify: FastifyInstance, deps: AppDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.get(
    '/api/jobs',
    {
      schema: { summary: 'List jobs', tags: ['jobs'], querystring: JobListQuery, response: { 200: JobListEnvelope } },
    },
    async (request, reply) => {
      const jobs = deps.queries.forPrincipal(principalOf(request)).jobs;
      // The page is serialized once and served from the read cache until the jobs read model changes. The key is the
      // query as sent (the workspace is added by the query layer): only a query that passed its checks ever gets an
      // entry, so a hit needs no parsing (the list route is the one scripts poll).
      const cached = jobs.cachedAnswer(request.url);
      if (cached !== undefined)
        return reply
          .type('application/json; charset=utf-8')
          .serializer(asIs)
          .send(cached as unknown as JobListEnvelope);
      const page = listJobs(jobs, request.query);
      const body = await jobs.answer(request.url, async () => JSON.stringify(await page()));
      return reply
        .type('application/json; charset=utf-8')
        .serializer(asIs)
        .send(body as unknown as JobListEnvelope);
    },
  );

  app.post(
    '/api/jobs',
    {
      schema: { summary: 'Create a job', tags: ['jobs'], body: JobFields, response: { 201: JobDto } },
    },
    async (request, reply) => {
      const p = principalOf(request);
      const id = await deps.jobs.create(requestContext(request), p.workspaceId, request.body);
      const doc = await deps.queries.forPrincipal(p).jobs.get(id);
      return reply.status(201).header('Location', `/api/jobs/${id}`).send(toJobDto(doc));
    },
  );

  app.get(
    '/api/jobs/:id',
    {
      schema: {
        summary: 'Get a job',
        description:
          'With `at` (Unix ms), the job as it was at that instant, folded from the event log: 404 before the job existed, 400 for an instant in the future.',
        tags: ['jobs'],
        params: IdParams,
        querystring: AtQuery,
        response: { 200: JobDto },
      },
    },
    async (request) => {
      const queries = deps.queries.forPrincipal(principalOf(request));
      const { at } = request.query;
      return toJobDto(
        at === undefined ? await queries.jobs.get(request.params.id) : await queries.past.job(request.params.id, at),
      );
    },
  );

  app.patch(
    '/api/jobs/:id',
    {
      schema: {
        summary: 'Update a job',
        description:
          'Changes only the fields present. An empty string clears modelId, image, cron, timezone and modePin. A changed instruction recompiles the spec with the utility model unless `rebuildSpec` is false or a `spec` is sent (502 `provider_error` when the model fails; nothing is changed then).',
        tags: ['jobs'],
        params: IdParams,
        body: JobPatchBody,
        response: { 200: JobDto },
      },
    },
    async (request) => {
      const p = principalOf(request);
      await asProviderError(deps.jobs.change(requestContext(request), p.workspaceId, request.params.id, request.body));
      return toJobDto(await deps.queries.forPrincipal(p).jobs.get(request.params.id));
    },
  );

  app.delete(
    '/api/jobs/:id',
    {
      schema: {
        summary: 'Archive a job',
        description: 'The job answers 404 afterwards; its runs are kept.',
        tags: ['jobs'],
        params: IdParams,
        response: { 204: Type.Null({ description: 'Archived' }) },
      },
    },
    async (request, reply) => {
      await deps.jobs.archive(requestContext(request), principalOf(request).workspaceId, request.params.id);
      return reply.status(204).send(null);
    },
  );
}
