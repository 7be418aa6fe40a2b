import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, extname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

/**
 * The web app (docs/design.md, "Web app"): the files `vite build` wrote to dist/web, held in memory with a gzip copy,
 * served at `/` with the index as the answer to any other page path so deep links survive a reload.
 */

// Nothing but the app's own files: no inline script or style, no frames, no plugins, no form posts elsewhere, and a
// summary's markdown can never make the browser fetch an image from another host (docs/security.md, "Web app").
export const contentSecurityPolicy = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "font-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const types: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
};

interface Asset {
  body: Buffer;
  gzip: Buffer | null;
  type: string;
  etag: string;
  cacheControl: string;
}

/** Built next to the compiled server (dist/api/routes → dist/web), or under dist/ when the server runs from source. */
export function webDir(): string {
  const here = fileURLToPath(new URL('.', import.meta.url));
  const built = basename(resolve(here, '../..')) === 'dist';
  return built ? resolve(here, '../../web') : resolve(here, '../../dist/web');
}

function load(root: string): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      // Dot files are the build's own notes (`.source-hash`), not part of the app.
      if (name.startsWith('.')) continue;
      const full = join(dir, name);
      if (statSync(full).isDirectory()) walk(full);
      else {
        const url = '/' + relative(root, full).split(sep).join('/');
        const body = readFileSync(full);
        const type = types[extname(name)] ?? 'application/octet-stream';
        const text = type.startsWith('text/') || type.startsWith('application/json') || type === 'image/svg+xml';
        const gz = text && body.length > 1024 ? gzipSync(body, { level: 9 }) : null;
        // Vite names every file under /assets by its content hash: such a file never changes, the rest may.
        const cacheControl = url.startsWith('/assets/') ? 'public, max-age=31536000, immutable' : 'no-cache';
        assets.set(url, {
          body,
          gzip: gz && gz.length < body.length ? gz : null,
          type,
          etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`,
          cacheControl,
        });
      }
    }
  };
  if (existsSync(join(root, 'index.html'))) walk(root);
  return assets;
}

function send(request: FastifyRequest, reply: FastifyReply, asset: Asset): FastifyReply {
  void reply.headers({
    'content-type': asset.type,
    'cache-control': asset.cacheControl,
    etag: asset.etag,
    vary: 'Accept-Encoding',
    'content-security-policy': contentSecurityPolicy,
    'cross-origin-opener-policy': 'same-origin',
  });
  if (request.headers['if-none-match'] === asset.etag) return reply.status(304).send();
  const accepts = /\bgzip\b/.test(String(request.headers['accept-encoding'] ?? ''));
  if (asset.gzip && accepts) return reply.header('content-encoding', 'gzip').send(asset.gzip);
  return reply.send(asset.body);
}

/** Paths the API owns: a miss there is the API's JSON 404, never the app's page. */
const apiPath = /^\/(api|hooks)(\/|$)/;

export default function webRoutes(app: FastifyInstance, root = webDir()): void {
  const assets = load(root);
  const index = assets.get('/index.html');
  const missing: Asset = {
    body: Buffer.from(
      'The web app is not built. Run `npm run build` and restart the server; the API is at /api (reference: /api/docs).\n',
    ),
    gzip: null,
    type: 'text/plain; charset=utf-8',
    etag: '"unbuilt"',
    cacheControl: 'no-store',
  };

  const handler = async (request: FastifyRequest, reply: FastifyReply) => {
    const path = request.url.split('?')[0]!;
    if (apiPath.test(path)) return reply.callNotFound();
    let decoded: string;
    try {
      decoded = decodeURIComponent(path);
    } catch {
      return reply.callNotFound();
    }
    // Only names that were in the build directory at start are ever served: nothing is read from disk per request,
    // so `..` or an encoded separator cannot reach any other file.
    const asset = assets.get(decoded);
    if (asset && decoded !== '/index.html') return send(request, reply, asset);
    // A hashed file that is gone (an old tab after an upgrade) must not be answered with HTML the browser runs as JS.
    if (decoded.startsWith('/assets/')) return reply.callNotFound();
    if (!index) return send(request, reply.status(503), missing);
    return send(request, reply, index);
  };
  app.get('/', handler);
  app.get('/*', handler);
}
