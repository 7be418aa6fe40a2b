import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Page } from '@playwright/test';
import { finishedRun, serverWithFakeModel } from '../api/harness.js';
import { browserSuite, ensureWebBuild, screenshotPath } from './browser.js';
import { createJob, signIn } from './job-fixture.js';

/**
 * The main pages at a laptop's and a phone's width, light and dark, kept as screenshots under
 * test-results/screenshots for review; each page is checked to fit the phone's width and to follow the colour scheme.
 */
const web = browserSuite(await ensureWebBuild());
// Workspaces enabled: the switcher is in the top bar and the members page holds invites.
const server = serverWithFakeModel({ SVC_WORKSPACES_ENABLED: 'true' });

const sizes = { desktop: { width: 1280, height: 800 }, phone: { width: 390, height: 844 } } as const;

async function pages(): Promise<Array<[string, string, string]>> {
  await server.api.post(`/api/providers/${server.providerId}/script`, {
    reset: true,
    responses: [
      { toolCalls: [{ name: 'bash', args: { command: 'echo "a line of output"' } }] },
      {
        toolCalls: [
          {
            name: 'finish',
            args: { status: 'success', summary: '## Done\nThe **report** is written.', outputs: { n: 3 } },
          },
        ],
      },
    ],
  });
  const job = await createJob(server, { name: 'Weather report', instruction: 'Report the weather.' });
  const runId = (await server.api.post(`/api/jobs/${job}/runs`, {})).body.runId as string;
  const { run } = await finishedRun(server.api, runId);
  assert.equal(run.status, 'succeeded', run.error);
  const invite = await server.api.post('/api/workspace/invites', { role: 'member' });
  assert.equal(invite.status, 201, invite.text);
  const invitePath = new URL(invite.body.url as string).pathname;
  // [screenshot name, path, the page's heading]
  return [
    ['dashboard', '/', 'Dashboard'],
    ['jobs', '/jobs', 'Jobs'],
    ['new-job', '/jobs/new', 'New job'],
    ['job-overview', `/jobs/${job}`, 'Weather report'],
    ['job-playbook', `/jobs/${job}/playbook`, 'Weather report'],
    ['runs', '/runs', 'Runs'],
    ['run', `/runs/${runId}`, 'Weather report'],
    ['secrets', '/settings/secrets', 'Settings'],
    ['tokens', '/settings/tokens', 'Settings'],
    ['mcp-servers', '/settings/mcp', 'Settings'],
    ['providers', '/settings/providers', 'Settings'],
    ['workspace', '/settings/workspace', 'Settings'],
    ['members', '/settings/members', 'Settings'],
    ['invite', invitePath, 'Invitation'],
    ['invite-invalid', '/invite/no-such-invite', 'Invitation'],
    ['admin-users', '/admin/users', 'Admin'],
    ['admin-workspaces', '/admin/workspaces', 'Admin'],
  ];
}

async function shoot(page: Page, name: string, path: string, heading: string, maxWidth: number): Promise<void> {
  await page.goto(server.t.url + path);
  await page.getByRole('heading', { level: 1, name: new RegExp(`^${heading}`) }).waitFor();
  await page.locator('.spinner').first().waitFor({ state: 'detached' });
  const overflow = await page.evaluate<number>('document.documentElement.scrollWidth');
  assert.ok(overflow <= maxWidth + 1, `${path} is ${overflow}px wide in a ${maxWidth}px window`);
  await page.screenshot({ path: screenshotPath(name), fullPage: true });
}

describe('screenshots of the main pages', () => {
  it('shoots every main page at desktop and phone width, each fitting its width, light and dark', async () => {
    const list = await pages();
    const backgrounds: Record<string, string> = {};
    for (const [size, { width, height }] of Object.entries(sizes)) {
      for (const scheme of ['light', 'dark'] as const) {
        const { context, page, problems } = await web.open(width, height, scheme);
        try {
          await signIn(web, server, page);
          backgrounds[`${size}-${scheme}`] = await page.evaluate<string>(
            'getComputedStyle(document.body).backgroundColor',
          );
          // Dark screenshots of a few pages are enough to review the palette.
          const shown =
            scheme === 'light' ? list : list.filter(([n]) => ['dashboard', 'jobs', 'run', 'job-overview'].includes(n));
          for (const [name, path, heading] of shown)
            await shoot(page, `${name}-${size}-${scheme}`, path, heading, width);
          assert.deepEqual(problems, []);
        } catch (err) {
          throw await web.explain(page, err);
        } finally {
          await context.close();
        }
      }
    }
    assert.notEqual(backgrounds['desktop-light'], backgrounds['desktop-dark'], 'the page follows the dark scheme');
    assert.equal(backgrounds['phone-dark'], backgrounds['desktop-dark']);
  });
});
