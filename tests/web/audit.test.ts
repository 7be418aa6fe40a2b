import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { adminSession, startTestServer, type RunnerServer } from '../api/harness.js';
import { waitFor as waitUntil } from '../wait.js';
import { browserSuite, ensureWebBuild, screenshotPath } from './browser.js';
import { createJob, signIn } from './job-fixture.js';

/**
 * The Audit page and the job page's History tab in a real browser against a real server: filters live in the URL,
 * and a change links to the job and playbook as they were at that moment (docs/api.md, "Time travel").
 */
const web = browserSuite(await ensureWebBuild());
const server = {} as RunnerServer;
before(async () => {
  // No runner: nothing here starts a run.
  server.t = await startTestServer({ SVC_ROLES: 'api,projector' });
  server.api = await adminSession(server.t);
});
after(async () => server.t?.stop());

describe('audit page and job history', () => {
  it('lists changes with filters in the URL and shows a job as of a past change', async () => {
    const id = await createJob(server, { name: 'Travelling job', instruction: 'first version' });
    const created = Date.now();
    await waitUntil('the clock to move on', () => Date.now() > created);
    assert.equal((await server.api.patch(`/api/jobs/${id}`, { instruction: 'second version' })).status, 200);
    const put = await server.api.request('PUT', `/api/jobs/${id}/playbook`, {
      content: { learnings: [{ text: 'Pages hold 50 items' }] },
    });
    assert.equal(put.status, 200, put.text);

    const { context, page, problems } = await web.open();
    try {
      await signIn(web, server, page);
      await page.getByRole('link', { name: 'Audit', exact: true }).click();
      await page.waitForURL(/\/audit$/);
      const trail = page.getByRole('table', { name: 'Audit trail' });
      await trail.getByText('Created job "Travelling job"').waitFor();
      await page.screenshot({ path: screenshotPath('audit') });

      await page.getByLabel('Actor').selectOption('scheduler');
      await page.waitForURL(/actor=scheduler/);
      await page.getByText('No changes match').waitFor();
      await page.reload();
      assert.equal(await page.getByLabel('Actor').inputValue(), 'scheduler', 'the filter survives a reload');
      await page.getByLabel('Actor').selectOption('user');
      await trail.getByText('Created job "Travelling job"').waitFor();

      await page.goto(`${server.t.url}/jobs/${id}`);
      await page.getByRole('link', { name: 'History', exact: true }).click();
      await page.waitForURL(new RegExp(`/jobs/${id}/history$`));
      const history = page.getByRole('table', { name: 'Job history' });
      await history.getByText('Changed instruction').waitFor();
      // The creation's row links to the job as it was then: the first instruction, the empty playbook.
      const row = history.locator('tr', { hasText: 'Created job' });
      await row.getByRole('link', { name: /./ }).first().click();
      await page.waitForURL(/history\?at=\d+/);
      await page.getByTestId('as-of-instruction').getByText('first version').waitFor();
      await page.getByTestId('as-of-playbook').getByText('version 0').waitFor();
      const saved = history.locator('tr', { hasText: 'Saved playbook version 1' });
      await saved.getByRole('link', { name: /./ }).first().click();
      await page.getByTestId('as-of-instruction').getByText('second version').waitFor();
      await page.getByTestId('as-of-playbook').getByText('version 1').waitFor();
      await page.getByText('Pages hold 50 items').waitFor();
      await page.screenshot({ path: screenshotPath('job-history') });
      assert.deepEqual(problems, []);
    } catch (err) {
      throw await web.explain(page, err);
    } finally {
      await context.close();
    }
  });
});
