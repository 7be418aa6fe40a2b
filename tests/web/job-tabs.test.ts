import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { finishedRun, serverWithFakeModel } from '../api/harness.js';
import { startHttpMcpServer, type TestHttpServer } from '../mcp/servers/http-server.js';
import { browserSuite, ensureWebBuild, screenshotPath } from './browser.js';
import { createJob, signIn, waitFor } from './job-fixture.js';

/**
 * The job page's State, Environment and Tools tabs and its Run now dialog, in a real browser against a real server
 * (fake model provider, bwrap sandboxes, a real MCP server over HTTP on loopback), used the way a person does.
 */
// The test MCP server listens on loopback: the operator's switch for private targets lets the host reach it.
process.env.SVC_ALLOW_PRIVATE_NETWORK_TARGETS = 'true';
const web = browserSuite(await ensureWebBuild());
const server = serverWithFakeModel({ SVC_ALLOW_PRIVATE_NETWORK_TARGETS: 'true' });
let mcp: TestHttpServer;
before(async () => {
  mcp = await startHttpMcpServer();
});
after(async () => mcp?.close());

/** The browser logs every refused fetch; these are the refusals a test provokes on purpose. */
const unexpected = (problems: string[], allowed: RegExp) => problems.filter((p) => !allowed.test(p));

describe('job page: state, environment, tools and run now', () => {
  it('adds, edits, searches and deletes state keys, refusing a taken key and an oversized value', async () => {
    const id = await createJob(server, { name: 'stateful job' });
    for (const [key, value] of [
      ['last_seen', '2026-11-01T08:00:00Z'],
      ['cursor', '{"page": 3}'],
    ])
      assert.equal((await server.api.request('PUT', `/api/jobs/${id}/state/${key}`, { value })).status, 200);
    const { context, page, problems } = await web.open();
    page.on('dialog', (d) => void d.accept().catch(() => undefined));
    try {
      await signIn(web, server, page);
      await page.goto(`${server.t.url}/jobs/${id}`);
      await page.getByRole('link', { name: 'State', exact: true }).click();
      await page.waitForURL(new RegExp(`/jobs/${id}/state$`));
      await page.locator('td code', { hasText: 'last_seen' }).waitFor();
      await page.getByText('2 keys').waitFor();

      await page.getByLabel('Key', { exact: true }).fill('city');
      await page.getByLabel('Value', { exact: true }).fill('Berlin');
      await page.getByRole('button', { name: 'Add key' }).click();
      await page
        .locator('tr', { has: page.locator('code', { hasText: /^city$/ }) })
        .getByText('Berlin')
        .waitFor();
      assert.equal((await server.api.get(`/api/jobs/${id}/state/city`)).body.value, 'Berlin');
      assert.equal(await page.getByLabel('Key', { exact: true }).inputValue(), '', 'the form is cleared');

      // Adding a key that exists would overwrite a value the person has not looked at: refused in the page.
      await page.getByLabel('Key', { exact: true }).fill('city');
      await page.getByLabel('Value', { exact: true }).fill('Paris');
      await page.getByRole('button', { name: 'Add key' }).click();
      await page.locator('.field.has-error', { hasText: 'exists already' }).waitFor();
      assert.equal((await server.api.get(`/api/jobs/${id}/state/city`)).body.value, 'Berlin');

      // A value over 1 MiB: the API's refusal shows next to the value.
      await page.getByLabel('Key', { exact: true }).fill('big');
      await page.getByLabel('Value', { exact: true }).fill('x'.repeat(1024 * 1024 + 1));
      await page.getByRole('button', { name: 'Add key' }).click();
      await page.locator('.field.has-error', { hasText: 'is larger than 1 MiB' }).waitFor();
      assert.equal((await server.api.get(`/api/jobs/${id}/state/big`)).status, 404);
      await page.getByLabel('Value', { exact: true }).fill('');
      await page.getByLabel('Key', { exact: true }).fill('');

      await page.getByRole('button', { name: 'Edit city' }).click();
      await page.getByLabel('New value of city').fill('Hamburg');
      await page.getByRole('button', { name: 'Save', exact: true }).click();
      await page
        .locator('tr', { has: page.locator('code', { hasText: /^city$/ }) })
        .getByText('Hamburg')
        .waitFor();
      assert.equal((await server.api.get(`/api/jobs/${id}/state/city`)).body.value, 'Hamburg');

      // Search finds keys and values; it is in the URL and survives a reload.
      await page.getByLabel('Search state').fill('page');
      await page.waitForURL(/q=page/);
      await page.reload();
      await page.locator('td code', { hasText: 'cursor' }).waitFor();
      assert.equal(await page.locator('tbody tr').count(), 1);
      assert.equal(await page.getByLabel('Search state').inputValue(), 'page');
      await page.getByLabel('Search state').fill('no such thing');
      await page.getByText('No key matches').waitFor();
      await page.getByLabel('Search state').fill('');

      await page.getByRole('button', { name: 'Delete cursor' }).click();
      await page.locator('td code', { hasText: 'cursor' }).waitFor({ state: 'detached' });
      assert.equal((await server.api.get(`/api/jobs/${id}/state/cursor`)).status, 404);
      await page.getByText('2 keys').waitFor();
      await page.screenshot({ path: screenshotPath('job-state') });
      assert.deepEqual(unexpected(problems, /status of 400/), []);
    } catch (err) {
      throw await web.explain(page, err);
    } finally {
      await context.close();
    }
  });

  it('shows the environment: base image, the Dockerfile and its builds, rebuild, and back to the base image', async () => {
    const id = await createJob(server, { name: 'environment job' });
    const { context, page, problems } = await web.open();
    page.on('dialog', (d) => void d.accept().catch(() => undefined));
    try {
      await signIn(web, server, page);
      await page.goto(`${server.t.url}/jobs/${id}/environment`);
      await page.getByText('The playbook has no Dockerfile, so runs use the base image.').waitFor();
      await page.getByText('No builds yet').waitFor();
      await page.getByLabel('Base image', { exact: true }).fill('debian:bookworm-slim');
      await page.getByRole('button', { name: 'Save base image' }).click();
      await page.getByText('Base image saved.').waitFor();
      assert.equal((await server.api.get(`/api/jobs/${id}`)).body.image, 'debian:bookworm-slim');

      const dockerfile = 'FROM debian:bookworm-slim\nRUN apt-get install -y jq\n';
      const saved = await server.api.request('PUT', `/api/jobs/${id}/playbook`, { content: { dockerfile } });
      assert.equal(saved.status, 200, saved.text);
      await page.reload();
      await page.getByLabel('Dockerfile').getByText('RUN apt-get install -y jq').waitFor();
      // The save queued a build of the Dockerfile; its row opens its log.
      const images = (await server.api.get(`/api/jobs/${id}/images`)).body.items as Array<{
        id: string;
        status: string;
      }>;
      assert.equal(images.length, 1);
      const row = page.locator('tbody tr').first();
      await row.locator(`.badge.status-${images[0]!.status}`).waitFor();
      await row.getByRole('button').click();
      await page.waitForURL(new RegExp(`image=${images[0]!.id}`));
      const log = page.getByRole('heading', { name: 'Build log' }).locator('..');
      await log.getByText('Dockerfile of this build').click();
      await log.getByText('RUN apt-get install -y jq').waitFor();

      // Here the sandboxes are bwrap, which cannot build images: the API says so and the page shows it.
      await page.getByRole('button', { name: 'Rebuild image' }).click();
      await page
        .getByRole('alert')
        .filter({ hasText: 'No sandbox backend of this service can build images' })
        .waitFor();

      await page.getByRole('button', { name: 'Use the base image instead' }).click();
      await page.getByText(/Runs now use the base image \(playbook version 2\)/).waitFor();
      await page.getByText('The playbook has no Dockerfile, so runs use the base image.').waitFor();
      await page.locator('h2', { hasText: 'Base image' }).getByText('in use').waitFor();
      const playbook = (await server.api.get(`/api/jobs/${id}/playbook`)).body;
      assert.equal(playbook.content.dockerfile, null);
      assert.equal(playbook.summary, 'Dockerfile removed: runs use the base image');
      await page.screenshot({ path: screenshotPath('job-environment') });
      assert.deepEqual(unexpected(problems, /status of 422/), []);
    } catch (err) {
      throw await web.explain(page, err);
    } finally {
      await context.close();
    }
  });

  it('grants MCP servers with every tool or a chosen few, and never shows a header value', async () => {
    const headerValue = 'Bearer tools-tab-header-value-81c2';
    const created = await server.api.post('/api/mcp-servers', {
      name: 'dictionary',
      description: 'Words and notes',
      transport: 'http',
      url: mcp.url,
      headers: { 'X-Api-Key': headerValue },
    });
    assert.equal(created.status, 201, created.text);
    const serverId = created.body.id as string;
    const id = await createJob(server, {
      name: 'tool user',
      spec: { mcp: [{ server: 'dictionary', why: 'to look words up' }] },
    });
    const { context, page, problems } = await web.open();
    try {
      await signIn(web, server, page);
      await page.goto(`${server.t.url}/jobs/${id}/tools`);
      await page.getByText('to look words up').waitFor();
      await page.getByText('Tools not listed yet.').waitFor();
      await page.getByRole('button', { name: 'Test to list its tools' }).click();
      await page.getByText(/\d+ tools, listed/).waitFor();
      const listed = (await server.api.get(`/api/mcp-servers/${serverId}`)).body.tools as Array<{
        name: string;
        readOnly: boolean;
      }>;
      await page.getByText(`${listed.length} tools, listed`).waitFor();

      await page.getByLabel('Grant dictionary').check();
      assert.ok(await page.getByLabel('Every tool of dictionary, including tools it adds later').isChecked());
      await page.getByLabel('Only the tools chosen below').check();
      const picker = page.getByRole('list', { name: 'Tools of dictionary' });
      // Narrowing starts from the read-only tools; a tool with side effects is marked and left out.
      const readOnly = listed.filter((t) => t.readOnly).map((t) => t.name);
      for (const t of listed)
        assert.equal(await picker.getByRole('checkbox', { name: t.name }).isChecked(), t.readOnly, t.name);
      await picker.locator('li', { hasText: 'broken' }).getByText('destructive').waitFor();
      await picker.getByRole('checkbox', { name: 'slow' }).uncheck();
      await picker.getByRole('checkbox', { name: 'record' }).check();
      await page.getByRole('button', { name: 'Save tools' }).click();
      await page.getByText('Saved: the next runs get these tools.').waitFor();
      const expected = [...readOnly.filter((n) => n !== 'slow'), 'record'].sort();
      const grants = (await server.api.get(`/api/jobs/${id}/mcp-servers`)).body as Array<{
        serverId: string;
        allowedTools: string[] | null;
      }>;
      assert.deepEqual(
        grants.map((g) => ({ ...g, allowedTools: g.allowedTools && [...g.allowedTools].sort() })),
        [{ serverId, allowedTools: expected, serverName: 'dictionary' }],
      );

      // The choice reads back after a reload.
      await page.reload();
      assert.ok(await page.getByLabel('Only the tools chosen below').isChecked());
      assert.ok(await picker.getByRole('checkbox', { name: 'record' }).isChecked());
      assert.ok(!(await picker.getByRole('checkbox', { name: 'slow' }).isChecked()));
      await page.screenshot({ path: screenshotPath('job-tools') });

      await page.getByLabel('Every tool of dictionary, including tools it adds later').check();
      await page.getByRole('button', { name: 'Save tools' }).click();
      await waitFor(async () => (await server.api.get(`/api/jobs/${id}/mcp-servers`)).body[0]?.allowedTools === null);
      await page.getByLabel('Grant dictionary').uncheck();
      await page.getByRole('button', { name: 'Save tools' }).click();
      await waitFor(async () => (await server.api.get(`/api/jobs/${id}/mcp-servers`)).body.length === 0);
      assert.ok(!(await page.content()).includes(headerValue), 'a header value is never in the page');
      assert.ok(!(await page.content()).includes('tools-tab-header'), 'nor a part of it');
      assert.deepEqual(problems, []);
    } catch (err) {
      throw await web.explain(page, err);
    } finally {
      await context.close();
    }
  });

  it('runs a job with inputs from a template, refusing invalid JSON before anything is sent', async () => {
    const pushed = await server.api.post(`/api/providers/${server.providerId}/script`, {
      reset: true,
      responses: [{ toolCalls: [{ name: 'finish', args: { status: 'success', summary: 'weather told' } }] }],
    });
    assert.equal(pushed.status, 200, pushed.text);
    const id = await createJob(server, {
      name: 'weather for a city',
      spec: {
        inputs: [
          { name: 'city', type: 'string', description: 'Where to look' },
          { name: 'days', type: 'integer' },
          { name: 'metric', type: 'boolean' },
        ],
      },
    });
    const { context, page, problems } = await web.open();
    const triggers: string[] = [];
    page.on('request', (r) => {
      if (r.method() === 'POST' && r.url().endsWith(`/api/jobs/${id}/runs`)) triggers.push(r.postData() ?? '');
    });
    try {
      await signIn(web, server, page);
      await page.goto(`${server.t.url}/jobs/${id}`);
      // The job declares inputs, so Run now asks for them instead of starting at once.
      await page.getByRole('button', { name: 'Run now' }).click();
      const dialog = page.getByRole('dialog', { name: 'Run weather for a city' });
      await dialog.waitFor();
      const input = dialog.getByLabel('Input (JSON)');
      assert.deepEqual(JSON.parse(await input.inputValue()), { city: '', days: 0, metric: false });
      await dialog.getByText('Where to look').waitFor();
      await dialog.getByText('Valid JSON.').waitFor();
      // Escape closes it like any dialog, and nothing was started.
      await page.keyboard.press('Escape');
      await dialog.waitFor({ state: 'hidden' });
      await page.getByRole('button', { name: 'With input…' }).click();
      await dialog.waitFor();

      await input.fill('{"city": "Berlin", "days": 3,}');
      await dialog.getByText(/Not valid JSON: .*\(line 1, column \d+\)/).waitFor();
      assert.equal(await input.getAttribute('aria-invalid'), 'true');
      await dialog.getByRole('button', { name: 'Start run' }).click();
      await dialog
        .getByRole('alert')
        .filter({ hasText: 'The input is not valid JSON, so the run was not started' })
        .waitFor();
      assert.deepEqual(triggers, [], 'invalid JSON never reached the server');

      await input.fill('{"city": "Berlin", "days": 3}');
      await dialog.getByText('Valid JSON; it leaves out metric.').waitFor();
      await dialog.getByLabel('Extra instructions for this run').fill('Say it in German.');
      await page.screenshot({ path: screenshotPath('run-now-dialog') });
      await dialog.getByRole('button', { name: 'Start run' }).click();
      await page.waitForURL(/\/runs\/[0-9a-f-]+$/);
      const runId = page.url().split('/').pop()!;
      assert.equal(triggers.length, 1);
      const { run } = await finishedRun(server.api, runId);
      assert.deepEqual(run.input, { city: 'Berlin', days: 3 });
      assert.equal(run.instructions, 'Say it in German.');
      await page.locator('h1 .badge', { hasText: 'succeeded' }).waitFor({ timeout: 30_000 });
      assert.deepEqual(problems, []);
    } catch (err) {
      throw await web.explain(page, err);
    } finally {
      await context.close();
    }
  });
});
