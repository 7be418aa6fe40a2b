import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Type from 'typebox';
import { DomainError } from '../../domain/decider.js';
import { IdParams } from '../../schemas/common.js';
import { StateEntryDto, StateKeyParams, StateListDto, StateSetBody } from '../../schemas/job-state.js';
import type { StateEntry } from '../../app/job-state.js';
import { principalOf } from '../auth.js';
import { requestContext } from '../context.js';
import type { AppDeps } from '../deps.js';

const toDto = (e: StateEntry): StateEntryDto => ({ key: e.key, value: e.value, size: e.size, updatedAt: e.updatedAt });

/**
 * A job's key/value state, with the limits `svc state` has inside a run (docs/api.md). The list answers `{items}`
 * sorted by key rather than a plain map, so each key comes with its size and last write time.
 */
export default function jobStateRoutes(fastify: FastifyInstance, deps: AppDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  /** The caller's workspace id, once the job is known there and not archived. */
  async function jobWorkspace(request: FastifyRequest, jobId: string): Promise<string> {
    const job = await deps.queries.forPrincipal(principalOf(request)).jobs.get(jobId);
    return job.workspaceId;
  }

  app.get(
    '/api/jobs/:id/state',
    {
      schema: {
        summary: "A job's state",
        description: 'Every key with its value, sorted by key.',
        tags: ['jobs'],
        params: IdParams,
        response: { 200: StateListDto },
      },
    },
    async (request) => {
      const ws = await jobWorkspace(request, request.params.id);
      return { items: (await deps.jobState.list(ws, request.params.id)).map(toDto) };
    },
  );

  app.get(
    '/api/jobs/:id/state/:key',
    {
      schema: { summary: 'One state key', tags: ['jobs'], params: StateKeyParams, response: { 200: StateEntryDto } },
    },
    async (request) => {
      const ws = await jobWorkspace(request, request.params.id);
      const entry = await deps.jobState.get(ws, request.params.id, request.params.key);
      if (!entry) throw DomainError.notFound('State key');
      return toDto(entry);
    },
  );

  app.put(
    '/api/jobs/:id/state/:key',
    {
      // A 1 MiB value can take several MiB as JSON text; the store checks the value's own size.
      bodyLimit: 8 * 1024 * 1024,
      schema: {
        summary: 'Set a state key',
        description:
          'Values up to 1 MiB; a job keeps at most 1,000 keys (existing keys stay writable) and 16 MiB of keys and values. Size errors are `validation_failed` with code `too_large` or `too_many_keys`.',
        tags: ['jobs'],
        params: StateKeyParams,
        body: StateSetBody,
        response: { 200: StateEntryDto },
      },
    },
    async (request) => {
      const ws = await jobWorkspace(request, request.params.id);
      return toDto(
        await deps.jobState.set(requestContext(request), ws, request.params.id, request.params.key, request.body.value),
      );
    },
  );

  app.delete(
    '/api/jobs/:id/state/:key',
    {
      schema: {
        summary: 'Remove a state key',
        tags: ['jobs'],
        params: StateKeyParams,
        response: { 204: Type.Null({ description: 'Removed' }) },
      },
    },
    async (request, reply) => {
      const ws = await jobWorkspace(request, request.params.id);
      if (!(await deps.jobState.delete(requestContext(request), ws, request.params.id, request.params.key)))
        throw DomainError.notFound('State key');
      return reply.status(204).send(null);
    },
  );
}
