import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { CompileInputBody, CompileOutputBody } from '../../schemas/compile.js';
import { ApiError } from '../errors.js';
import { principalOf } from '../auth.js';
import type { AppDeps } from '../deps.js';
import { CompileFailed } from '../../app/compile.js';

/** Compiles for a workspace; a model that fails is a `502 provider_error` (also the MCP server's `compile_job`). */
export async function compileJob(deps: AppDeps, workspaceId: string, body: CompileInputBody) {
  return asProviderError(
    deps.compiler.compile(workspaceId, body.instruction, {
      ...(body.askQuestions !== undefined ? { askQuestions: body.askQuestions } : {}),
    }),
  );
}

/** Work that may compile (a compile, a job update that recompiles its spec): a model that fails is a 502. */
export async function asProviderError<T>(work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (err) {
    if (err instanceof CompileFailed) throw new ApiError(502, 'provider_error', err.message);
    throw err;
  }
}

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
    async (request) => compileJob(deps, principalOf(request).workspaceId, request.body),
  );
}
