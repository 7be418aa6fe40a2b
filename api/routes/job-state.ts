import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Type from 'typebox';
import { DomainError } from '../../domain/decider.js';
import { jobsCollection, type JobDoc } from '../../projections/jobs.js';
import type { StateEntry } from '../../server/job-state.js';
import { principalOf } from '../auth.js';
import { requestContext } from '../context.js';
import type { AppDeps } from '../deps.js';

const StateEntryDto = Type.Object({ key: Type.String(), value: Type.String(), size: Type.Integer(), updatedAt: Type.Integer() }, { $id: 'StateEntryDto', additionalProperties: false });
const KeyParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }), key: Type.String({ minLength: 1, maxLength: 200 }) }, { additionalProperties: false });
const toDto = (e: StateEntry) => ({ key: e.key, value: e.value, size: e.size, updatedAt: e.updatedAt });

/** The job's key/value state, with the same limits as `svc state` (SPEC §8). */
export default function jobStateRoutes(fastify: FastifyInstance, deps: AppDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  async function job(workspaceId: string, id: string) {
    if (!(await deps.stores.docs.collection<JobDoc>(jobsCollection).findOne({ _id: id, workspaceId, archived: false }))) throw DomainError.notFound('Job');
  }

  app.get('/api/jobs/:id/state', { schema: { summary: "A job's state, sorted by key", tags: ['jobs'], params: Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }) }, { additionalProperties: false }), response: { 200: Type.Object({ items: Type.Array(StateEntryDto) }, { additionalProperties: false }) } } }, async (request) => {
    const ws = principalOf(request).workspaceId;
    await job(ws, request.params.id);
    return { items: (await deps.jobState.list(ws, request.params.id)).map(toDto) };
  });

  app.get('/api/jobs/:id/state/:key', { schema: { summary: 'One state value', tags: ['jobs'], params: KeyParams, response: { 200: StateEntryDto } } }, async (request) => {
    const ws = principalOf(request).workspaceId;
    await job(ws, request.params.id);
    const entry = (await deps.jobState.list(ws, request.params.id)).find((e) => e.key === request.params.key);
    if (!entry) throw DomainError.notFound('State key');
    return toDto(entry);
  });

  app.put('/api/jobs/:id/state/:key', { schema: { summary: 'Set a state value', description: 'Values up to 1 MiB, at most 1,000 keys and 16 MiB per job.', tags: ['jobs'], params: KeyParams, body: Type.Object({ value: Type.String() }, { additionalProperties: false }), response: { 200: StateEntryDto } } }, async (request) => {
    const ws = principalOf(request).workspaceId;
    await job(ws, request.params.id);
    return toDto(await deps.jobState.set(requestContext(request), ws, request.params.id, request.params.key, request.body.value));
  });

  app.delete('/api/jobs/:id/state/:key', { schema: { summary: 'Remove a state value', tags: ['jobs'], params: KeyParams, response: { 204: Type.Null() } } }, async (request, reply) => {
    const ws = principalOf(request).workspaceId;
    await job(ws, request.params.id);
    if (!(await deps.jobState.delete(requestContext(request), ws, request.params.id, request.params.key))) throw DomainError.notFound('State key');
    return reply.status(204).send(null);
  });
}
