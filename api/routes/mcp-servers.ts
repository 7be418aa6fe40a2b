import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Type from 'typebox';
import type { McpServerInput } from '../../domain/mcp-server.js';
import { IdParams, listQueryProperties } from '../../schemas/common.js';
import {
  JobServer,
  McpServerDto,
  McpServerInputBody,
  McpServerListEnvelope,
  McpTestOutputBody,
} from '../../schemas/mcp.js';
import { principalOf } from '../auth.js';
import { requestContext } from '../context.js';
import type { AppDeps } from '../deps.js';
import { parseListQuery, type ListQueryInput } from '../list-query.js';
import type { WorkspaceQueries } from '../../app/queries/index.js';
import type { CommandContext } from '../../app/commands.js';
import type { Principal } from '../principal.js';

const tags = ['mcp'];

/** A page of the workspace's MCP servers (`GET /api/mcp-servers`, and the MCP server's `list_mcp_servers`). */
export async function listMcpServers(
  deps: AppDeps,
  queries: WorkspaceQueries,
  q: ListQueryInput,
): Promise<McpServerListEnvelope> {
  const list = parseListQuery(q, {
    sortKeys: { name: 'nameLower', createdAt: 'createdAt', updatedAt: 'updatedAt' },
    defaultSort: 'name',
    searchFields: ['name'],
  });
  const { items, total } = await queries.mcpServers.list(list);
  return { items: items.map((d) => deps.mcp.toDto(d)), page: list.page, pageSize: list.pageSize, total };
}

/** Replaces a job's grants and answers them (`PUT /api/jobs/{id}/mcp-servers`, and `set_job_mcp_servers`). */
export async function setJobServers(
  deps: AppDeps,
  p: Principal,
  ctx: CommandContext,
  jobId: string,
  grants: JobServer[],
): Promise<JobServer[]> {
  await deps.queries.forPrincipal(p).jobs.get(jobId);
  await deps.mcp.setGrants(
    ctx,
    p.workspaceId,
    jobId,
    grants.map(({ serverId, allowedTools }) => ({ serverId, allowedTools })),
  );
  return deps.mcp.grants(p.workspaceId, jobId);
}

/** MCP servers of the workspace and a job's grants of them: which servers a run may reach, and which tools. */
export default function mcpServerRoutes(fastify: FastifyInstance, deps: AppDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const mcp = deps.mcp;
  const input = (b: McpServerInputBody): McpServerInput => b as McpServerInput;

  app.get(
    '/api/mcp-servers',
    {
      schema: {
        summary: 'List MCP servers',
        tags,
        querystring: Type.Object({ ...listQueryProperties }, { additionalProperties: false }),
        response: { 200: McpServerListEnvelope },
      },
    },
    async (request) => listMcpServers(deps, deps.queries.forPrincipal(principalOf(request)), request.query),
  );

  app.post(
    '/api/mcp-servers',
    {
      schema: {
        summary: 'Register an MCP server',
        description:
          "Only the chosen transport's fields are stored. Values may reference `{{secret:NAME}}`; they are resolved on the host when a connection opens.",
        tags,
        body: McpServerInputBody,
        response: { 201: McpServerDto },
      },
    },
    async (request, reply) => {
      const p = principalOf(request);
      const id = await mcp.create(requestContext(request), p.workspaceId, input(request.body));
      return reply
        .status(201)
        .header('location', `/api/mcp-servers/${id}`)
        .send(mcp.toDto(await mcp.get(p.workspaceId, id)));
    },
  );

  app.get(
    '/api/mcp-servers/:id',
    { schema: { summary: 'Get an MCP server', tags, params: IdParams, response: { 200: McpServerDto } } },
    async (request) => {
      return mcp.toDto(await mcp.get(principalOf(request).workspaceId, request.params.id));
    },
  );

  app.put(
    '/api/mcp-servers/:id',
    {
      schema: {
        summary: 'Replace an MCP server',
        tags,
        params: IdParams,
        body: McpServerInputBody,
        response: { 200: McpServerDto },
      },
    },
    async (request) => {
      const p = principalOf(request);
      await mcp.replace(requestContext(request), p.workspaceId, request.params.id, input(request.body));
      return mcp.toDto(await mcp.get(p.workspaceId, request.params.id));
    },
  );

  app.delete(
    '/api/mcp-servers/:id',
    {
      schema: {
        summary: 'Delete an MCP server',
        description: 'Jobs that were granted it lose it from their next run.',
        tags,
        params: IdParams,
        response: { 204: Type.Null() },
      },
    },
    async (request, reply) => {
      await mcp.delete(requestContext(request), principalOf(request).workspaceId, request.params.id);
      return reply.status(204).send(null);
    },
  );

  app.post(
    '/api/mcp-servers/:id/test',
    {
      schema: {
        summary: 'Connect to an MCP server and list its tools',
        description:
          'Caches the tools for job grants. HTTP servers are reached from the host; stdio servers start in a temporary sandbox.',
        tags,
        params: IdParams,
        response: { 200: McpTestOutputBody },
      },
    },
    async (request) => {
      const r = await mcp.test(requestContext(request), principalOf(request).workspaceId, request.params.id);
      return { ok: r.ok, latencyMs: r.latencyMs, error: r.error, tools: r.tools ?? [], auth: r.auth };
    },
  );

  app.get(
    '/api/jobs/:id/mcp-servers',
    {
      schema: {
        summary: "A job's MCP servers and the tools it may use",
        tags,
        params: IdParams,
        response: { 200: Type.Array(JobServer) },
      },
    },
    async (request) => {
      const p = principalOf(request);
      await deps.queries.forPrincipal(p).jobs.get(request.params.id);
      return mcp.grants(p.workspaceId, request.params.id);
    },
  );

  app.put(
    '/api/jobs/:id/mcp-servers',
    {
      schema: {
        summary: "Replace a job's MCP servers",
        description:
          '`allowedTools: null` grants every tool, including tools the server adds later. Disabled servers are skipped by runs.',
        tags,
        params: IdParams,
        body: Type.Array(JobServer, { maxItems: 100 }),
        response: { 200: Type.Array(JobServer) },
      },
    },
    async (request) =>
      setJobServers(deps, principalOf(request), requestContext(request), request.params.id, request.body),
  );
}
