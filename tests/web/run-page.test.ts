import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { finishedRun, serverWithFakeModel } from '../api/harness.js';
import { browserSuite, ensureWebBuild, screenshotPath } from './browser.js';
import { createJob, signIn } from './job-fixture.js';

/**
 * The run page beyond the timeline: the waterfall of spans, the files a run left with their previews (text, JSON,
 * images; hostile HTML stays text) and downloads, as a person opens them.
 */
const web = browserSuite(await ensureWebBuild());
const server = serverWithFakeModel();

const pixel = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
const writeFiles = [
  'cd /svc/outputs',
  'printf "first line\\nsecond line\\n" > notes.txt',
  `printf '{"city":"Oslo","temps":[1,2]}' > data.json`,
  `printf '%s' '${pixel}' | base64 -d > pixel.png`,
  `printf '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">' > evil.html`,
  'sleep 0.3',
].join(' && ');

describe('run page', () => {
  it('shows the waterfall of steps and previews each file the run left, keeping hostile files inert', async () => {
    const pushed = await server.api.post(`/api/providers/${server.providerId}/script`, {
      reset: true,
      responses: [
        { toolCalls: [{ name: 'bash', args: { command: writeFiles } }] },
        { toolCalls: [{ name: 'finish', args: { status: 'success', summary: 'Files written.' } }] },
      ],
    });
    assert.equal(pushed.status, 200, pushed.text);
    const job = await createJob(server, { name: 'File maker', instruction: 'Write the files.' });
    const runId = (await server.api.post(`/api/jobs/${job}/runs`, {})).body.runId as string;
    const { run } = await finishedRun(server.api, runId);
    assert.equal(run.status, 'succeeded', run.error);
    const { context, page, problems } = await web.open();
    try {
      await signIn(web, server, page);
      await page.goto(`${server.t.url}/runs/${runId}`);
      const files = page.locator('.card', { has: page.getByRole('heading', { name: 'Files' }) });
      await files.waitFor();

      // Text and JSON previews open in place; JSON is shown indented.
      await files.getByRole('button', { name: 'Preview notes.txt' }).click();
      assert.equal(await files.getByRole('button', { name: 'Hide notes.txt' }).getAttribute('aria-expanded'), 'true');
      await files
        .getByLabel('Preview of notes.txt')
        .getByText(/first line\s+second line/)
        .waitFor();
      await files.getByRole('button', { name: 'Preview data.json' }).click();
      assert.equal(
        await files.getByLabel('Preview of data.json').textContent(),
        JSON.stringify({ city: 'Oslo', temps: [1, 2] }, null, 2),
      );
      // An image loads from the service under its strict CSP.
      await files.getByRole('button', { name: 'Preview pixel.png' }).click();
      const img = files.getByRole('img', { name: 'Preview of pixel.png' });
      await img.waitFor();
      await page.waitForFunction("document.querySelector('img.artifact-preview')?.naturalWidth === 1");
      // HTML is text: nothing in it runs or loads.
      await files.getByRole('button', { name: 'Preview evil.html' }).click();
      await files
        .getByLabel('Preview of evil.html')
        .getByText('<script>window.__pwned=1</script>', { exact: false })
        .waitFor();
      assert.equal(await page.evaluate<unknown>('window.__pwned'), undefined);
      assert.equal(await page.locator('main script, main iframe').count(), 0);
      assert.equal(await page.locator('main img').count(), 1, 'only the previewed image is an image');

      // Each file downloads under its own name.
      const [download] = await Promise.all([
        page.waitForEvent('download'),
        files.getByRole('link', { name: 'data.json' }).click(),
      ]);
      assert.equal(download.suggestedFilename(), 'data.json');

      // The waterfall: a bar per span on the run's time axis, the tab kept in the URL.
      await page.getByRole('tab', { name: 'Waterfall' }).click();
      await page.waitForURL(/tab=waterfall/);
      assert.equal(await page.getByRole('tab', { name: 'Waterfall' }).getAttribute('aria-selected'), 'true');
      const waterfall = page.getByRole('region', { name: /^Waterfall, \d+ steps/ });
      await waterfall.waitFor();
      const bash = waterfall.locator('li', { hasText: 'tool bash' });
      await bash.waitFor();
      assert.match((await bash.textContent()) ?? '', /\d+(\.\d+)? ?m?s/);
      assert.ok((await waterfall.locator('li', { hasText: 'model call 1' }).count()) === 1);
      assert.ok((await waterfall.locator('li', { hasText: 'sandbox created' }).count()) === 1);
      await page.screenshot({ path: screenshotPath('run-waterfall-desktop') });
      await page.reload();
      await page.getByRole('region', { name: /^Waterfall/ }).waitFor();
      await page.getByRole('tab', { name: 'Timeline' }).click();
      await page.getByRole('region', { name: /^Timeline, \d+ entries/ }).waitFor();
      assert.doesNotMatch(page.url(), /tab=/);
      assert.deepEqual(problems, []);
    } catch (err) {
      throw await web.explain(page, err);
    } finally {
      await context.close();
    }
  });
});
