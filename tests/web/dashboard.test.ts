import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Page } from '@playwright/test';
import { finishedRun, serverWithFakeModel } from '../api/harness.js';
import { waitFor as until } from '../wait.js';
import { browserSuite, ensureWebBuild } from './browser.js';
import { createJob, signIn } from './job-fixture.js';

/**
 * The dashboard at `/`, used as a person would: a fresh workspace teaches the first steps, and once real runs of the
 * fake model have succeeded and failed, the figures on the page are the overview route's, the range stays in the URL
 * through a reload, the page follows live runs, and a recent failure opens its run.
 */
const web = browserSuite(await ensureWebBuild());
const server = serverWithFakeModel();

type Json = Record<string, any>;

/** Queues one scripted answer of the fake model: a single turn that finishes the run. */
async function script(response: Json): Promise<void> {
  const scripted = await server.api.post(`/api/providers/${server.providerId}/script`, {
    reset: true,
    responses: [response],
  });
  assert.equal(scripted.status, 200, scripted.text);
}

function finish(status: 'success' | 'failure', summary: string, usage: { input: number; output: number }): Json {
  return { usage, toolCalls: [{ name: 'finish', args: { status, summary } }] };
}

async function run(jobId: string): Promise<{ runId: string; status: string }> {
  const started = await server.api.post(`/api/jobs/${jobId}/runs`, {});
  assert.equal(started.status, 201, started.text);
  const runId = started.body.runId as string;
  const { run: done } = await finishedRun(server.api, runId);
  return { runId, status: done.status as string };
}

/** The overview as the route answers it, once it counts `runs` runs of the range and nothing is live. */
async function overview(range: string, runs: number): Promise<Json> {
  return until(`the overview of ${range} to count ${runs} runs`, async () => {
    const o = (await server.api.get(`/api/stats/overview?range=${range}`)).body as Json;
    return o.current.runs === runs && o.running.length === 0 && o;
  });
}

const tiles: Array<[label: string, field: string]> = [
  ['Runs', 'runs'],
  ['Success rate', 'successRate'],
  ['Median duration', 'p50Ms'],
  ['Slowest runs', 'p95Ms'],
  ['Run cost', 'runCost'],
  ['Learning cost', 'learningCost'],
];

/** Each tile's exact figure (its `<data value>`) is the route's, and the runs and success rate read as shown. */
async function expectFigures(page: Page, o: Json): Promise<void> {
  for (const [label, field] of tiles) {
    const tile = page.getByRole('group', { name: label, exact: true });
    assert.equal(await tile.locator('data').getAttribute('value'), String(o.current[field]), `${label} tile`);
  }
  assert.equal(
    await page.getByRole('group', { name: 'Runs', exact: true }).locator('data').textContent(),
    String(o.current.runs),
  );
  assert.equal(
    await page.getByRole('group', { name: 'Success rate', exact: true }).locator('data').textContent(),
    `${Math.round(o.current.successRate * 100)}%`,
  );
}

describe('dashboard', () => {
  it('teaches the first steps on a workspace without runs, and turns into the figures when the first run starts', async () => {
    const { context, page, problems } = await web.open(390, 844);
    const chunks: string[] = [];
    page.on('request', (r) => {
      if (r.url().includes('/assets/OverviewChart')) chunks.push(r.url());
    });
    try {
      await signIn(web, server, page, '/');
      const empty = page.locator('.empty');
      await empty.getByRole('heading', { name: 'No runs yet' }).waitFor();
      assert.equal(await page.getByRole('radiogroup').count(), 0, 'no range to pick without runs');
      await empty.getByRole('link', { name: 'Create your first job' }).click();
      await page.waitForURL(/\/jobs\/new$/);

      // With a job, the first step is done and the next one leads to it.
      const job = await createJob(server, { name: 'First job', instruction: 'Say hello.' });
      await page.getByRole('link', { name: 'Dashboard' }).click();
      await empty.getByText('Done: you have one job.').waitFor();
      await empty.getByRole('link', { name: 'Open “First job”' }).click();
      await page.waitForURL(new RegExp(`/jobs/${job}$`));

      // The empty state follows the workspace's runs live: a run started elsewhere brings the figures.
      await page.goBack();
      await empty.waitFor();
      assert.deepEqual(chunks, [], 'the empty state does not load the chart');
      await script(finish('success', 'hello', { input: 100, output: 10 }));
      await run(job);
      await page.getByRole('group', { name: 'Runs', exact: true }).waitFor({ timeout: 30_000 });
      assert.equal(await empty.count(), 0);
      await page.getByRole('img', { name: /^Runs per day by status/ }).waitFor();
      assert.equal(chunks.length, 1, 'the chart came as a chunk of its own');
      assert.ok(
        await page.evaluate<boolean>('document.documentElement.scrollWidth <= window.innerWidth + 1'),
        'the dashboard fits a phone screen',
      );
      assert.deepEqual(problems, []);
    } catch (err) {
      throw await web.explain(page, err);
    } finally {
      await context.close();
    }
  });

  it('shows the figures of the overview route, keeps the range in the URL, follows live runs and opens a failure', async () => {
    // Priced, so the runs cost something: $10 per million input tokens, $30 per million output tokens.
    const model = (await server.api.get('/api/models')).body.items[0] as Json;
    const priced = await server.api.patch(`/api/models/${model.id}`, {
      price: { in: 10_000_000, out: 30_000_000, cacheRead: 0, cacheWrite: 0 },
    });
    assert.equal(priced.status, 200, priced.text);
    const report = await createJob(server, { name: 'Nightly report', instruction: 'Write the report.' });
    const sync = await createJob(server, { name: 'Flaky sync', instruction: 'Sync the files.' });
    // Six succeeded runs, the latest three using a tenth of the tokens: the report gets cheaper and leaner.
    for (const usage of [10_000, 10_000, 10_000, 1_000, 1_000, 1_000]) {
      await script(finish('success', 'report written', { input: usage, output: usage / 10 }));
      assert.equal((await run(report)).status, 'succeeded');
    }
    await script(finish('failure', 'the remote refused the upload', { input: 500, output: 50 }));
    const failed = await run(sync);
    assert.equal(failed.status, 'failed');
    // 1 run from the first test, 6 succeeded, 1 failed.
    const week = await overview('7d', 8);
    assert.ok(week.current.runCost > 0, 'the runs cost something');
    assert.equal(week.current.failed, 1);
    assert.equal(week.gettingCheaper[0]?.jobName, 'Nightly report');

    const { context, page, problems } = await web.open();
    let live: string | undefined;
    try {
      await signIn(web, server, page, '/');
      await page.getByRole('heading', { name: 'Runs, last 7 days' }).waitFor();
      await expectFigures(page, week);
      assert.equal(await page.getByRole('radio', { name: 'Last 7 days' }).isChecked(), true);
      // The chart came as a chunk of its own, with its table of counts per day.
      const table = page.getByRole('table', { name: 'Runs per day' });
      await page.getByText('Show as a table').click();
      assert.equal(await table.locator('tbody tr').count(), week.perDay.length);
      const today = week.perDay.at(-1) as Json;
      const lastRow = table.locator('tbody tr').last();
      assert.equal(await lastRow.locator('td').nth(0).textContent(), String(today.succeeded));
      assert.equal(await lastRow.locator('td').nth(1).textContent(), String(today.failed));
      // Cost by job, most expensive first, and the job that got cheaper with its drop.
      const costs = page.getByRole('list', { name: 'Cost by job' });
      assert.equal(await costs.getByRole('link').first().textContent(), 'Nightly report');
      const cheaper = page.getByRole('list', { name: 'Cost per run' });
      await cheaper.getByRole('link', { name: 'Nightly report' }).waitFor();
      await cheaper.getByText(`−${Math.round(week.gettingCheaper[0].dropPct * 100)}%`).waitFor();
      await page.getByRole('list', { name: 'Tokens per run' }).getByRole('link', { name: 'Nightly report' }).waitFor();

      // The range picker is a radio group: the arrow keys move it, the URL keeps it, a reload keeps it.
      await page.getByRole('radio', { name: 'Last 7 days' }).focus();
      await page.keyboard.press('ArrowRight');
      await page.waitForURL(/\?range=30d$/);
      await page.getByRole('heading', { name: 'Runs, last 30 days' }).waitFor();
      await expectFigures(page, await overview('30d', 8));
      await page.reload();
      await page.getByRole('heading', { name: 'Runs, last 30 days' }).waitFor();
      assert.equal(await page.getByRole('radio', { name: 'Last 30 days' }).isChecked(), true);
      // 24 hours: one bucket an hour.
      await page.getByRole('radio', { name: 'Last 24 hours' }).check();
      await page.waitForURL(/\?range=24h$/);
      await page.getByText('Show as a table').click();
      const hours = page.getByRole('table', { name: 'Runs per hour' });
      assert.equal(await hours.locator('tbody tr').count(), 24);
      await expectFigures(page, await overview('24h', 8));
      // Back is the previous range; a range the page does not know (a hand-edited link) opens the default one.
      await page.goBack();
      await page.getByRole('heading', { name: 'Runs, last 30 days' }).waitFor();
      await page.goto(`${server.t.url}/?range=${encodeURIComponent('1y<script>')}`);
      await page.getByRole('heading', { name: 'Runs, last 7 days' }).waitFor();
      assert.equal(await page.getByRole('radio', { name: 'Last 7 days' }).isChecked(), true);
      await page.goto(`${server.t.url}/?range=30d`);

      // Running now follows the workspace live: a run that waits on the model shows, and leaves when cancelled.
      const running = page.getByRole('list', { name: /^Running now/ });
      await page.getByText('Nothing is running.').waitFor();
      await script({ delayMs: 120_000, ...finish('success', 'never', { input: 1, output: 1 }) });
      live = (await server.api.post(`/api/jobs/${sync}/runs`, {})).body.runId as string;
      await running.getByRole('link', { name: 'Flaky sync #2' }).waitFor({ timeout: 30_000 });
      assert.equal((await server.api.post(`/api/runs/${live}/cancel`, {})).status, 200);
      live = undefined;
      await page.getByText('Nothing is running.').waitFor({ timeout: 30_000 });

      // A recent failure opens its run.
      const failures = page.getByRole('list', { name: 'Recent failures' });
      await failures.getByText('the remote refused the upload').waitFor();
      await failures.getByText('the agent reported failure').waitFor();
      await failures.getByRole('link', { name: 'Flaky sync #1' }).click();
      await page.waitForURL(new RegExp(`/runs/${failed.runId}$`));
      await page.getByRole('heading', { level: 1, name: /Flaky sync/ }).waitFor();
      assert.deepEqual(problems, []);
    } catch (err) {
      throw await web.explain(page, err);
    } finally {
      // A run left waiting on the model would hold the server's stop for its whole delay.
      if (live) await server.api.post(`/api/runs/${live}/cancel`, {});
      await context.close();
    }
  });
});
