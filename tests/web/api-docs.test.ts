import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../api/harness.js';
import { browserSuite, screenshotPath } from './browser.js';

/**
 * The API reference at /api/docs (docs/design.md, "API docs"): Swagger UI served by the service itself, rendering
 * the service's own OpenAPI document in a real browser under the page's Content-Security-Policy.
 */
// The page does not come from the web build, so the suite never asks the server which build it holds.
const web = browserSuite('');
let t: TestServer;
before(async () => {
  t = await startTestServer();
});
after(async () => t?.stop());

interface OpenApi {
  paths: Record<string, Record<string, unknown>>;
}

describe('API reference page', () => {
  it('is served under a CSP with no inline script, its files named by content and cached for good', async () => {
    const page = await fetch(`${t.url}/api/docs`);
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
    assert.equal(page.headers.get('cache-control'), 'no-cache');
    const csp = page.headers.get('content-security-policy') ?? '';
    assert.match(csp, /script-src 'self'(;|$)/, 'no inline or eval for scripts');
    assert.match(csp, /style-src 'self'(;|$)/);
    assert.match(csp, /connect-src 'self'(;|$)/);
    assert.match(csp, /img-src 'self' data:(;|$)/, 'the one widening: the style sheet draws icons as data: images');
    const html = await page.text();
    assert.doesNotMatch(html, /<script(?![^>]*\bsrc=)[^>]*>/, 'no inline script');
    assert.doesNotMatch(html, /(src|href)="(https?:)?\/\//, 'nothing from another host');

    const files = [...html.matchAll(/(?:src|href)="(\/api\/docs\/[^"]+)"/g)].map((m) => m[1]!);
    assert.equal(files.length, 4, 'the style sheet, the icon, the Swagger UI bundle and the page script');
    const bundle = files.find((f) => /swagger-ui-bundle\.[\w-]+\.js$/.test(f));
    assert.ok(bundle, files.join(', '));
    const js = await fetch(t.url + bundle, { headers: { 'accept-encoding': 'gzip' } });
    assert.equal(js.status, 200);
    assert.match(js.headers.get('content-type') ?? '', /^text\/javascript/);
    assert.equal(js.headers.get('cache-control'), 'public, max-age=31536000, immutable');
    assert.equal(js.headers.get('content-encoding'), 'gzip');
    const again = await fetch(t.url + bundle, { headers: { 'if-none-match': js.headers.get('etag')! } });
    assert.equal(again.status, 304);

    for (const path of ['/api/docs/swagger-ui-bundle.js', '/api/docs/..%2Fpackage.json', '/api/docs/nope']) {
      const res = await fetch(t.url + path);
      assert.equal(res.status, 404, path);
      assert.equal(((await res.json()) as { code: string }).code, 'not_found', path);
    }
  });

  it('renders every operation of the document in a browser, with no console error and no request elsewhere', async (tc) => {
    const doc = (await (await fetch(`${t.url}/api/openapi.json`)).json()) as OpenApi;
    const operations = Object.values(doc.paths).reduce((n, ops) => n + Object.keys(ops).length, 0);
    const { context, page, problems } = await web.open();
    const elsewhere: string[] = [];
    context.on('request', (r) => {
      const url = r.url();
      if (!url.startsWith(`${t.url}/`) && !url.startsWith('data:')) elsewhere.push(url);
    });
    const failed: string[] = [];
    page.on('response', (r) => {
      if (r.status() >= 400) failed.push(`${r.status()} ${r.url()}`);
    });
    const t0 = Date.now();
    const mark = (what: string) => tc.diagnostic(`${what} after ${Date.now() - t0} ms`);
    try {
      await page.goto(`${t.url}/api/docs`);
      const jobs = page.locator('.opblock-summary-path[data-path="/api/jobs"]');
      // Swagger UI renders 100-odd operations: slow on a loaded machine, so a wider wait than the default.
      await jobs.first().waitFor({ timeout: 60_000 });
      mark('rendered');
      assert.equal(await page.locator('.opblock').count(), operations, 'one block per operation of the document');
      assert.equal(await jobs.count(), 2, 'GET and POST /api/jobs');

      // Opening an operation shows what the document says about it.
      await page.locator('#operations-jobs-get_api_jobs, .opblock-get:has([data-path="/api/jobs"])').first().click();
      await page.locator('.opblock.is-open .responses-wrapper').first().waitFor();
      mark('opened');
      await page.screenshot({ path: screenshotPath('api-docs') });
      assert.deepEqual(failed, [], 'every request of the page is answered');
      assert.deepEqual(problems, []);
      assert.deepEqual(elsewhere, []);
    } catch (err) {
      throw await web.explain(page, err);
    } finally {
      await context.close();
    }
  });
});
