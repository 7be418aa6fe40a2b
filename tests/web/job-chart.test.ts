import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { finishedRun, serverWithFakeModel } from '../api/harness.js';
import { browserSuite, ensureWebBuild } from './browser.js';
import { createJob, signIn } from './job-fixture.js';

/** The job overview's chart per run: drawn from the stats route, loaded on demand, each bar a way to its run. */
const web = browserSuite(await ensureWebBuild());
const server = serverWithFakeModel();

describe('job overview chart', () => {
  it('charts cost and duration per run, switches metric by keyboard, and opens a run from its bar', async () => {
    const job = await createJob(server, { name: 'Charted', instruction: 'x' });
    const runs: string[] = [];
    for (const status of ['success', 'failure']) {
      await server.api.post(`/api/providers/${server.providerId}/script`, {
        reset: true,
        responses: [{ toolCalls: [{ name: 'finish', args: { status, summary: status } }] }],
      });
      const runId = (await server.api.post(`/api/jobs/${job}/runs`, {})).body.runId as string;
      await finishedRun(server.api, runId);
      runs.push(runId);
    }
    const { context, page, problems } = await web.open();
    const chunks: string[] = [];
    page.on('request', (r) => {
      if (r.url().includes('/assets/RunChart')) chunks.push(r.url());
    });
    try {
      await signIn(web, server, page);
      assert.deepEqual(chunks, [], 'the jobs list does not load the chart');
      await page.goto(`${server.t.url}/jobs/${job}`);
      const chart = page.getByRole('group', { name: /^Cost per run, last 30 days/ });
      await chart.waitFor();
      assert.equal(chunks.length, 1, 'the chart came as its own chunk with the overview');
      // The bars, whatever the caption says.
      const bars = page.locator('svg.chart');
      const first = bars.getByRole('link', { name: /^Run #1: .*, succeeded, playbook v\d+$/ });
      const second = bars.getByRole('link', { name: /^Run #2: .*, failed, playbook v\d+$/ });
      await first.waitFor();
      await second.waitFor();
      assert.equal(await page.locator('.chart .bar.status-failed').count(), 1);

      // The metric is a radio group: arrow keys move it, and the caption and the bars' names follow.
      await page.getByRole('radio', { name: 'Cost' }).focus();
      await page.keyboard.press('ArrowRight');
      assert.equal(await page.getByRole('radio', { name: 'Duration' }).isChecked(), true);
      await page.getByRole('group', { name: /^Duration per run/ }).waitFor();
      assert.match((await second.getAttribute('aria-label')) ?? '', /^Run #2: \d+(\.\d+)? ?(ms|s)/);

      // A bar is a link to its run, from the keyboard too.
      await second.focus();
      await page.keyboard.press('Enter');
      await page.waitForURL(new RegExp(`/runs/${runs[1]}$`));
      assert.deepEqual(problems, []);
    } catch (err) {
      throw await web.explain(page, err);
    } finally {
      await context.close();
    }
  });
});
