import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';

/**
 * The API reference page (docs/design.md, "API docs"): Swagger UI from the swagger-ui-dist package, rendering
 * /api/openapi.json. Every file comes from this server, so the page works on an air-gapped instance.
 */

export interface DocsFile {
  body: Buffer;
  gzip: Buffer | null;
  type: string;
  etag: string;
  cacheControl: string;
}

export interface DocsFiles {
  page: DocsFile;
  /** By the name under /api/docs/; each name holds a hash of its content. */
  files: Map<string, DocsFile>;
}

// A file of its own, not an inline script, so the page keeps the web app's `script-src 'self'`. Without
// `validatorUrl: null` Swagger UI sends the document to validator.swagger.io for a badge; the standalone preset
// would add a bar for loading other documents, which this page has no use for.
const init = `window.ui = SwaggerUIBundle({
  url: '/api/openapi.json',
  dom_id: '#swagger-ui',
  deepLinking: true,
  validatorUrl: null,
  presets: [SwaggerUIBundle.presets.apis],
  layout: 'BaseLayout',
});
`;

const etagOf = (body: Buffer) => `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`;
const gzipped = promisify(gzip);

async function file(body: Buffer, type: string, cacheControl: string): Promise<DocsFile> {
  const gz = await gzipped(body);
  return { body, gzip: gz.length < body.length ? gz : null, type, etag: etagOf(body), cacheControl };
}

async function load(): Promise<DocsFiles> {
  const dist = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
  const sources: Array<[string, string, Buffer]> = [
    ['swagger-ui.css', 'text/css; charset=utf-8', await readFile(join(dist, 'swagger-ui.css'))],
    ['swagger-ui-bundle.js', 'text/javascript; charset=utf-8', await readFile(join(dist, 'swagger-ui-bundle.js'))],
    ['init.js', 'text/javascript; charset=utf-8', Buffer.from(init)],
    // Else the browser asks for /favicon.ico, which is the web app's.
    ['favicon.png', 'image/png', await readFile(join(dist, 'favicon-32x32.png'))],
  ];
  const files = new Map<string, DocsFile>();
  const urls: Record<string, string> = {};
  for (const [name, type, body] of sources) {
    const served = await file(body, type, 'public, max-age=31536000, immutable');
    // A name that changes with the content can be cached for good: an upgrade of the package is a new name.
    const hashed = name.replace(/(\.\w+)$/, `.${served.etag.slice(1, 13)}$1`);
    files.set(hashed, served);
    urls[name] = `/api/docs/${hashed}`;
  }
  const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>svc API reference</title>
<link rel="stylesheet" href="${urls['swagger-ui.css']}">
<link rel="icon" type="image/png" href="${urls['favicon.png']}">
</head><body>
<noscript>The reference needs JavaScript. The document itself: <a href="/api/openapi.json">openapi.json</a>,
<a href="/api/openapi.yaml">openapi.yaml</a>.</noscript>
<div id="swagger-ui"></div>
<script src="${urls['swagger-ui-bundle.js']}"></script>
<script src="${urls['init.js']}"></script>
</body></html>
`;
  return { page: await file(Buffer.from(html), 'text/html; charset=utf-8', 'no-cache'), files };
}

let loading: Promise<DocsFiles> | null = null;

/**
 * Read and compressed on the first request, not at start: the bundle is 1.7 MB, and most processes (and every test
 * server) never serve the page. The compression runs off the event loop.
 */
export function docsFiles(): Promise<DocsFiles> {
  loading ??= load().catch((err: unknown) => {
    loading = null;
    throw err;
  });
  return loading;
}
