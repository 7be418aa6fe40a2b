import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { serverWithFakeModel } from '../api/harness.js';
import { startHttpMcpServer, type TestHttpServer } from '../mcp/servers/http-server.js';
import { startProtectedMcpServer, type ProtectedMcpServer } from '../mcp/servers/oauth-mcp-server.js';
import { startAuthServer, type TestAuthServer } from '../mcp/servers/oauth-server.js';
import { browserSuite, ensureWebBuild, screenshotPath } from './browser.js';
import { signIn, waitFor } from './job-fixture.js';

/**
 * The MCP servers page in a real browser against a real server, with a real MCP server over HTTP and an OAuth
 * authorization server with a protected MCP server on loopback: add, test, edit, delete, log in and out.
 */
// The test servers listen on loopback: the operator's switch for private targets lets the host reach them.
process.env.SVC_ALLOW_PRIVATE_NETWORK_TARGETS = 'true';
const web = browserSuite(await ensureWebBuild());
const server = serverWithFakeModel({ SVC_ALLOW_PRIVATE_NETWORK_TARGETS: 'true' });
let mcp: TestHttpServer;
let as: TestAuthServer;
let secured: ProtectedMcpServer;
before(async () => {
  mcp = await startHttpMcpServer();
  as = await startAuthServer();
  secured = await startProtectedMcpServer(as.issuer);
});
after(async () => {
  await mcp?.close();
  await secured?.close();
  await as?.close();
});

/** The browser logs every refused fetch; these are the refusals a test provokes on purpose. */
const unexpected = (problems: string[], allowed: RegExp) => problems.filter((p) => !allowed.test(p));

describe('MCP servers page', () => {
  it("adds an HTTP server with only its transport's fields, tests it with its tools' badges, edits and deletes it", async () => {
    const headerValue = 'team-header-value-7f3a';
    const { context, page, problems } = await web.open();
    page.on('dialog', (d) => void d.accept().catch(() => undefined));
    try {
      await signIn(web, server, page);
      await page.getByRole('link', { name: 'Settings' }).first().click();
      await page.getByRole('link', { name: 'MCP servers' }).click();
      await page.waitForURL(/\/settings\/mcp$/);
      await page.getByText('No MCP servers yet').waitFor();

      await page.getByRole('button', { name: 'Add an MCP server' }).click();
      const form = page.getByRole('form', { name: 'Add an MCP server' });
      await form.getByLabel('Name', { exact: true }).fill('dictionary');
      // The stdio transport asks for a command and no URL; HTTP the other way round.
      await form.getByRole('radio', { name: /stdio/ }).check();
      await form.getByLabel('Command').waitFor();
      assert.equal(await form.getByLabel('URL').count(), 0);
      await form.getByLabel('Command').fill('npx');
      await form.getByRole('radio', { name: /HTTP/ }).check();
      assert.equal(await form.getByLabel('Command').count(), 0);
      await form.getByLabel('URL').fill(mcp.url);
      await form.getByRole('button', { name: 'Add a header' }).click();
      await form.getByLabel('Headers 1 name').fill('X-Team');
      await form.getByLabel('Headers 1 value').fill(headerValue);
      await form.getByRole('button', { name: 'Add server' }).click();

      const card = page.getByRole('article', { name: 'MCP server dictionary' });
      await card.waitFor();
      const stored = (await server.api.get('/api/mcp-servers')).body.items as Array<Record<string, any>>;
      assert.equal(stored.length, 1);
      assert.equal(stored[0]!.transport, 'http');
      assert.equal(stored[0]!.url, mcp.url);
      assert.equal(stored[0]!.command, null, 'the command typed before switching to HTTP is not stored');
      assert.deepEqual(stored[0]!.headers, { 'X-Team': headerValue });
      await card.getByText('X-Team').waitFor();
      assert.ok(!(await page.locator('body').innerText()).includes(headerValue), 'no header value in the page');

      await card.getByRole('button', { name: 'Test' }).click();
      await card.getByText(/Connected in \d+ ms: \d+ tools/).waitFor();
      const tools = card.getByRole('list', { name: 'Tools of dictionary' });
      const tool = (name: string) =>
        tools.getByRole('listitem').filter({ has: page.locator('code', { hasText: name }) });
      await tool('lookup').getByText('read-only').waitFor();
      assert.equal(await tool('lookup').getByText('destructive').count(), 0);
      await tool('broken').getByText('destructive').waitFor();
      assert.equal(await tool('record').locator('.badge').count(), 0, 'neither read-only nor destructive');
      await card.getByText('No login needed').waitFor();
      assert.equal(
        await card.getByRole('button', { name: 'Log in' }).count(),
        0,
        'no login offered where none is asked',
      );
      await page.screenshot({ path: screenshotPath('mcp-servers-desktop'), fullPage: true });

      await card.getByRole('button', { name: 'Edit' }).click();
      const edit = page.getByRole('form', { name: 'Edit dictionary' });
      await edit.getByLabel('Description').fill('Looks words up');
      await edit.getByRole('button', { name: 'Save changes' }).click();
      await card.getByText('Looks words up').waitFor();
      const id = stored[0]!.id as string;
      const edited = (await server.api.get(`/api/mcp-servers/${id}`)).body;
      assert.equal(edited.description, 'Looks words up');
      assert.deepEqual(edited.headers, { 'X-Team': headerValue }, 'the hidden header value is kept on edit');

      await card.getByRole('button', { name: 'Delete' }).click();
      await page.getByText('No MCP servers yet').waitFor();
      assert.equal((await server.api.get(`/api/mcp-servers/${id}`)).status, 404);
      assert.deepEqual(unexpected(problems, /status of 40[49]/), []);
    } catch (err) {
      throw await web.explain(page, err);
    } finally {
      await context.close();
    }
  });

  it('logs in to an OAuth-protected server through the authorization server, shows the login, and logs out', async () => {
    const created = await server.api.post('/api/mcp-servers', { name: 'secured', transport: 'http', url: secured.url });
    assert.equal(created.status, 201, created.text);
    const id = created.body.id as string;
    const { context, page, problems } = await web.open();
    try {
      await signIn(web, server, page);
      await page.goto(`${server.t.url}/settings/mcp`);
      const card = page.getByRole('article', { name: 'MCP server secured' });
      await card.getByText('Not tested yet').waitFor();

      await card.getByRole('button', { name: 'Test' }).click();
      await card
        .getByRole('alert')
        .getByText(/secured could not be reached: .*login required/)
        .waitFor();
      await card.getByText('Needs a login').waitFor();

      // The authorization server signs its one account in and consents on its own; the callback lands on /mcp.
      await card.getByRole('button', { name: 'Log in', exact: true }).click();
      await page.waitForURL(/\/settings\/mcp\?.*login=ok/);
      await page.getByText('The MCP server login succeeded').waitFor();
      await card.getByText(/^Logged in/).waitFor();
      assert.equal((await server.api.get(`/api/mcp-servers/${id}`)).body.auth.status, 'oauth');

      await card.getByRole('button', { name: 'Test' }).click();
      await card.getByText(/Connected in \d+ ms/).waitFor();

      await card.getByRole('button', { name: 'Log out' }).click();
      await card.getByRole('button', { name: 'Log out' }).waitFor({ state: 'detached' });
      await waitFor(async () => (await server.api.get(`/api/mcp-servers/${id}`)).body.auth.status !== 'oauth');
      assert.doesNotMatch(await card.getByTestId('auth-status').innerText(), /^Logged in/);
      // Without the tokens the server refuses again, and the page offers the login once more.
      await card.getByRole('button', { name: 'Test' }).click();
      await card
        .getByRole('alert')
        .getByText(/login required/)
        .waitFor();
      await card.getByRole('button', { name: 'Log in', exact: true }).waitFor();
      assert.deepEqual(unexpected(problems, /status of 40[14]/), []);
    } catch (err) {
      throw await web.explain(page, err);
    } finally {
      await context.close();
    }
  });

  it('sends the OAuth landing page with its outcome on to the MCP servers page', async () => {
    const { context, page } = await web.open(390, 800);
    try {
      await signIn(web, server, page);
      await page.goto(`${server.t.url}/mcp?error=access_denied`);
      await page.waitForURL(/\/settings\/mcp\?error=access_denied$/);
      await page.getByRole('alert').getByText('The login did not complete: access denied').waitFor();
      await page.screenshot({ path: screenshotPath('mcp-servers-phone'), fullPage: true });
    } catch (err) {
      throw await web.explain(page, err);
    } finally {
      await context.close();
    }
  });
});
