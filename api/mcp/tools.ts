import Type, { type Static, type TSchema } from 'typebox';
import type { CommandContext } from '../../app/commands.js';
import type { WorkspaceQueries } from '../../app/queries/index.js';
import type { TextIndex } from '../../domain/text-search.js';
import { IdParams, listQueryProperties } from '../../schemas/common.js';
import { CompileInputBody } from '../../schemas/compile.js';
import { JobFields, JobListQuery, JobPatchBody } from '../../schemas/job.js';
import { JobServer } from '../../schemas/mcp.js';
import { RunListQuery, TriggerRunBody, type RunDto } from '../../schemas/run.js';
import type { AppDeps } from '../deps.js';
import type { Principal } from '../principal.js';
import { asProviderError, compileJob } from '../routes/compile.js';
import { listJobs, toJobDto } from '../routes/jobs.js';
import { listMcpServers, setJobServers } from '../routes/mcp-servers.js';
import { listRuns, toRunDto } from '../routes/runs.js';

/** What a tool acts with: the caller of the HTTP request that carried the call (docs/mcp-server.md, "Tools"). */
export interface ToolContext {
  deps: AppDeps;
  principal: Principal;
  command: CommandContext;
  queries: WorkspaceQueries;
  docs: () => Promise<TextIndex>;
}

export interface ToolAnnotations {
  title: string;
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

export interface Tool {
  name: string;
  description: string;
  /** A TypeBox schema from `schemas/`: the tool's JSON Schema and its validation, like the route's body. */
  input: TSchema;
  annotations: ToolAnnotations;
  /** The HTTP route the tool does the work of: its row in api/access.ts decides who may call the tool. */
  route: string;
  run(args: unknown, c: ToolContext): Promise<unknown>;
}

function tool<S extends TSchema>(
  def: Omit<Tool, 'run' | 'input'> & { input: S; run(args: Static<S>, c: ToolContext): Promise<unknown> },
): Tool {
  return def as unknown as Tool;
}

const readOnly = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };
const id = IdParams.properties.id;
const jobId = Type.String({ ...id, description: 'The job id' });
const runId = Type.String({ ...id, description: 'The run id' });

/** What `get_run` answers: the run's state and results, without its input echo and learning details. */
function runView(r: RunDto) {
  return {
    id: r.id,
    jobId: r.jobId,
    jobName: r.jobName,
    number: r.number,
    status: r.status,
    mode: r.mode,
    trigger: r.trigger,
    summary: r.summary,
    outputs: r.outputs,
    error: r.error,
    cost: r.cost,
    turns: r.turns,
    queuedAt: r.queuedAt,
    startedAt: r.startedAt,
    finishedAt: r.finishedAt,
    msTotal: r.msTotal,
    fellBack: r.fellBack,
  };
}

export const tools: Tool[] = [
  tool({
    name: 'list_jobs',
    description:
      'List the jobs of your workspace (25 per page, up to 100). `search` matches name and instruction; `sort` takes name, createdAt, updatedAt, nextRunAt, enabled, runCount (prefix - for descending).',
    input: JobListQuery,
    annotations: { title: 'List jobs', ...readOnly },
    route: 'GET /api/jobs',
    run: async (args, c) => listJobs(c.queries.jobs, args)(),
  }),
  tool({
    name: 'get_job',
    description:
      'Get one job: instruction, spec, schedule, limits, network, the mode its next run takes, its last run.',
    input: Type.Object({ id: jobId }, { additionalProperties: false }),
    annotations: { title: 'Get a job', ...readOnly },
    route: 'GET /api/jobs/:id',
    run: async (args, c) => toJobDto(await c.queries.jobs.get(args.id)),
  }),
  tool({
    name: 'create_job',
    description:
      'Create a job from a name and a natural-language instruction (and optionally the spec compile_job proposed, a cron schedule, limits, network). Answers the job.',
    input: JobFields,
    annotations: {
      title: 'Create a job',
      readOnlyHint: false,
      destructiveHint: false,
      idempotentHint: false,
      openWorldHint: false,
    },
    route: 'POST /api/jobs',
    run: async (args, c) => {
      const created = await c.deps.jobs.create(c.command, c.principal.workspaceId, args);
      return toJobDto(await c.queries.jobs.get(created));
    },
  }),
  tool({
    name: 'compile_job',
    description:
      "Turn a sentence into a proposed job (title, goal, schedule, success criteria, inputs, outputs, MCP needs, network) with the workspace's utility model. Nothing is saved: pass the answer's fields to create_job.",
    input: CompileInputBody,
    annotations: { title: 'Compile a job', ...readOnly, idempotentHint: false, openWorldHint: true },
    route: 'POST /api/jobs/compile',
    run: async (args, c) => compileJob(c.deps, c.principal.workspaceId, args),
  }),
  tool({
    name: 'update_job',
    description:
      'Change the fields given, leave the others. An empty string clears modelId, image, cron, timezone and modePin. A changed instruction recompiles the spec unless rebuildSpec is false.',
    input: Type.Object({ id: jobId, ...JobPatchBody.properties }, { additionalProperties: false }),
    annotations: {
      title: 'Update a job',
      readOnlyHint: false,
      destructiveHint: true,
      idempotentHint: true,
      openWorldHint: false,
    },
    route: 'PATCH /api/jobs/:id',
    run: async ({ id: target, ...patch }, c) => {
      await asProviderError(c.deps.jobs.change(c.command, c.principal.workspaceId, target, patch));
      return toJobDto(await c.queries.jobs.get(target));
    },
  }),
  tool({
    name: 'run_job',
    description:
      'Start a run of a job now, with optional JSON input and extra instructions. Answers {runId, status}: queued, or skipped under the job overlap policy. Follow it with get_run.',
    input: Type.Object({ id: jobId, ...TriggerRunBody.properties }, { additionalProperties: false }),
    annotations: {
      title: 'Run a job',
      readOnlyHint: false,
      destructiveHint: false,
      idempotentHint: false,
      openWorldHint: true,
    },
    route: 'POST /api/jobs/:id/runs',
    run: async (args, c) => {
      const answer = await c.deps.runs.trigger(
        c.principal.workspaceId,
        args.id,
        {
          trigger: 'api',
          triggeredBy: c.principal.userId,
          input: args.input ?? {},
          instructions: args.instructions?.trim() || null,
        },
        c.command,
      );
      await c.deps.engine.readYourWrites(answer.position);
      return { runId: answer.runId, status: answer.status };
    },
  }),
  tool({
    name: 'get_run',
    description:
      'Get a run: status (queued, provisioning, running, verifying, then succeeded, failed, timed_out, cancelled or skipped), summary, outputs, error, cost.',
    input: Type.Object({ id: runId }, { additionalProperties: false }),
    annotations: { title: 'Get a run', ...readOnly },
    route: 'GET /api/runs/:id',
    run: async (args, c) => runView(toRunDto(await c.queries.runs.get(args.id))),
  }),
  tool({
    name: 'list_runs',
    description:
      'List runs, newest first (25 per page, up to 100). Filters: status, job (comma-separated ids), mode, trigger, from/to (Unix ms); search covers summary, error and job name.',
    input: RunListQuery,
    annotations: { title: 'List runs', ...readOnly },
    route: 'GET /api/runs',
    run: async (args, c) => {
      const page = await listRuns(c.queries, args);
      return { ...page, items: page.items.map(runView) };
    },
  }),
  tool({
    name: 'cancel_run',
    description: 'Cancel a queued or live run. A finished run is a conflict.',
    input: Type.Object({ id: runId }, { additionalProperties: false }),
    annotations: {
      title: 'Cancel a run',
      readOnlyHint: false,
      destructiveHint: true,
      idempotentHint: false,
      openWorldHint: false,
    },
    route: 'POST /api/runs/:id/cancel',
    run: async (args, c) => {
      const position = await c.deps.runs.cancel(c.principal.workspaceId, args.id, c.command);
      await c.deps.engine.readYourWrites(position);
      return runView(toRunDto(await c.queries.runs.get(args.id)));
    },
  }),
  tool({
    name: 'list_mcp_servers',
    description: 'List the MCP servers registered in your workspace (ids for set_job_mcp_servers), with their tools.',
    input: Type.Object({ ...listQueryProperties }, { additionalProperties: false }),
    annotations: { title: 'List MCP servers', ...readOnly },
    route: 'GET /api/mcp-servers',
    run: async (args, c) => listMcpServers(c.deps, c.queries, args),
  }),
  tool({
    name: 'set_job_mcp_servers',
    description:
      "Replace a job's MCP servers: [{serverId, allowedTools}], allowedTools null for every tool. An empty list removes them all. Answers the grants.",
    input: Type.Object(
      { id: jobId, servers: Type.Array(JobServer, { maxItems: 100 }) },
      { additionalProperties: false },
    ),
    annotations: {
      title: "Set a job's MCP servers",
      readOnlyHint: false,
      destructiveHint: true,
      idempotentHint: true,
      openWorldHint: false,
    },
    route: 'PUT /api/jobs/:id/mcp-servers',
    run: async (args, c) => ({
      servers: await setJobServers(c.deps, c.principal, c.command, args.id, args.servers),
    }),
  }),
  tool({
    name: 'search_docs',
    description:
      "Search this service's documentation and API reference. Answers the best passages with their source (docs/<file>.md#<heading> or openapi:<METHOD> <path>) and a snippet.",
    input: Type.Object(
      {
        query: Type.String({ minLength: 1, maxLength: 200, description: 'Words to look for' }),
        limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 20, default: 5 })),
      },
      { additionalProperties: false },
    ),
    annotations: { title: 'Search the docs', ...readOnly },
    route: 'GET /api/openapi.json',
    run: async (args, c) => ({ results: (await c.docs()).search(args.query, args.limit ?? 5) }),
  }),
];
