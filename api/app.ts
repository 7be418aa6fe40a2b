import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { newId } from '../server/ids.js';
import { registerAuth } from './auth.js';
import type { AppDeps } from './deps.js';
import { registerErrorHandling } from './errors.js';
import { OpenApiRegistry } from './openapi.js';
import './principal.js';
import adminRoutes from './routes/admin.js';
import authRoutes from './routes/auth.js';
import docsRoutes from './routes/docs.js';
import jobRoutes from './routes/jobs.js';
import memberRoutes from './routes/members.js';
import systemRoutes from './routes/system.js';
import tokenRoutes from './routes/tokens.js';
import { installCompilers } from './validation.js';

const clientRequestId = /^[\x21-\x7e]{1,64}$/;

export interface BuiltApp {
  app: FastifyInstance;
  openapi: OpenApiRegistry;
}

/** Builds the API; `logger` is the process's pino logger, or undefined for a silent app (`svc openapi`). */
export async function buildApp(deps: AppDeps, logger?: FastifyBaseLogger): Promise<BuiltApp> {
  const app = Fastify({
    ...(logger ? { loggerInstance: logger } : { logger: false }),
    disableRequestLogging: true,
    requestIdHeader: false,
    requestIdLogLabel: 'requestId',
    // A client's own X-Request-ID is kept when it is short and printable, so its logs and ours line up.
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && clientRequestId.test(given) ? given : newId();
    },
    bodyLimit: 1024 * 1024,
    trustProxy: false,
  });
  // The API speaks JSON only: a text body is refused as invalid_request_body instead of failing validation later.
  app.removeContentTypeParser('text/plain');
  const openapi = new OpenApiRegistry(deps.version);
  openapi.attach(app);
  installCompilers(app);
  registerErrorHandling(app);
  registerAuth(app, deps.identity);

  app.addHook('onSend', async (request, reply) => {
    void reply.header('X-Request-ID', request.id);
    void reply.header('X-Content-Type-Options', 'nosniff');
    void reply.header('Referrer-Policy', 'same-origin');
    void reply.header('X-Frame-Options', 'DENY');
  });
  // SPEC §7: answers of 400 and above are logged with their request id, the rest only at debug level.
  app.addHook('onResponse', async (request, reply) => {
    const entry = { requestId: request.id, method: request.method, url: request.url, status: reply.statusCode, ms: Math.round(reply.elapsedTime) };
    if (reply.statusCode >= 500) request.log.error(entry, 'request failed');
    else if (reply.statusCode >= 400) request.log.warn(entry, 'request refused');
    else request.log.debug(entry, 'request');
  });

  jobRoutes(app, deps);
  tokenRoutes(app, deps);
  systemRoutes(app, deps);
  authRoutes(app, deps);
  memberRoutes(app, deps);
  adminRoutes(app, deps);
  docsRoutes(app, openapi);
  await app.ready();
  return { app, openapi };
}
