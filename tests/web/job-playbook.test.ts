import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { serverWithFakeModel } from '../api/harness.js';
import { browserSuite, ensureWebBuild, screenshotPath } from './browser.js';
import { createJob, signIn, typeInEditor, waitFor } from './job-fixture.js';

/**
 * The job page's Playbook tab in a real browser against a real server: editing in the form with code editors,
 * field errors from the API next to the part they concern, a secret pasted into a script never shown again, a
 * conflict with a version saved meanwhile that keeps the edit, JSON editing that refuses invalid JSON before
 * sending, rollback and the mode pin.
 */
const web = browserSuite(await ensureWebBuild());
const server = serverWithFakeModel();

describe('job page: playbook tab', () => {
  it('edits the playbook in the form and as JSON, keeps an edit through a conflict, rolls back and pins a mode', async () => {
    const secretValue = 'pb-web-secret-4f7a9c';
    const secret = await server.api.post('/api/secrets', { name: 'PB_WEB_TOKEN', value: secretValue });
    assert.equal(secret.status, 201, secret.text);
    const id = await createJob(server, { name: 'playbook editing' });
    const { context, page, problems } = await web.open();
    page.on('dialog', (d) => void d.accept().catch(() => undefined));
    const puts: string[] = [];
    page.on('request', (r) => {
      if (r.method() === 'PUT' && r.url().endsWith(`/api/jobs/${id}/playbook`)) puts.push(r.postData() ?? '');
    });
    try {
      await signIn(web, server, page);
      const jsBefore = await loadedScripts(page);
      await page.goto(`${server.t.url}/jobs/${id}/playbook`);
      await page.getByText('The playbook is empty').waitFor();
      assert.ok(
        !(await loadedScripts(page)).some((s) => s.includes('codemirror')) && jsBefore.length > 0,
        'the editor is not loaded before it is shown',
      );

      // The form: a learning, a script with a bad name, a main script that holds a secret's value.
      await page.getByRole('button', { name: 'Edit playbook' }).click();
      await page.waitForURL(/edit=form/);
      await page.getByRole('button', { name: 'Add learning' }).click();
      await page.getByLabel('Learning 1', { exact: true }).fill('The weather API answers in Celsius');
      await page.getByRole('button', { name: 'Add script' }).click();
      await page.getByLabel('Name of script 1').fill('bad name!');
      await typeInEditor(
        page,
        page.getByRole('textbox', { name: 'Main script' }),
        `#!/bin/sh\necho "token ${secretValue}"\necho done\n`,
      );
      assert.ok(
        (await loadedScripts(page)).some((s) => s.includes('codemirror')),
        'the editor module came on demand',
      );
      await page.getByLabel('What changed (optional)').fill('first edit in the browser');
      await page.getByRole('button', { name: 'Save as a new version' }).click();
      // The API's field error shows next to the script it concerns, and nothing was saved.
      await page.locator('.item-row .field-error', { hasText: 'name: must be letters' }).waitFor();
      assert.equal((await server.api.get(`/api/jobs/${id}/playbook`)).body.version, 0);
      await page.getByLabel('Name of script 1').fill('greet.sh');
      await page.getByRole('button', { name: 'Save as a new version' }).click();
      await page.getByText('Saved as version 1.').waitFor();
      await page.getByText('The weather API answers in Celsius').waitFor();
      await page.locator('h3', { hasText: 'greet.sh' }).waitFor();
      // The secret was redacted by the server before it was stored; the page never holds it.
      await page.locator('pre code', { hasText: 'token [redacted]' }).waitFor();
      assert.ok(!(await page.content()).includes(secretValue), 'no secret value is in the page');
      const v1 = (await server.api.get(`/api/jobs/${id}/playbook`)).body;
      assert.equal(v1.version, 1);
      assert.equal(v1.summary, 'first edit in the browser');
      assert.doesNotMatch(v1.content.main, new RegExp(secretValue));

      // A conflict: the person edits version 1 while someone else saves version 2.
      await page.getByRole('button', { name: 'Edit playbook' }).click();
      await page.getByLabel('Learning 1', { exact: true }).fill('The weather API answers in Fahrenheit');
      const theirs = await server.api.request('PUT', `/api/jobs/${id}/playbook`, {
        content: { ...v1.content, learnings: [...v1.content.learnings, { text: 'Saved by someone else' }] },
        baseVersion: 1,
        summary: 'their change',
      });
      assert.equal(theirs.status, 200, theirs.text);
      const putsBefore = puts.length;
      await page.getByRole('button', { name: 'Save as a new version' }).click();
      const conflict = page.getByRole('alert').filter({ hasText: 'Someone saved the playbook while you were editing' });
      await conflict.waitFor();
      await conflict.getByText('Version 2 is now the latest').waitFor();
      await conflict.getByText('their change').waitFor();
      assert.equal(puts.length, putsBefore + 1, 'one save was tried');
      // The edit is kept, and the comparison shows it against the newer version.
      assert.equal(
        await page.getByLabel('Learning 1', { exact: true }).inputValue(),
        'The weather API answers in Fahrenheit',
      );
      await conflict.locator('li.diff-changed', { hasText: 'Fahrenheit' }).waitFor();
      await conflict.locator('li.diff-removed', { hasText: 'Saved by someone else' }).waitFor();
      await page.screenshot({ path: screenshotPath('playbook-conflict') });
      await conflict.getByRole('button', { name: 'Save mine as the next version' }).click();
      await page.getByText('Saved as version 3.').waitFor();
      const v3 = (await server.api.get(`/api/jobs/${id}/playbook`)).body;
      assert.equal(v3.content.learnings[0].text, 'The weather API answers in Fahrenheit');

      // A second conflict, this time dropping the edit for the newer version.
      await page.getByRole('button', { name: 'Edit playbook' }).click();
      await page.getByLabel('Learning 1', { exact: true }).fill('to be dropped');
      const again = await server.api.request('PUT', `/api/jobs/${id}/playbook`, {
        content: { ...v3.content, setup: 'apk add curl\n' },
        baseVersion: 3,
      });
      assert.equal(again.status, 200, again.text);
      await page.getByRole('button', { name: 'Save as a new version' }).click();
      await page.getByRole('button', { name: 'Reload version 4 (drops your edit)' }).click();
      assert.equal(
        await page.getByLabel('Learning 1', { exact: true }).inputValue(),
        'The weather API answers in Fahrenheit',
      );
      await page.getByRole('textbox', { name: 'Setup' }).getByText('apk add curl').waitFor();
      await page.getByRole('button', { name: 'Cancel' }).click();
      await page.waitForURL(new RegExp(`/jobs/${id}/playbook$`));

      // JSON: invalid JSON is refused in the page; the API's field errors are listed by path.
      await page.getByRole('button', { name: 'Edit as JSON' }).click();
      const json = page.getByRole('textbox', { name: 'Playbook JSON' });
      await json.getByText('"learnings"').waitFor();
      const putsBeforeJson = puts.length;
      await typeInEditor(page, json, '{"learnings": [ {"text": "unfinished" ');
      await page.getByRole('button', { name: 'Save as a new version' }).click();
      await page.getByRole('alert').filter({ hasText: 'The JSON is not valid, so nothing was sent' }).waitFor();
      assert.equal(puts.length, putsBeforeJson, 'invalid JSON never reached the server');
      await typeInEditor(page, json, '{"learnings": [{"text": "   "}], "main": "#!/bin/sh\\necho ok\\n"}');
      await page.getByRole('button', { name: 'Save as a new version' }).click();
      await page
        .getByRole('alert')
        .locator('li', { has: page.locator('code', { hasText: 'content.learnings[0].text' }) })
        .filter({ hasText: 'must not be empty' })
        .waitFor();
      assert.equal(puts.length, putsBeforeJson + 1);
      // Back to the form with the JSON as typed, fixed there, and saved.
      await page.getByRole('button', { name: 'Form', exact: true }).click();
      await page.waitForURL(/edit=form/);
      await page.getByLabel('Learning 1', { exact: true }).fill('Edited as JSON, finished in the form');
      await page.getByRole('button', { name: 'Save as a new version' }).click();
      await page.getByText('Saved as version 5.').waitFor();
      const v5 = (await server.api.get(`/api/jobs/${id}/playbook`)).body;
      assert.deepEqual(
        v5.content.learnings.map((l: { text: string }) => l.text),
        ['Edited as JSON, finished in the form'],
      );
      assert.equal(v5.content.main, '#!/bin/sh\necho ok\n');

      // Versions: an older one shows its diff, and a rollback saves its content as a new version.
      await page.getByRole('button', { name: 'v1', exact: true }).click();
      await page.waitForURL(/version=1$/);
      await page.locator('.diff .diff-add', { hasText: 'token [redacted]' }).waitFor();
      await page.getByRole('button', { name: 'Roll back to version 1' }).click();
      await page.getByText('Rolled back: version 6 has the content of version 1.').waitFor();
      const v6 = (await server.api.get(`/api/jobs/${id}/playbook`)).body;
      assert.equal(v6.version, 6);
      assert.equal(v6.content.learnings[0].text, 'The weather API answers in Celsius');

      // The mode pin changes the job, and the page says which mode the next run takes.
      await page.getByLabel('Mode of the next runs').selectOption('explore');
      await waitFor(async () => (await server.api.get(`/api/jobs/${id}`)).body.modePin === 'explore');
      await page.locator('.card', { hasText: 'next run:' }).locator('.badge', { hasText: 'explore' }).waitFor();
      await page.getByLabel('Mode of the next runs').selectOption('');
      await waitFor(async () => (await server.api.get(`/api/jobs/${id}`)).body.modePin === null);
      assert.ok(!(await page.content()).includes(secretValue), 'no secret value is in the page');
      // The two 409 answers are the conflicts this test provokes (the browser logs every refused fetch).
      assert.deepEqual(
        problems.filter((p) => !/status of 409/.test(p)),
        [],
        'no console errors and no CSP violations',
      );
      assert.equal(problems.length, 2);
    } catch (err) {
      throw await web.explain(page, err);
    } finally {
      await context.close();
    }
  });
});

/** The script files the page has loaded so far. */
async function loadedScripts(page: import('@playwright/test').Page): Promise<string[]> {
  return page.evaluate(() =>
    performance
      .getEntriesByType('resource')
      .map((e) => e.name)
      .filter((n) => n.endsWith('.js')),
  );
}
