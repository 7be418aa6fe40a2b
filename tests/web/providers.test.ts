import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { serverWithFakeModel } from '../api/harness.js';
import { browserSuite, ensureWebBuild, screenshotPath } from './browser.js';
import { signIn } from './job-fixture.js';

/**
 * The providers and models page in a real browser against a real server with the fake provider: default models,
 * sync, enabling models, a model test, prices, and adding a provider whose key is never shown.
 */
const web = browserSuite(await ensureWebBuild());
const server = serverWithFakeModel();

describe('providers and models page', () => {
  it('sets default models, syncs, tests a model, sets its price, is refused disabling a default model, and adds a provider without showing its key', async () => {
    const apiKey = 'sk-test-never-shown-4411';
    const { context, page, problems } = await web.open();
    page.on('dialog', (d) => void d.accept().catch(() => undefined));
    try {
      await signIn(web, server, page);
      await page.getByRole('link', { name: 'Settings' }).first().click();
      await page.getByRole('link', { name: 'Providers and models' }).click();
      await page.waitForURL(/\/settings\/providers$/);

      const fake = page.getByRole('article', { name: 'Provider Fake' });
      const models = fake.getByRole('table', { name: 'Models of Fake' });
      await models.waitFor();
      const listed = (await server.api.get('/api/models')).body.items as Array<Record<string, any>>;
      const model = listed.find((m) => m.providerId === server.providerId && m.enabled)!;
      const name = (model.label ?? model.model) as string;
      // The API has no route for one model: it is read back from the list.
      const modelNow = async () =>
        ((await server.api.get('/api/models')).body.items as Array<Record<string, any>>).find(
          (m) => m.id === model.id,
        )!;

      // The harness made this model the agent's; the page shows it and sets the utility model the same way.
      const settingsBefore = (await server.api.get('/api/settings')).body;
      assert.equal(await page.getByLabel('Agent').inputValue(), settingsBefore.agentModelId);
      await page.getByLabel('Utility').selectOption(model.id as string);
      await page.getByText('Saved the utility model.').waitFor();
      assert.equal((await server.api.get('/api/settings')).body.utilityModelId, model.id);

      await fake.getByRole('button', { name: 'Sync models' }).click();
      await fake.getByText(/^Synced: \d+ added, \d+ updated, \d+ no longer listed\.$/).waitFor();

      await models.getByRole('button', { name: `Test ${name}` }).click();
      await models.getByText(/^Answered in \d+ ms$/).waitFor();

      await models.getByRole('button', { name: `Edit the price of ${name}` }).click();
      await models.getByLabel(`Input price of ${name}`).fill('3');
      await models.getByLabel(`Output price of ${name}`).fill('15');
      await models.getByRole('button', { name: 'Save' }).click();
      await models.getByText('3 / 15').waitFor();
      const priced = await modelNow();
      assert.deepEqual([priced.price.in, priced.price.out], [3_000_000, 15_000_000], 'micro-USD per 1M tokens');
      assert.equal(priced.followCatalog, false, 'a price set by hand stops following the catalog');

      // A default model cannot be disabled: the refusal is shown beside the model, which stays on.
      await models.getByRole('switch', { name: `Enable ${name}` }).click();
      await models
        .getByRole('alert')
        .getByText(/is the workspace's agent model; pick another one/)
        .waitFor();
      assert.equal(await models.getByRole('switch', { name: `Enable ${name}` }).isChecked(), true);
      assert.equal((await modelNow()).enabled, true);

      const add = page.getByRole('form', { name: 'Add a provider' });
      await add.getByLabel('Name').fill('Local');
      await add.getByLabel('Kind').selectOption('openai');
      await add.getByLabel('API key').fill(apiKey);
      await add.getByLabel('Base URL').fill('http://127.0.0.1:9/v1');
      await add.getByRole('button', { name: 'Add provider' }).click();
      const local = page.getByRole('article', { name: 'Provider Local' });
      await local.getByText('API key set', { exact: false }).waitFor();
      assert.equal(await add.getByLabel('API key').inputValue(), '', 'the key leaves the form once sent');
      assert.ok(!(await page.content()).includes(apiKey), 'the key is nowhere in the page');
      await page.screenshot({ path: screenshotPath('providers-desktop'), fullPage: true });

      await local.getByRole('button', { name: 'Delete' }).click();
      await local.waitFor({ state: 'detached' });
      assert.deepEqual(
        problems.filter((p) => !/status of 409/.test(p)),
        [],
      );
    } catch (err) {
      throw await web.explain(page, err);
    } finally {
      await context.close();
    }
  });
});
