import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { DomainError } from '../../domain/decider.js';
import {
  compileAnswerSchema,
  compileSchemaName,
  compileSystemPrompt,
  compileUserMessage,
  finishCompile,
} from '../../domain/compile.js';
import { CompileInputBody, CompileOutputBody } from '../../schemas/compile.js';
import { ApiError } from '../errors.js';
import { principalOf } from '../auth.js';
import type { AppDeps } from '../deps.js';
import { errorMessage } from '../../domain/error-message.js';

const timeoutMs = 5 * 60_000;

/** `POST /api/jobs/compile`: a sentence in, a proposed job out, nothing saved. */
export default function compileRoutes(fastify: FastifyInstance, deps: AppDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.post(
    '/api/jobs/compile',
    {
      schema: {
        summary: 'Compile a sentence into a proposed job',
        description:
          'Uses the workspace utility model (else the agent model) with structured output. MCP needs are matched against the configured servers; nothing is saved.',
        tags: ['jobs'],
        body: CompileInputBody,
        response: { 200: CompileOutputBody },
      },
    },
    async (request) => {
      const p = principalOf(request);
      const instruction = request.body.instruction.trim();
      if (instruction === '')
        throw DomainError.validation([{ field: 'instruction', code: 'required', message: 'must not be blank' }]);
      const model = await deps.models.resolve(p.workspaceId, 'utility', null);
      if (!model) throw new DomainError('unsupported', 'Set a utility model in Settings to compile jobs');
      const servers = await deps.mcp.names(p.workspaceId);
      let text: string;
      try {
        const answer = await model.client.complete({
          model: model.name,
          system: [compileSystemPrompt],
          messages: [
            {
              role: 'user',
              text: compileUserMessage(
                instruction,
                Date.now(),
                servers.map((s) => s.name),
              ),
            },
          ],
          tools: [],
          maxTokens: 4096,
          effort: 'low',
          jsonSchema: { name: compileSchemaName, schema: compileAnswerSchema },
          signal: AbortSignal.timeout(timeoutMs),
        });
        text = answer.text;
      } catch (err) {
        throw new ApiError(502, 'provider_error', `The model could not compile the job: ${errorMessage(err)}`);
      }
      let raw: unknown;
      try {
        raw = JSON.parse(text) as unknown;
      } catch {
        throw new ApiError(502, 'provider_error', 'The model could not compile the job: its answer was not JSON');
      }
      const sandbox = deps.sandbox();
      return finishCompile(raw, {
        instruction,
        servers,
        networks: sandbox?.capabilities.networks ?? null,
        imageBuilds: sandbox ? sandbox.imageBuilds : null,
      });
    },
  );
}
