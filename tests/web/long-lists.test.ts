import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { waitFor } from '../wait.js';
import { serverWithFakeModel } from '../api/harness.js';
import { browserSuite, ensureWebBuild, screenshotPath } from './browser.js';
import { signIn } from './job-fixture.js';

/**
 * Long lists in a real browser: the jobs list's "all" view renders only the rows in view, and every row stays
 * reachable and usable (scroll, keyboard, its toggle).
 */
const web = browserSuite(await ensureWebBuild());
const server = serverWithFakeModel();

describe('long lists', () => {
  it('shows 300 jobs as one virtualised list whose every row is reachable and usable', async () => {
    const n = 300;
    const names = Array.from({ length: n }, (_, i) => `bulk ${String(i).padStart(3, '0')}`);
    for (let i = 0; i < n; i += 20)
      await Promise.all(
        names.slice(i, i + 20).map(async (name) => {
          const created = await server.api.post('/api/jobs', { name, instruction: 'x', selfImprove: false });
          assert.equal(created.status, 201, created.text);
        }),
      );
    const { context, page, problems } = await web.open();
    try {
      await signIn(web, server, page);
      await page.getByLabel('Search jobs').fill('bulk');
      await page.waitForURL(/search=bulk/);
      await page.getByText(`1–25 of ${n}`).waitFor();
      await page.getByLabel('Per page').selectOption('all');
      await page.waitForURL(/pageSize=all/);
      await page.getByText(`All ${n}, scroll the list`).waitFor();
      const list = page.getByRole('region', { name: `Jobs, ${n} rows; scroll for more` });
      await list.waitFor();
      await page.getByRole('link', { name: 'bulk 000' }).waitFor();
      const rendered = await page.locator('table.jobs tbody tr:not(.spacer)').count();
      assert.ok(rendered > 5 && rendered < 120, `${rendered} of ${n} rows in the page`);
      assert.equal(await page.getByRole('link', { name: 'bulk 299' }).count(), 0, 'the end is not rendered yet');

      // The keyboard reaches the end: End in the focused list scrolls it there.
      await list.focus();
      await page.keyboard.press('End');
      const last = page.locator('tr', { has: page.getByRole('link', { name: 'bulk 299' }) });
      await last.waitFor();
      assert.equal(await last.getAttribute('aria-rowindex'), String(n + 1));
      assert.equal(await page.getByRole('link', { name: 'bulk 000' }).count(), 0, 'the start left the page');

      // A row far down works like any other: its toggle disables the job.
      await page.getByRole('switch', { name: 'Enable bulk 299' }).click();
      await page.getByRole('switch', { name: 'Enable bulk 299', checked: false }).waitFor();
      const job = (await server.api.get('/api/jobs?search=bulk%20299')).body.items[0];
      assert.equal(job.enabled, false);
      await page.screenshot({ path: screenshotPath('jobs-all-desktop') });

      // The URL holds the view: a reload comes back to the whole list, and a page size takes paging back.
      await page.reload();
      await page.getByText(`All ${n}, scroll the list`).waitFor();
      await page.getByLabel('Per page').selectOption('50');
      await page.getByText(`1–50 of ${n}`).waitFor();
      // The pager's text follows the URL at once; the rows follow when the page of 50 has loaded.
      await waitFor('the page of 50 rows', async () => (await page.locator('table.jobs tbody tr').count()) === 50);
      assert.deepEqual(problems, []);
    } catch (err) {
      throw await web.explain(page, err);
    } finally {
      await context.close();
    }
  });
});
