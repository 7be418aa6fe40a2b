import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../api/harness.js';
import { clientId, clientSecret, startIssuer, type TestIssuer } from '../api/servers/oidc-issuer.js';
import { configFile } from '../api/sign-in-flow.js';
import { browserSuite, ensureWebBuild, screenshotPath } from './browser.js';

/**
 * The login page in a real browser: the configured providers (primary first), first-start guidance, the whole
 * OpenID sign-in through a real provider by clicking, the "last used" mark, and readable refusals.
 */
const web = browserSuite(await ensureWebBuild());
let t: TestServer;
let idp: TestIssuer;

before(async () => {
  idp = await startIssuer();
  idp.accounts = {
    ann: { email: 'ann@example.com', name: 'Ann', groups: ['engineering'] },
    sam: { email: 'sam@example.com', name: 'Sam', groups: ['sales'] },
  };
  const provider = (id: string, name: string, primary: boolean) => `
    ${id}:
      type: oidc
      name: ${name}
      primary: ${primary}
      issuer: ${idp.issuer}
      clientId: ${clientId}
      clientSecret: ${clientSecret}
      allowedGroups: [engineering]`;
  t = await startTestServer({
    SVC_CONFIG: configFile(
      `auth:\n  providers:${provider('zeta', 'Zeta', false)}${provider('corp', 'Corp SSO', true)}${provider('acme', 'Acme', false)}\n`,
    ),
    SVC_ROLES: 'api,projector',
  });
  idp.register(['zeta', 'corp', 'acme'].map((id) => `${t.url}/api/auth/callback/${id}`));
});
after(async () => {
  await t?.stop();
  await idp?.close();
});

describe('login page', () => {
  it('lists the providers, signs in by clicking one, marks it as last used, and explains a refusal', async () => {
    const { context, page, problems } = await web.open();
    try {
      await web.checkServed(t.url);
      await page.goto(`${t.url}/jobs`);
      await page.waitForURL(/\/sign-in\?next=/);
      const buttons = page.getByRole('list', { name: 'Sign-in providers' }).getByRole('link');
      await buttons.first().waitFor();
      assert.deepEqual(await buttons.allInnerTexts(), [
        'Sign in with Corp SSO',
        'Sign in with Acme',
        'Sign in with Zeta',
      ]);
      await page.getByRole('heading', { name: 'First start' }).waitFor();
      await page.screenshot({ path: screenshotPath('sign-in-providers') });

      idp.nextAccount = 'ann';
      await page.getByRole('link', { name: 'Sign in with Acme' }).click();
      await page.waitForURL(`${t.url}/jobs`);
      await page.getByRole('heading', { name: 'Jobs', exact: true }).waitFor();

      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.waitForURL(/\/sign-in/);
      const acme = page.getByRole('listitem').filter({ hasText: 'Sign in with Acme' });
      await acme.getByText('Last used').waitFor();
      assert.equal(await page.getByText('Last used').count(), 1);
      // Someone has signed in: the first-start guidance is gone.
      assert.equal(await page.getByRole('heading', { name: 'First start' }).count(), 0);

      // Another person on this browser: the provider's own session (its cookies) goes too.
      await context.clearCookies();
      idp.nextAccount = 'sam';
      await page.getByRole('link', { name: 'Sign in with Corp SSO' }).click();
      await page.waitForURL(`${t.url}/login?error=not_allowed`);
      await page.getByRole('alert').filter({ hasText: 'Your account is not allowed to use the service' }).waitFor();
      await page.screenshot({ path: screenshotPath('sign-in-refused') });

      await page.goto(`${t.url}/login?error=invalid_link`);
      await page.getByRole('alert').filter({ hasText: 'This sign-in link is invalid' }).waitFor();
      assert.deepEqual(problems, []);
    } catch (err) {
      throw await web.explain(page, err);
    } finally {
      await context.close();
    }
  });
});
