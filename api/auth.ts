import type { FastifyInstance, FastifyRequest } from 'fastify';
import { DomainError } from '../domain/decider.js';
import { roleRank } from '../domain/membership.js';
import { sessionCookieName, type Identity, type SessionClaims } from '../app/identity.js';
import { accessTable, routeKey, type AccessRule } from './access.js';
import type { Principal } from './principal.js';
import { requestContext } from './context.js';

export function readCookie(request: FastifyRequest, name: string): string | null {
  const header = request.headers.cookie;
  if (!header) return null;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) {
      try {
        return decodeURIComponent(part.slice(eq + 1).trim());
      } catch {
        return null; // a malformed escape is no credential, not a server error
      }
    }
  }
  return null;
}

export function ruleFor(method: string, url: string): AccessRule {
  const rule = accessTable[routeKey(method, url)];
  if (!rule) throw new Error(`route ${method} ${url} has no row in api/access.ts`);
  return rule;
}

async function resolvePrincipal(
  identity: Identity,
  request: FastifyRequest,
  rule: AccessRule,
): Promise<Principal | null> {
  const authorization = request.headers.authorization;
  // A Bearer header always wins over the cookie: a script's token must not silently act as the browser's user.
  if (authorization !== undefined) {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    if (!match) throw new DomainError('invalid_token', 'Token is invalid or expired');
    return identity.principalFromToken(match[1]!, requestContext(request));
  }
  const cookie = rule.token ? null : readCookie(request, sessionCookieName);
  if (!cookie) return null;
  const claims = identity.decodeSession(cookie);
  return claims ? identity.principalFromSession(claims) : null;
}

/** Every route's access rule comes from the table; a route without a row fails at start-up. */
export function registerAuth(app: FastifyInstance, identity: Identity): void {
  app.decorateRequest('principal', null);
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const m of methods) if (m !== 'HEAD') ruleFor(m, route.url);
  });
  // onRequest: credentials are checked before the body is even parsed, so a stranger learns nothing from validation.
  // A script's cached token is decided without a promise: the list routes it polls are the hot path.
  app.addHook('onRequest', (request, _reply, done) => {
    const url = request.routeOptions.url;
    if (url === undefined) return done(); // not-found handler
    const rule = ruleFor(request.method === 'HEAD' ? 'GET' : request.method, url);
    const authorization = request.headers.authorization;
    const bearer = authorization === undefined ? undefined : /^Bearer\s+(\S+)\s*$/i.exec(authorization)?.[1];
    const cookie = authorization === undefined && !rule.token ? readCookie(request, sessionCookieName) : null;
    const cached =
      bearer !== undefined
        ? identity.cachedTokenPrincipal(bearer)
        : cookie
          ? identity.cachedSessionPrincipal(cookie)
          : undefined;
    if (cached) {
      try {
        admit(request, rule, cached);
        return done();
      } catch (err) {
        return done(err as Error);
      }
    }
    resolvePrincipal(identity, request, rule).then(
      (principal) => {
        try {
          admit(request, rule, principal);
        } catch (err) {
          return done(err as Error);
        }
        done();
      },
      // Public routes still learn who is calling when they can, but never fail for a bad credential.
      (err: Error) => (rule.access === 'public' ? done() : done(err)),
    );
  });
}

/** Sets the caller of a route, or refuses it by the route's rule. */
function admit(request: FastifyRequest, rule: AccessRule, principal: Principal | null): void {
  if (rule.access === 'public') {
    request.principal = principal;
    return;
  }
  if (!principal)
    throw new DomainError('not_signed_in', 'Sign in or send an API token (Authorization: Bearer svc_...)');
  request.principal = principal;
  if (rule.session && principal.kind !== 'session') {
    throw new DomainError('forbidden', 'This can only be done while signed in, not with an API token');
  }
  if (rule.access === 'iadmin') {
    if (!principal.isAdmin) throw new DomainError('forbidden', 'Only instance admins can do this');
  } else if (roleRank[principal.role] < roleRank[rule.access]) {
    throw new DomainError(
      'forbidden',
      rule.access === 'owner'
        ? 'Only the owner of the workspace can do this'
        : 'Only admins of the workspace can do this',
    );
  }
}

/** The principal of a route that is not public (the hook guarantees it). */
export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw new DomainError('not_signed_in', 'Sign in or send an API token');
  return request.principal;
}

/** The claims of the caller's session cookie, for the routes that re-issue it (switch, leave, accept, delete). */
export function sessionClaimsOf(request: FastifyRequest, identity: Identity): SessionClaims {
  const cookie = readCookie(request, sessionCookieName);
  const claims = cookie ? identity.decodeSession(cookie) : null;
  if (!claims) throw new DomainError('not_signed_in', 'Sign in first');
  return claims;
}
