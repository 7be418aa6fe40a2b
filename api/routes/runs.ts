import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Type from 'typebox';
import type { Subscription } from 'rxjs';
import { DomainError } from '../../domain/decider.js';
import { streams } from '../../domain/streams.js';
import { finalStatuses, liveStatuses, type RunEvent } from '../../domain/run.js';
import type { RunDoc } from '../../projections/runs.js';
import { IdParams, bounds } from '../../schemas/common.js';
import { Mode } from '../../schemas/job.js';
import {
  ArtifactDto,
  ArtifactQuery,
  DeleteRunsBody,
  DeleteRunsOutput,
  EventDto,
  EventsQuery,
  RunDto,
  RunListEnvelope,
  RunListQuery,
  Trigger,
  TriggerRunBody,
  TriggerRunOutput,
} from '../../schemas/run.js';
import type { RecordedEvent } from '../../store/event-store.js';
import { toEventDto } from '../../app/timeline.js';
import type { WorkspaceQueries } from '../../app/queries/index.js';
import { principalOf } from '../auth.js';
import { requestContext } from '../context.js';
import type { AppDeps } from '../deps.js';
import { parseCsvFilter, parseListQuery, type ListRules } from '../list-query.js';
import { openSse } from '../sse.js';

const listRules: ListRules = {
  sortKeys: {
    queuedAt: 'queuedAt',
    startedAt: 'startedAt',
    finishedAt: 'finishedAt',
    duration: 'duration',
    cost: 'cost',
    turns: 'turns',
    status: 'status',
    job: 'sortJob',
    number: 'number',
    tokens: 'tokens',
  },
  defaultSort: '-queuedAt',
  searchFields: ['summary', 'error', 'jobName'],
};

const statusValues = [...liveStatuses, ...finalStatuses];
const literals = (schema: { anyOf: Array<{ const: unknown }> }) => schema.anyOf.map((s) => s.const as string);

export function toRunDto(d: RunDoc): RunDto {
  return {
    id: d._id,
    jobId: d.jobId,
    jobName: d.jobName,
    jobDeleted: d.jobDeleted,
    number: d.number,
    status: d.status,
    mode: d.mode,
    trigger: d.trigger,
    triggeredBy: d.triggeredBy,
    input: d.input,
    instructions: d.instructions,
    summary: d.summary,
    outputs: d.outputs,
    error: d.error,
    cost: d.cost,
    turns: d.turns,
    tokIn: d.tokIn,
    tokOut: d.tokOut,
    queuedAt: d.queuedAt,
    startedAt: d.startedAt,
    finishedAt: d.finishedAt,
    msTotal: d.msTotal,
    fellBack: d.fellBack,
    reflection: d.reflection,
    reflectionCost: d.reflectionCost,
    reflectionError: d.reflectionError ?? null,
    reflectionSummary: d.reflectionSummary ?? null,
    reflectionVersion: d.reflectionVersion ?? null,
    reflectionOps: (d.reflectionOps ?? null) as RunDto['reflectionOps'],
    verifyCost: d.verifyCost,
    playbookVersion: d.playbookVersion,
    modelId: d.modelId,
  };
}

/** A page of the caller's runs, filtered as `GET /api/runs` takes it (also the MCP server's `list_runs`). */
export async function listRuns(queries: WorkspaceQueries, q: RunListQuery): Promise<RunListEnvelope> {
  const list = parseListQuery(q, listRules);
  const status = parseCsvFilter('status', q.status, statusValues);
  const mode = parseCsvFilter('mode', q.mode, literals(Mode as never));
  const trigger = parseCsvFilter('trigger', q.trigger, literals(Trigger as never));
  const jobs = q.job
    ?.split(',')
    .map((j) => j.trim())
    .filter(Boolean);
  const { items, total } = await queries.runs.list(list, {
    ...(status ? { status } : {}),
    ...(mode ? { mode } : {}),
    ...(trigger ? { trigger } : {}),
    ...(jobs ? { jobIds: jobs } : {}),
    ...(q.from !== undefined ? { from: q.from } : {}),
    ...(q.to !== undefined ? { to: q.to } : {}),
  });
  return { items: items.map(toRunDto), page: list.page, pageSize: list.pageSize, total };
}

/** The status an event of a run stream announces on the instance stream, if any. */
function announced(e: RecordedEvent): string | null {
  switch ((e as unknown as RunEvent).type) {
    case 'RunQueued':
      return 'queued';
    case 'RunSkipped':
      return 'skipped';
    case 'RunClaimed':
      return 'provisioning';
    case 'RunStarted':
      return 'running';
    case 'RunVerifying':
      return 'verifying';
    case 'RunFellBack':
      return 'running';
    case 'RunFinished':
      return (e.data as { status: string }).status;
    default:
      return null;
  }
}

export default function runRoutes(fastify: FastifyInstance, deps: AppDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  /** One serialization per timeline entry, however many clients watch it. */
  const serialized = new WeakMap<RecordedEvent, string>();

  app.post(
    '/api/jobs/:id/runs',
    {
      schema: {
        summary: 'Start a run',
        description: 'Trigger `manual` with a session, `api` with a token. The overlap policy may answer `skipped`.',
        tags: ['runs'],
        params: IdParams,
        body: TriggerRunBody,
        response: { 201: TriggerRunOutput },
      },
    },
    async (request, reply) => {
      const p = principalOf(request);
      const answer = await deps.runs.trigger(
        p.workspaceId,
        request.params.id,
        {
          trigger: p.kind === 'token' ? 'api' : 'manual',
          triggeredBy: p.userId,
          input: request.body.input ?? {},
          instructions: request.body.instructions?.trim() || null,
        },
        requestContext(request),
      );
      await deps.engine.readYourWrites(answer.position);
      return reply.status(201).send({ runId: answer.runId, status: answer.status });
    },
  );

  app.get(
    '/api/runs',
    {
      schema: { summary: 'List runs', tags: ['runs'], querystring: RunListQuery, response: { 200: RunListEnvelope } },
    },
    async (request) => listRuns(deps.queries.forPrincipal(principalOf(request)), request.query),
  );

  app.get(
    '/api/runs/:id',
    {
      schema: { summary: 'Get a run', tags: ['runs'], params: IdParams, response: { 200: RunDto } },
    },
    async (request) => toRunDto(await deps.queries.forPrincipal(principalOf(request)).runs.get(request.params.id)),
  );

  app.post(
    '/api/runs/:id/cancel',
    {
      schema: {
        summary: 'Cancel a run',
        description: 'A queued run ends at once; a live run is stopped by its runner. A finished run answers 409.',
        tags: ['runs'],
        params: IdParams,
        response: { 200: RunDto },
      },
    },
    async (request) => {
      const p = principalOf(request);
      const position = await deps.runs.cancel(p.workspaceId, request.params.id, requestContext(request));
      await deps.engine.readYourWrites(position);
      return toRunDto(await deps.queries.forPrincipal(p).runs.get(request.params.id));
    },
  );

  app.delete(
    '/api/runs/:id',
    {
      schema: {
        summary: 'Delete a run',
        description:
          "Admins only. Removes a finished run for good: its timeline, artifacts and files; a RunDeleted fact with who and when stays in the job's history, and statistics keep its figures. 409 while the run is live or its reflection is pending.",
        tags: ['runs'],
        params: IdParams,
        response: { 204: Type.Null({ description: 'Deleted' }) },
      },
    },
    async (request, reply) => {
      const p = principalOf(request);
      const position = await deps.runDeletion.deleteOne(p.workspaceId, request.params.id, requestContext(request));
      await deps.engine.readYourWrites(position);
      return reply.status(204).send(null);
    },
  );

  app.post(
    '/api/runs/delete',
    {
      schema: {
        summary: 'Delete runs',
        description:
          'Admins only. Up to 100 runs as DELETE /api/runs/{id} does; the runs that cannot go (not found in this workspace, unfinished, reflection pending) are skipped and reported, the others are deleted.',
        tags: ['runs'],
        body: DeleteRunsBody,
        response: { 200: DeleteRunsOutput },
      },
    },
    async (request) => {
      const p = principalOf(request);
      const answer = await deps.runDeletion.deleteMany(p.workspaceId, request.body.ids, requestContext(request));
      await deps.engine.readYourWrites(answer.position);
      return { deleted: answer.deleted, skipped: answer.skipped };
    },
  );

  app.post(
    '/api/runs/:id/retry',
    {
      schema: {
        summary: 'Retry a run',
        description: 'Same input and instructions, trigger `retry`, under the overlap policy.',
        tags: ['runs'],
        params: IdParams,
        response: { 201: TriggerRunOutput },
      },
    },
    async (request, reply) => {
      const p = principalOf(request);
      const answer = await deps.runs.retry(p.workspaceId, request.params.id, p.userId, requestContext(request));
      await deps.engine.readYourWrites(answer.position);
      return reply.status(201).send({ runId: answer.runId, status: answer.status });
    },
  );

  app.post(
    '/api/runs/:id/learn',
    {
      schema: {
        summary: 'Learn from this run',
        description:
          "Asks for a reflection on a succeeded, failed or timed-out run, whatever the job's selfImprove says. 409 for other runs or while one is pending.",
        tags: ['runs'],
        params: IdParams,
        response: { 202: Type.Object({ reflection: Type.Literal('pending') }, { additionalProperties: false }) },
      },
    },
    async (request, reply) => {
      const p = principalOf(request);
      const position = await deps.runs.requestReflection(p.workspaceId, request.params.id, requestContext(request));
      await deps.engine.readYourWrites(position);
      return reply.status(202).send({ reflection: 'pending' as const });
    },
  );

  app.get(
    '/api/runs/:id/events',
    {
      schema: {
        summary: 'Timeline of a run',
        description: 'Oldest first. Page forward with `after` = the last seq received.',
        tags: ['runs'],
        params: IdParams,
        querystring: EventsQuery,
        response: { 200: Type.Array(EventDto) },
      },
    },
    async (request) => {
      const timeline = await deps.queries.forPrincipal(principalOf(request)).timeline(request.params.id);
      const recorded = await timeline.read(request.query.after ?? 0, request.query.limit ?? 500);
      return recorded.map(toEventDto);
    },
  );

  app.get(
    '/api/runs/:id/events/:seq',
    {
      schema: {
        summary: 'One timeline entry, whole',
        description:
          'The events route keeps payloads over 16 KiB shortened (long strings cut in the middle); this answers the entry with its payload as it was recorded (secrets redacted).',
        tags: ['runs'],
        params: Type.Object(
          {
            id: Type.String({ minLength: 1, maxLength: 100 }),
            seq: Type.Integer({ minimum: 1, maximum: bounds.counter.maximum }),
          },
          { additionalProperties: false },
        ),
        response: { 200: EventDto },
      },
    },
    async (request) => {
      const timeline = await deps.queries.forPrincipal(principalOf(request)).timeline(request.params.id);
      const recorded = await timeline.entry(request.params.seq);
      if (!recorded) throw DomainError.notFound('Timeline entry');
      const event = toEventDto(recorded);
      event.payload = (await timeline.wholePayload(recorded)) ?? event.payload;
      return event;
    },
  );

  app.get(
    '/api/runs/:id/stream',
    {
      schema: {
        summary: 'Follow a run live (server-sent events)',
        description:
          'Replays stored timeline entries (`event`, id = seq), then live `delta`, `status` and `end`. Resume with Last-Event-ID or `after`. A keepalive comment every 20 s.',
        tags: ['runs'],
        params: IdParams,
        querystring: Type.Object(
          { after: Type.Optional(Type.Integer(bounds.counter)) },
          { additionalProperties: false },
        ),
      },
    },
    async (request, reply) => {
      const timeline = await deps.queries.forPrincipal(principalOf(request)).timeline(request.params.id);
      const header = request.headers['last-event-id'];
      const fromHeader = typeof header === 'string' && /^\d+$/.test(header) ? Number(header) : undefined;
      let delivered = fromHeader ?? request.query.after ?? 0;
      const sse = openSse(request, reply);
      let caughtUp = false;
      const early: RecordedEvent[] = [];
      const forward = (e: RecordedEvent) => {
        const seq = e.revision + 1;
        if (seq <= delivered) return;
        delivered = seq;
        let json = serialized.get(e);
        if (json === undefined) serialized.set(e, (json = JSON.stringify(toEventDto(e))));
        sse.sendJson('event', json, seq);
        if (e.type === 'run.status')
          sse.send('status', { status: (e.data as { payload: { status: string } }).payload.status });
      };
      let ending = false;
      const end = async (status: string) => {
        if (ending) return;
        ending = true;
        // The runner stores the final timeline entries before the final status, so reading up to now misses nothing.
        for (const e of await timeline.read(delivered)) forward(e);
        // Output another process shared just before the run's end would otherwise come after the stream closed.
        await timeline.deltasCaughtUp();
        sse.send('end', { status });
        sse.close();
      };
      const subs: Subscription[] = [];
      sse.onClose(() => subs.forEach((s) => s.unsubscribe()));
      // Join the shared live feed first and hold what it brings until this client's own catch-up is sent: no gap.
      subs.push(timeline.liveEntries().subscribe((e) => (caughtUp ? forward(e) : early.push(e))));
      for (const e of await timeline.read(delivered)) forward(e);
      for (const e of early) forward(e);
      caughtUp = true;
      subs.push(timeline.liveDeltas().subscribe((delta) => sse.send('delta', delta)));
      subs.push(
        timeline.liveRunEvents().subscribe((e) => {
          if (e.type !== 'RunFinished' && e.type !== 'RunSkipped') return;
          // A store error while reading the last entries ends this stream only; the client reconnects with Last-Event-ID.
          end((e.data as { status?: string }).status ?? 'skipped').catch((err: unknown) => {
            request.log.error({ err, runId: timeline.run._id }, 'could not end a run stream');
            sse.close();
          });
        }),
      );
    },
  );

  app.get(
    '/api/events',
    {
      schema: {
        summary: 'Run status changes of the workspace (server-sent events)',
        description: 'One `run` message per status change of any run or its reflection, from connection time on.',
        tags: ['runs'],
        querystring: Type.Object({}, { additionalProperties: false }),
      },
    },
    async (request, reply) => {
      const runEvents = await deps.queries.forPrincipal(principalOf(request)).runEvents();
      const sse = openSse(request, reply);
      const sub = runEvents.subscribe((e) => {
        const status = announced(e);
        const data = e.data as { runId: string; jobId: string; reflection?: string; status?: string };
        if (status) sse.send('run', { kind: 'run', runId: data.runId, jobId: data.jobId, status });
        // A reflection is announced when it becomes pending (asked for, or wanted by a finished run) and when it ends.
        const reflection =
          e.type === 'RunReflectionRequested' || (e.type === 'RunFinished' && data.reflection === 'pending')
            ? 'pending'
            : e.type === 'RunReflected'
              ? data.status
              : null;
        if (reflection)
          sse.send('run', { kind: 'reflection', runId: data.runId, jobId: data.jobId, status: reflection });
        const admission = streams.jobRuns.decode(e);
        if (admission?.event.type === 'RunDeleted')
          sse.send('run', { kind: 'run', runId: admission.event.data.runId, jobId: admission.key, deleted: true });
      });
      sse.onClose(() => sub.unsubscribe());
    },
  );

  app.get(
    '/api/runs/:id/artifacts',
    {
      schema: {
        summary: 'Files the run left in /svc/outputs',
        tags: ['runs'],
        params: IdParams,
        response: { 200: Type.Array(ArtifactDto) },
      },
    },
    async (request) => {
      const artifacts = await deps.queries.forPrincipal(principalOf(request)).artifacts(request.params.id);
      return artifacts.list();
    },
  );

  app.get(
    '/api/runs/:id/artifact',
    {
      schema: { summary: 'Download one artifact', tags: ['runs'], params: IdParams, querystring: ArtifactQuery },
    },
    async (request, reply) => {
      const artifacts = await deps.queries.forPrincipal(principalOf(request)).artifacts(request.params.id);
      const file = await artifacts.file(request.query.path);
      const name = file.name.replace(/["\\\r\n]/g, '_');
      return reply
        .type(contentTypeOf(name))
        .header('Content-Disposition', `attachment; filename="${name}"`)
        .header('Content-Length', file.size)
        .send(file.stream);
    },
  );
}

const types: Record<string, string> = {
  json: 'application/json',
  txt: 'text/plain; charset=utf-8',
  md: 'text/markdown; charset=utf-8',
  csv: 'text/csv; charset=utf-8',
  html: 'text/plain; charset=utf-8',
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  pdf: 'application/pdf',
};
function contentTypeOf(name: string): string {
  return types[name.split('.').pop()?.toLowerCase() ?? ''] ?? 'application/octet-stream';
}
