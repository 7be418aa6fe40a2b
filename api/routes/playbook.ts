import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { DomainError } from '../../domain/decider.js';
import type { PlaybookContent } from '../../domain/playbook.js';
import { playbookBudget, playbookTokens } from '../../domain/playbook-render.js';
import type { JobDoc } from '../../projections/jobs.js';
import { AtQuery } from '../../schemas/audit.js';
import { IdParams } from '../../schemas/common.js';
import {
  PlaybookDto,
  PlaybookPutBody,
  PlaybookVersionDetailDto,
  PlaybookVersionEnvelope,
  PlaybookVersionListQuery,
  PlaybookVersionParams,
  RollbackBody,
  type Content,
  type PlaybookVersionDto,
} from '../../schemas/playbook.js';
import type { StoredVersion } from '../../app/playbooks.js';
import { principalOf } from '../auth.js';
import { requestContext } from '../context.js';
import { parseListQuery, type ListRules } from '../list-query.js';
import type { AppDeps } from '../deps.js';

const listRules: ListRules = {
  sortKeys: { version: 'version', createdAt: 'createdAt' },
  defaultSort: '-version',
  searchFields: ['summary', 'author'],
};

const toContent = (c: PlaybookContent): Content => ({ ...c });

function versionFields(v: StoredVersion): Omit<PlaybookVersionDto, 'opCount'> {
  return {
    version: v.version,
    summary: v.summary,
    author: v.author,
    authorId: v.authorId,
    sourceRunId: v.sourceRunId,
    dockerfileHash: v.dockerfileHash,
    createdAt: v.createdAt,
  };
}

function toPlaybookDto(jobId: string, v: StoredVersion): PlaybookDto {
  return {
    jobId,
    ...versionFields(v),
    content: toContent(v.content),
    tokens: playbookTokens(v.content),
    budget: playbookBudget,
  };
}

/**
 * A job's playbook: the current content, hand edits, numbered versions and rollback (docs/design.md).
 * Every change is a new version; a change that started from an older version than the latest answers 409.
 */
export default function playbookRoutes(fastify: FastifyInstance, deps: AppDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const playbooks = deps.playbooks;

  /** The job, when the caller's workspace has it and it is not archived. */
  async function findJob(request: FastifyRequest, jobId: string): Promise<JobDoc> {
    return deps.queries.forPrincipal(principalOf(request)).jobs.get(jobId);
  }

  async function current(workspaceId: string, jobId: string): Promise<PlaybookDto> {
    return toPlaybookDto(jobId, await playbooks.current(workspaceId, jobId));
  }

  app.get(
    '/api/jobs/:id/playbook',
    {
      schema: {
        summary: "A job's playbook",
        description:
          'The latest version, with learning hits and script call counts merged in. Version 0 is the empty playbook. With `at` (Unix ms), the playbook as it was at that instant, folded from the event log.',
        tags: ['playbook'],
        params: IdParams,
        querystring: AtQuery,
        response: { 200: PlaybookDto },
      },
    },
    async (request) => {
      const { at } = request.query;
      if (at !== undefined) {
        const past = deps.queries.forPrincipal(principalOf(request)).past;
        return toPlaybookDto(request.params.id, await past.playbook(request.params.id, at));
      }
      const job = await findJob(request, request.params.id);
      return current(job.workspaceId, job._id);
    },
  );

  app.put(
    '/api/jobs/:id/playbook',
    {
      // Twenty 64 KiB scripts plus main and the rest, as JSON text.
      bodyLimit: 4 * 1024 * 1024,
      schema: {
        summary: 'Edit the playbook',
        description:
          'Saves the content as a new version. Script headers are read again (description, args, side effects, language); invalid parts answer `validation_failed` naming the field and nothing is saved. With `baseVersion`, a playbook changed meanwhile answers 409. Secret values are redacted before the content is stored.',
        tags: ['playbook'],
        params: IdParams,
        body: PlaybookPutBody,
        response: { 200: PlaybookDto },
      },
    },
    async (request) => {
      const job = await findJob(request, request.params.id);
      await deps.playbookEditor.edit(requestContext(request), job, {
        content: request.body.content,
        baseVersion: request.body.baseVersion ?? null,
        summary: request.body.summary ?? null,
      });
      return current(job.workspaceId, job._id);
    },
  );

  app.get(
    '/api/jobs/:id/playbook/versions',
    {
      schema: {
        summary: 'Playbook versions',
        description:
          'Newest first by default (`sort=-version`); search matches summary and author. Version 0, the empty playbook, is implicit and not listed.',
        tags: ['playbook'],
        params: IdParams,
        querystring: PlaybookVersionListQuery,
        response: { 200: PlaybookVersionEnvelope },
      },
    },
    async (request) => {
      const job = await findJob(request, request.params.id);
      const list = parseListQuery(request.query, listRules);
      const { items, total } = await playbooks.list(job.workspaceId, job._id, list.find, list.search);
      return {
        items: items.map((v) => ({ ...versionFields(v), opCount: v.opCount })),
        page: list.page,
        pageSize: list.pageSize,
        total,
      };
    },
  );

  app.get(
    '/api/jobs/:id/playbook/versions/:version',
    {
      schema: {
        summary: 'One playbook version',
        description:
          'Its content, the content of the version before it (`previous`, for diffs) and the reflection ops that made it.',
        tags: ['playbook'],
        params: PlaybookVersionParams,
        response: { 200: PlaybookVersionDetailDto },
      },
    },
    async (request) => {
      const job = await findJob(request, request.params.id);
      const v = await playbooks.version(job.workspaceId, job._id, request.params.version);
      if (!v) throw DomainError.notFound(`Playbook version ${request.params.version}`);
      const previous = v.version === 0 ? null : await playbooks.version(job.workspaceId, job._id, v.version - 1);
      return {
        ...versionFields(v),
        content: toContent(v.content),
        previous: previous ? toContent(previous.content) : null,
        ops: v.ops,
      };
    },
  );

  app.post(
    '/api/jobs/:id/playbook/rollback',
    {
      schema: {
        summary: 'Roll the playbook back',
        description:
          'Saves the content of an earlier version as a new version (history is never rewritten). Version 0 is the empty playbook, which sends the job back to explore mode.',
        tags: ['playbook'],
        params: IdParams,
        body: RollbackBody,
        response: { 200: PlaybookDto },
      },
    },
    async (request) => {
      const job = await findJob(request, request.params.id);
      await playbooks.rollback(
        requestContext(request),
        job.workspaceId,
        job._id,
        request.body.version,
        request.body.baseVersion ?? null,
      );
      return current(job.workspaceId, job._id);
    },
  );
}
