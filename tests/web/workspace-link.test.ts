import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Client, startTestServer, type TestServer } from '../api/harness.js';
import { browserSuite, ensureWebBuild } from './browser.js';
import { landedOnDashboard } from './job-fixture.js';

/**
 * A link that names its workspace (`?workspace=<id>`, docs/api.md, "Workspaces and members") switches the browser's
 * session there before the page loads, and the parameter leaves the address.
 */
const web = browserSuite(await ensureWebBuild());
let t: TestServer;
before(async () => {
  t = await startTestServer({ SVC_WORKSPACES_ENABLED: 'true' });
});
after(async () => t?.stop());

describe('workspace links', () => {
  it('switches the session to the workspace a link names', async () => {
    await web.checkServed(t.url);
    const { context, page, problems } = await web.open();
    try {
      const link = await t.server.services.identity.issueSignInLink('admin@example.com');
      await page.goto(t.url + link);
      await landedOnDashboard(page);
      const cookieOf = async () => {
        const c = (await context.cookies()).find((x) => x.name === 'svc_session');
        assert.ok(c, 'the browser holds a session');
        return new Client(t.url, { cookie: `svc_session=${c.value}` });
      };
      const created = await (await cookieOf()).post('/api/workspaces', { name: 'Team' });
      assert.equal(created.status, 201, created.text);
      assert.equal((await (await cookieOf()).get('/api/users/me')).body.workspace.name, 'Default');
      await page.goto(`${t.url}/runs?workspace=${created.body.workspaceId}`);
      await page.waitForURL((url) => url.pathname === '/runs' && !url.search.includes('workspace='));
      assert.equal((await (await cookieOf()).get('/api/users/me')).body.workspace.name, 'Team');
      assert.deepEqual(problems, []);
    } catch (err) {
      throw await web.explain(page, err);
    } finally {
      await context.close();
    }
  });
});
