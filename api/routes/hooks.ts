import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Type from 'typebox';
import { IdParams } from '../../schemas/common.js';
import { TriggerRunOutput, WebhookTokenOutput } from '../../schemas/run.js';
import { principalOf } from '../auth.js';
import { requestContext } from '../context.js';
import type { AppDeps } from '../deps.js';
import { ApiError } from '../errors.js';
import { jsonShapeProblem, tooComplex } from '../json-body.js';
import { RateLimiter } from '../rate-limit.js';

const invalidToken = () => new ApiError(401, 'invalid_token', 'The webhook token is missing, wrong or was replaced');
const maxBody = 1024 * 1024;

/** Valid JSON is the input as is, other text becomes a JSON string, an empty body means no input (docs/api.md). */
export function webhookInput(body: Buffer | undefined): unknown {
  if (!body || body.length === 0) return {};
  const text = body.toString('utf8');
  if (text.trim() === '') return {};
  // Same shape limits as every JSON body of the API (api/json-body.ts): parsing is where a hostile body costs.
  const problem = jsonShapeProblem(text);
  if (problem) throw tooComplex(problem);
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

export default function hookRoutes(fastify: FastifyInstance, deps: AppDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  // 60 a minute sustained with bursts of 30, per job: a leaked URL cannot flood the queue (docs/api.md).
  const limiter = new RateLimiter(60, 30);

  app.post(
    '/api/jobs/:id/webhook-token',
    {
      schema: {
        summary: 'Create or replace the webhook token',
        description: 'The token (svh_…) is shown only in this answer; the previous one stops working at once.',
        tags: ['runs'],
        params: IdParams,
        response: { 201: WebhookTokenOutput },
      },
    },
    async (request, reply) => {
      const p = principalOf(request);
      const token = await deps.jobs.replaceWebhookToken(requestContext(request), p.workspaceId, request.params.id);
      return reply.status(201).send({ token, url: `/hooks/${request.params.id}` });
    },
  );

  // Outside /api and its sign-in: the job's webhook token is the only credential, and any body is accepted.
  void app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: maxBody }, (_req, body, done) => done(null, body));
    scope.withTypeProvider<TypeBoxTypeProvider>().post(
      '/hooks/:jobId',
      {
        schema: {
          summary: 'Start a run from a webhook',
          description:
            'Authorization: Bearer svh_…. A JSON body becomes the run input; other text becomes a JSON string.',
          tags: ['runs'],
          params: Type.Object(
            { jobId: Type.String({ minLength: 1, maxLength: 100 }) },
            { additionalProperties: false },
          ),
          response: { 200: TriggerRunOutput },
        },
      },
      async (request) => {
        const { jobId } = request.params;
        limiter.take(jobId);
        const header = request.headers.authorization ?? '';
        const given = /^Bearer\s+(\S+)\s*$/i.exec(header)?.[1];
        if (!given) throw invalidToken();
        const job = await deps.queries.jobForWebhook(jobId, given);
        if (!job) throw invalidToken();
        const ctx = {
          workspaceId: job.workspaceId,
          actor: { type: 'system' as const, id: null },
          requestId: request.id,
        };
        const answer = await deps.runs.trigger(
          job.workspaceId,
          jobId,
          {
            trigger: 'webhook',
            triggeredBy: null,
            input: webhookInput(request.body as Buffer | undefined),
            instructions: null,
          },
          ctx,
        );
        await deps.engine.readYourWrites(answer.position);
        return { runId: answer.runId, status: answer.status };
      },
    );
  });
}
