import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serverWithFakeModel } from '../api/harness.js';
import { browserSuite, ensureWebBuild, screenshotPath } from './browser.js';
import { landedOnDashboard, signIn } from './job-fixture.js';

/**
 * The workspace settings page in a real browser against a real server: an admin changes limits, the spend cap and
 * notifications (with a test delivered to a webhook on loopback); a member reads the same page without being able to
 * change anything.
 */
// The webhook listens on loopback: the operator's switch for private targets lets the service post to it.
process.env.SVC_ALLOW_PRIVATE_NETWORK_TARGETS = 'true';
const web = browserSuite(await ensureWebBuild());
const server = serverWithFakeModel({ SVC_ALLOW_PRIVATE_NETWORK_TARGETS: 'true' });
const delivered: string[] = [];
let hook: Server;
let hookUrl = '';
before(async () => {
  hook = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      delivered.push(body);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => hook.listen(0, '127.0.0.1', r));
  hookUrl = `http://127.0.0.1:${(hook.address() as AddressInfo).port}/svc-notify/7c1e`;
});
after(() => new Promise<void>((r) => hook.close(() => r())));

describe('workspace settings page', () => {
  it('lets an admin change limits, the spend cap and notifications, refusing a bad value beside its field', async () => {
    const { context, page, problems } = await web.open();
    try {
      await signIn(web, server, page);
      await page.getByRole('link', { name: 'Settings' }).first().click();
      await page.getByRole('link', { name: 'Workspace' }).click();
      await page.waitForURL(/\/settings\/workspace$/);

      await page.getByLabel('Timeout (seconds)').fill('not a number');
      await page.getByRole('button', { name: 'Save settings' }).click();
      await page.locator('#limit-timeoutSeconds-error').waitFor();

      await page.getByLabel('Timeout (seconds)').fill('900');
      await page.getByLabel('Daily spend cap (USD)').fill('25');
      await page.getByLabel('Webhook URL').fill(hookUrl);
      await page.getByLabel('A run failed').check();
      await page.getByLabel('A scripted run fell back to the agent').uncheck();
      await page.getByLabel('A job was demoted after fallbacks').uncheck();
      await page.getByRole('button', { name: 'Save settings' }).click();
      await page.getByText('Saved.', { exact: true }).waitFor();
      const saved = (await server.api.get('/api/settings')).body;
      assert.equal(saved.defaultLimits.timeoutSeconds, 900);
      assert.equal(saved.dailySpendLimitUsd, 25);
      assert.equal(saved.notifyWebhookUrl, hookUrl);
      assert.deepEqual(saved.notifyOn, ['run.failed']);

      await page.getByRole('button', { name: 'Send a test notification' }).click();
      await page.getByText(/^Delivered: the webhook answered 204 in \d+ ms\.$/).waitFor();
      assert.equal(delivered.length, 1, 'one test notification reached the webhook');
      await page.screenshot({ path: screenshotPath('workspace-settings-desktop'), fullPage: true });

      // A later save that fails takes the earlier "Saved." down: it no longer speaks for the form.
      await page.getByText('Saved.', { exact: true }).waitFor();
      await page.getByLabel('Timeout (seconds)').fill('5');
      await page.getByRole('button', { name: 'Save settings' }).click();
      await page.locator('#limit-timeoutSeconds-error').waitFor();
      assert.equal(await page.getByText('Saved.', { exact: true }).count(), 0);
      assert.equal((await server.api.get('/api/settings')).body.defaultLimits.timeoutSeconds, 900);
      assert.deepEqual(
        problems.filter((p) => !/status of 400/.test(p)),
        [],
      );
    } catch (err) {
      throw await web.explain(page, err);
    } finally {
      await context.close();
    }
  });

  it('shows a member the settings read-only, with the webhook URL masked', async () => {
    const set = await server.api.patch('/api/settings', { notifyWebhookUrl: hookUrl });
    assert.equal(set.status, 200, set.text);
    const { context, page } = await web.open(390, 800);
    try {
      await web.checkServed(server.t.url);
      const link = await server.t.server.services.identity.issueSignInLink('member@example.com', false);
      await page.goto(server.t.url + link);
      await landedOnDashboard(page);
      await page.goto(`${server.t.url}/settings/workspace`);
      await page.getByText('Only admins and the owner can change these settings').waitFor();
      assert.equal(await page.getByLabel('Timeout (seconds)').isDisabled(), true);
      assert.equal(await page.getByLabel('Webhook URL').isDisabled(), true);
      assert.equal(await page.getByRole('button', { name: 'Save settings' }).count(), 0);
      const shownUrl = await page.getByLabel('Webhook URL').inputValue();
      assert.ok(shownUrl.startsWith('http://127.0.0.1:'), shownUrl);
      assert.ok(!shownUrl.includes('svc-notify'), `the path is masked for a member: ${shownUrl}`);
      await page.screenshot({ path: screenshotPath('workspace-settings-member-phone'), fullPage: true });
    } catch (err) {
      throw await web.explain(page, err);
    } finally {
      await context.close();
    }
  });
});
