import assert from 'node:assert/strict';
import type { Locator, Page } from '@playwright/test';
import type { RunnerServer } from '../api/harness.js';
import type { BrowserSuite } from './browser.js';

/**
 * Signs the page in as the admin through a sign-in link, as a person who clicked the link in the mail would. The link
 * lands on the dashboard; most suites start from the jobs list, so the page then opens `then` (`/` stays there).
 */
export async function signIn(web: BrowserSuite, server: RunnerServer, page: Page, then = '/jobs'): Promise<void> {
  await web.checkServed(server.t.url);
  const link = await server.t.server.services.identity.issueSignInLink('admin@example.com');
  await page.goto(server.t.url + link);
  await landedOnDashboard(page);
  if (then !== '/') {
    await page.goto(server.t.url + then);
    await page.waitForURL((url) => url.pathname + url.search === then);
  }
}

/** A sign-in link (or a refused `next`) ends on the dashboard at `/`. */
export async function landedOnDashboard(page: Page): Promise<void> {
  await page.waitForURL((url) => url.pathname === '/');
  await page.getByRole('heading', { level: 1, name: 'Dashboard' }).waitFor();
}

/** A job made through the API, answered by id. */
export async function createJob(server: RunnerServer, fields: Record<string, unknown>): Promise<string> {
  const created = await server.api.post('/api/jobs', { instruction: 'x', selfImprove: false, ...fields });
  assert.equal(created.status, 201, created.text);
  return created.body.id as string;
}

/**
 * Replaces the whole text of a code editor (CodeMirror's editable content, found by its label) the way a person
 * does: select all, then type; the editor module loads on demand, so this waits for it.
 */
export async function typeInEditor(page: Page, editor: Locator, text: string): Promise<void> {
  // Near the top: a long text scrolls inside the editor, so the middle of its content may be out of sight.
  await editor.click({ position: { x: 40, y: 8 } });
  await page.keyboard.press('ControlOrMeta+a');
  await page.keyboard.press('Delete');
  // insertText: one input event, as a paste would be; CodeMirror's auto-indent would otherwise re-indent each line.
  await page.keyboard.insertText(text);
}

export async function waitFor(check: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}
