import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { randomUUID } from 'node:crypto';
import { registerAuth } from './auth.js';
import type { AppDeps } from './deps.js';
import { registerErrorHandling } from './errors.js';
import { installJsonParser } from './json-body.js';
import { clientError, frameworkError } from './protocol-errors.js';
import { OpenApiRegistry } from './openapi.js';
import './principal.js';
import adminRoutes from './routes/admin.js';
import auditRoutes from './routes/audit.js';
import authRoutes from './routes/auth.js';
import signInRoutes from './routes/sign-in.js';
import docsRoutes from './routes/docs.js';
import jobRoutes from './routes/jobs.js';
import hookRoutes from './routes/hooks.js';
import imageRoutes from './routes/images.js';
import jobStateRoutes from './routes/job-state.js';
import playbookRoutes from './routes/playbook.js';
import statsRoutes from './routes/stats.js';
import memberRoutes from './routes/members.js';
import mcpServerRoutes from './routes/mcp-servers.js';
import mcpOauthRoutes from './routes/mcp-oauth.js';
import mcpRoutes from './routes/mcp.js';
import notificationRoutes from './routes/notifications.js';
import compileRoutes from './routes/compile.js';
import providerRoutes from './routes/providers.js';
import secretRoutes from './routes/secrets.js';
import settingsRoutes from './routes/settings.js';
import runRoutes from './routes/runs.js';
import systemRoutes from './routes/system.js';
import tokenRoutes from './routes/tokens.js';
import webRoutes from './routes/web.js';
import workspaceRoutes from './routes/workspaces.js';
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
    // Fastify's own per-request lines are off: the onResponse hook below logs what docs/api.md (Errors) asks for.
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'requestId' }),
    requestIdHeader: false,
    // A client's own X-Request-ID is kept when it is short and printable, so its logs and ours line up.
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && clientRequestId.test(given) ? given : randomUUID();
    },
    bodyLimit: 1024 * 1024,
    // Path parameters are checked by the routes' schemas (a state key may be 200 characters, up to 2,400 when
    // percent-encoded); the router's default of 100 would answer 414 before any of them is seen.
    routerOptions: { maxParamLength: 4096 },
    trustProxy: false,
    // Errors of the router and of Node's HTTP parser answer in the API's error format too.
    frameworkErrors: frameworkError,
    clientErrorHandler: clientError,
  });
  // The API speaks JSON only: a text body is refused as invalid_request_body instead of failing validation later.
  app.removeContentTypeParser('text/plain');
  installJsonParser(app);
  const openapi = new OpenApiRegistry(deps.version);
  openapi.attach(app);
  installCompilers(app);
  registerErrorHandling(app);
  // Set first thing, so every answer carries them, errors and 404s included.
  app.addHook('onRequest', (request, reply, done) => {
    void reply.headers({
      'X-Request-ID': request.id,
      'X-Content-Type-Options': 'nosniff',
      'Referrer-Policy': 'same-origin',
      'X-Frame-Options': 'DENY',
    });
    done();
  });
  registerAuth(app, deps.identity);

  // Answers of 400 and above are logged with their request id, the rest only at debug level (docs/api.md).
  const logAll = app.log.level === 'debug' || app.log.level === 'trace';
  app.addHook('onResponse', (request, reply, done) => {
    const status = reply.statusCode;
    if (status >= 400 || logAll) {
      const entry = {
        requestId: request.id,
        method: request.method,
        url: request.url,
        status,
        ms: Math.round(reply.elapsedTime),
      };
      if (status >= 500) request.log.error(entry, 'request failed');
      else if (status >= 400) request.log.warn(entry, 'request refused');
      else request.log.debug(entry, 'request');
    }
    done();
  });

  jobRoutes(app, deps);
  runRoutes(app, deps);
  hookRoutes(app, deps);
  providerRoutes(app, deps);
  settingsRoutes(app, deps);
  notificationRoutes(app, deps);
  jobStateRoutes(app, deps);
  imageRoutes(app, deps);
  playbookRoutes(app, deps);
  statsRoutes(app, deps);
  secretRoutes(app, deps);
  mcpServerRoutes(app, deps);
  mcpOauthRoutes(app, deps);
  mcpRoutes(app, deps, openapi);
  compileRoutes(app, deps);
  tokenRoutes(app, deps);
  systemRoutes(app, deps);
  authRoutes(app, deps);
  signInRoutes(app, deps);
  memberRoutes(app, deps);
  adminRoutes(app, deps);
  workspaceRoutes(app, deps);
  auditRoutes(app, deps);
  docsRoutes(app, openapi);
  webRoutes(app);
  await app.ready();
  return { app, openapi };
}
