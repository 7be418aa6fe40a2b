import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { ErrorBody } from '../schemas/common.js';

/**
 * Errors found before a request reaches a route, answered in the API's error format like every other error
 * (docs/security.md, "Requests: validation cost, bounds, access"): a path parameter over the router's length
 * limit, a malformed percent-encoding, and requests Node's HTTP parser refuses (headers over 16 KiB, broken syntax).
 */

/** Fastify's `frameworkErrors`: the router refused the URL, so no route (and none of its hooks) runs. */
export function frameworkError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const message =
    error.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 'is longer than 4096 characters' : 'is not a valid URL component';
  const body: ErrorBody = {
    code: 'validation_failed',
    message: `A path parameter ${message}`,
    fields: [{ field: 'path', code: 'invalid', message }],
    requestId: request.id,
  };
  void reply
    .status(400)
    .headers({ 'X-Request-ID': request.id, 'X-Content-Type-Options': 'nosniff' })
    .type('application/json; charset=utf-8')
    .send(body);
}

/** Fastify's `clientErrorHandler`: Node refused the request before it became one; the answer is written by hand. */
export function clientError(err: NodeJS.ErrnoException, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed || !socket.writable) {
    socket.destroy();
    return;
  }
  const requestId = randomUUID();
  const [status, body]: [number, ErrorBody] =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? [431, { code: 'request_too_large', message: 'The request line and headers are longer than 16 KiB', requestId }]
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, { code: 'request_timeout', message: 'The request did not arrive in time', requestId }]
        : [400, { code: 'invalid_request', message: 'The request is not valid HTTP', requestId }];
  const text = JSON.stringify(body);
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(text)}\r\nX-Request-ID: ${requestId}\r\nConnection: close\r\n\r\n${text}`,
  );
}
