import type { FastifyRequest } from 'fastify';
import type { CommandContext } from '../app/commands.js';

/** Metadata for the events a request appends: who, in which workspace, under which request id. */
export function requestContext(request: FastifyRequest): CommandContext {
  const p = request.principal;
  return {
    workspaceId: p?.workspaceId ?? null,
    actor: p
      ? p.kind === 'token'
        ? { type: 'token', id: p.tokenId }
        : { type: 'user', id: p.userId }
      : { type: 'system', id: null },
    requestId: request.id,
  };
}
