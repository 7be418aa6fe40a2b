import type { FastifyReply, FastifyRequest } from 'fastify';

export const keepaliveMs = 20_000;

/** An open server-sent-events answer: headers that stop proxies buffering, a keepalive comment, clean teardown. */
export interface SseChannel {
  send(event: string, data: unknown, id?: number): void;
  /** `data` already serialized as JSON (shared by every client of one event). */
  sendJson(event: string, json: string, id?: number): void;
  close(): void;
  onClose(fn: () => void): void;
}

export function openSse(request: FastifyRequest, reply: FastifyReply): SseChannel {
  reply.hijack();
  const raw = reply.raw;
  const headers = reply.getHeaders() as Record<string, string>;
  raw.writeHead(200, {
    ...headers,
    'Content-Type': 'text/event-stream; charset=utf-8',
    'Cache-Control': 'no-cache, no-transform',
    Connection: 'keep-alive',
    'X-Accel-Buffering': 'no',
  });
  raw.write(': connected\n\n');
  const closers: Array<() => void> = [];
  let closed = false;
  const keepalive = setInterval(() => raw.write(': keepalive\n\n'), keepaliveMs);
  const teardown = () => {
    if (closed) return;
    closed = true;
    clearInterval(keepalive);
    for (const fn of closers) fn();
  };
  request.raw.on('close', teardown);
  return {
    send(event, data, id) {
      this.sendJson(event, JSON.stringify(data), id);
    },
    sendJson(event, json, id) {
      if (closed) return;
      raw.write(`${id === undefined ? '' : `id: ${id}\n`}event: ${event}\ndata: ${json}\n\n`);
    },
    close() {
      teardown();
      raw.end();
    },
    onClose(fn) {
      closers.push(fn);
    },
  };
}
