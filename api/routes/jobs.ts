import { validateContent, type PlaybookContent } from '../../domain/playbook.js';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Type from 'typebox';
import { DomainError } from '../../domain/decider.js';
import { jobDecider, jobStreamId, type JobCommand, type JobState } from '../../domain/job.js';
import { nextMode } from '../../domain/modes.js';
import { jobsCollection, type JobDoc } from '../../projections/jobs.js';
import { IdParams } from '../../schemas/common.js';
import { JobDto, JobFields, JobListDto, JobListEnvelope, JobListQuery, JobPatch } from '../../schemas/job.js';
import type { Filter } from '../../store/document-store.js';
import { newId } from '../../app/ids.js';
import { principalOf } from '../auth.js';
import { requestContext } from '../context.js';
import { parseCsvFilter, parseListQuery, type ListRules } from '../list-query.js';
import type { AppDeps } from '../deps.js';

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

const notFound = () => DomainError.notFound('Job');
/** A page already serialized goes out as it is. */
const asIs = (s: unknown) => s as string;

/** The playbook content a spec's Dockerfile makes, checked before the job exists so a bad one creates nothing. */
function proposedEnvironment(spec: { dockerfile?: string | null } | undefined): PlaybookContent | null {
  const dockerfile = spec?.dockerfile;
  if (!dockerfile || dockerfile.trim() === '') return null;
  try {
    return validateContent({ dockerfile }, { declaresInputs: false });
  } catch (err) {
    if (err instanceof DomainError && err.fields)
      throw DomainError.validation(err.fields.map((f) => ({ ...f, field: f.field.replace(/^content\./, 'spec.') })));
    throw err;
  }
}

export default function jobRoutes(fastify: FastifyInstance, deps: AppDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const jobs = () => deps.stores.docs.collection<JobDoc>(jobsCollection);

  /** Jobs of the caller's workspace only; archived jobs do not exist for the API. */
  async function findJob(workspaceId: string, id: string): Promise<JobDoc> {
    const doc = await jobs().findOne({ _id: id, workspaceId, archived: false });
    if (!doc) throw notFound();
    return doc;
  }

  async function runCommand(
    workspaceId: string,
    id: string,
    command: JobCommand,
    ctx: ReturnType<typeof requestContext>,
  ) {
    const result = await deps.bus.execute(
      jobStreamId(id),
      jobDecider,
      (state: JobState) => {
        // The stream decides, not the read model: a job of another workspace is as absent as a missing one.
        if (command.type !== 'CreateJob' && (state.status !== 'active' || state.workspaceId !== workspaceId))
          throw notFound();
        return command;
      },
      ctx,
    );
    await deps.engine.waitFor(result.position);
  }

  app.get(
    '/api/jobs',
    {
      schema: { summary: 'List jobs', tags: ['jobs'], querystring: JobListQuery, response: { 200: JobListEnvelope } },
    },
    async (request, reply) => {
      const p = principalOf(request);
      // The page is serialized once and served from the read cache until the jobs read model changes. The key is the
      // workspace and the query as sent: only a query that passed its checks ever gets an entry, so a hit needs no
      // parsing (the list route is the one scripts poll).
      const key = `jobs:${p.workspaceId}:${request.url}`;
      const cached = deps.cache.peek<string>(key);
      if (cached !== undefined)
        return reply
          .type('application/json; charset=utf-8')
          .serializer(asIs)
          .send(cached as unknown as JobListEnvelope);
      const list = parseListQuery(request.query, listRules);
      const enabled = parseCsvFilter('enabled', request.query.enabled, ['true', 'false'] as const);
      const filter: Filter = { workspaceId: p.workspaceId, archived: false };
      if (enabled) filter.enabled = { $in: enabled.map((v) => v === 'true') };
      const body = await deps.cache.get([jobsCollection], key, async () => {
        const [items, total] = await Promise.all([
          jobs().find(filter, list.find),
          jobs().count(filter, { search: list.search }),
        ]);
        const page: JobListEnvelope = {
          items: items.map(toJobListDto),
          page: list.page,
          pageSize: list.pageSize,
          total,
        };
        return JSON.stringify(page);
      });
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
      const id = newId();
      const environment = proposedEnvironment(request.body.spec);
      await runCommand(
        p.workspaceId,
        id,
        { type: 'CreateJob', jobId: id, workspaceId: p.workspaceId, fields: request.body, now: Date.now() },
        requestContext(request),
      );
      // BEHAVIOUR §7.4: a Dockerfile in the spec (compile proposes one) becomes playbook version 1.
      if (environment)
        await deps.playbooks.save(requestContext(request), p.workspaceId, id, {
          content: environment,
          baseVersion: 0,
          summary: 'Environment proposed when the job was created',
          author: 'compile',
        });
      const doc = await findJob(p.workspaceId, id);
      return reply.status(201).header('Location', `/api/jobs/${id}`).send(toJobDto(doc));
    },
  );

  app.get(
    '/api/jobs/:id',
    {
      schema: { summary: 'Get a job', tags: ['jobs'], params: IdParams, response: { 200: JobDto } },
    },
    async (request) => toJobDto(await findJob(principalOf(request).workspaceId, request.params.id)),
  );

  app.patch(
    '/api/jobs/:id',
    {
      schema: {
        summary: 'Update a job',
        description:
          'Changes only the fields present. An empty string clears modelId, image, cron, timezone and modePin.',
        tags: ['jobs'],
        params: IdParams,
        body: JobPatch,
        response: { 200: JobDto },
      },
    },
    async (request) => {
      const p = principalOf(request);
      await runCommand(
        p.workspaceId,
        request.params.id,
        { type: 'PatchJob', patch: request.body, now: Date.now() },
        requestContext(request),
      );
      return toJobDto(await findJob(p.workspaceId, request.params.id));
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
      const p = principalOf(request);
      await runCommand(
        p.workspaceId,
        request.params.id,
        { type: 'ArchiveJob', now: Date.now() },
        requestContext(request),
      );
      // Queued runs die with the job; a run already under way finishes (BEHAVIOUR §7.3).
      await deps.runs.cancelQueued(p.workspaceId, request.params.id, requestContext(request));
      return reply.status(204).send(null);
    },
  );
}
