import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { BrowserContext, Page } from '@playwright/test';
import { Client, startTestServer, type TestServer } from '../api/harness.js';
import { browserSuite, ensureWebBuild, screenshotPath } from './browser.js';
import { landedOnDashboard } from './job-fixture.js';
import { randomUUID } from 'node:crypto';
import { hashToken } from '../../adapters/keys.js';
import { systemContext } from '../../app/commands.js';
import { inviteDecider, inviteStreamId } from '../../domain/invite.js';

/**
 * A team's door in a real browser against a real server with workspaces enabled: the workspace switcher, an invite
 * link created by the owner and accepted by a second person in a browser of their own, role changes, a plain
 * member's read-only members page without the Admin area, the Admin area itself, and invite links that do not work.
 */
const web = browserSuite(await ensureWebBuild());
let t: TestServer;
before(async () => {
  t = await startTestServer({ SVC_WORKSPACES_ENABLED: 'true' });
});
after(async () => t?.stop());

interface Person {
  context: BrowserContext;
  page: Page;
  problems: string[];
}
const people: Person[] = [];
after(async () => {
  for (const p of people) await p.context.close();
});

/** A browser of its own for a person who signed in through a sign-in link, answering confirmation dialogs with yes. */
async function personSignedIn(email: string, admin: boolean): Promise<Person> {
  await web.checkServed(t.url);
  const person = await web.open();
  people.push(person);
  person.page.on('dialog', (d) => void d.accept().catch(() => undefined));
  const link = await t.server.services.identity.issueSignInLink(email, admin);
  await person.page.goto(t.url + link);
  await landedOnDashboard(person.page);
  return person;
}

/** The API as the person's browser is signed in (its session cookie), for checking what the pages did. */
async function apiOf(person: Person): Promise<Client> {
  const c = (await person.context.cookies()).find((x) => x.name === 'svc_session');
  assert.ok(c, 'the browser holds a session');
  return new Client(t.url, { cookie: `svc_session=${c.value}` });
}

const switcher = (page: Page, name: string) =>
  page.getByRole('button', { name: `Workspace: ${name}. Switch workspace` });

async function explained<T>(person: Person | undefined, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (!person) throw err;
    throw await web.explain(person.page, err);
  }
}

let owner: Person;
let bob: Person;
let inviteUrl = '';

describe('a team in the web app', () => {
  it('creates a workspace from the switcher and switches between workspaces', async () => {
    owner = await personSignedIn('admin@example.com', true);
    const { page } = owner;
    await explained(owner, async () => {
      // The first person claims the ownerless Default workspace.
      await switcher(page, 'Default').click();
      const menu = page.getByRole('list', { name: 'Your workspaces' });
      await menu.getByRole('button', { name: /^Default/ }).waitFor();
      await page.getByLabel('New workspace').fill('Team A');
      await page.getByRole('button', { name: 'Create and switch' }).click();
      await switcher(page, 'Team A').waitFor();
      assert.equal(new URL(page.url()).pathname, '/', 'a new workspace opens on the dashboard and its first steps');
      assert.equal((await (await apiOf(owner)).get('/api/users/me')).body.workspace.name, 'Team A');

      // From a settings page the switch stays on the same page, now for the other workspace.
      await page.goto(`${t.url}/settings/members`);
      await page.getByRole('heading', { name: 'Members of Team A' }).waitFor();
      await switcher(page, 'Team A').click();
      const current = menu.getByRole('button', { name: /^Team A/ });
      assert.equal(await current.getAttribute('aria-current'), 'true');
      assert.equal(await current.isDisabled(), true, 'the current workspace is not a switch target');
      await page.screenshot({ path: screenshotPath('workspace-switcher') });
      await menu.getByRole('button', { name: /^Default/ }).click();
      await page.getByRole('heading', { name: 'Members of Default' }).waitFor();
      await switcher(page, 'Default').waitFor();
      assert.equal(new URL(page.url()).pathname, '/settings/members');
      assert.equal((await (await apiOf(owner)).get('/api/users/me')).body.workspace.name, 'Default');

      // Escape closes the menu and gives the focus back to the switcher.
      await switcher(page, 'Default').click();
      await menu.waitFor();
      await page.keyboard.press('Escape');
      await menu.waitFor({ state: 'detached' });
      assert.equal(
        await page.evaluate<string | null>("document.activeElement?.getAttribute('aria-label') ?? null"),
        'Workspace: Default. Switch workspace',
      );
      assert.deepEqual(owner.problems, []);
    });
  });

  it('invites by a link shown once, and a second person accepts it in a browser of their own', async () => {
    const { page, context } = owner;
    await explained(owner, async () => {
      await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: t.url });
      await switcher(page, 'Default').click();
      await page
        .getByRole('list', { name: 'Your workspaces' })
        .getByRole('button', { name: /^Team A/ })
        .click();
      await switcher(page, 'Team A').waitFor();
      await page.getByRole('link', { name: 'Settings' }).first().click();
      await page.getByRole('link', { name: 'Members and invites' }).click();
      await page.waitForURL(/\/settings\/members$/);
      await page.getByRole('heading', { name: 'Invites', exact: true }).waitFor();
      await page.getByText('No pending invites').waitFor();
      await page.getByLabel('A link to send').check();
      await page.getByLabel('Role', { exact: true }).selectOption('member');
      await page.getByRole('button', { name: 'Create invite link' }).click();
      await page.getByText('Copy the invite link now: it is shown only once.').waitFor();
      inviteUrl = await page.getByLabel('The invite link').inputValue();
      assert.match(inviteUrl, new RegExp(`^${t.url}/invite/[^/]+$`));
      await page.getByRole('button', { name: 'Copy link' }).click();
      await page.getByText('Copied.', { exact: true }).waitFor();
      assert.equal(await page.evaluate<string>('navigator.clipboard.readText()'), inviteUrl);
      await page.getByRole('table', { name: 'Pending invites' }).getByText('Invite link').waitFor();
      await page.screenshot({ path: screenshotPath('members-owner'), fullPage: true });

      // Shown once: after a reload the list names the invite, never its address.
      await page.reload();
      await page.getByRole('table', { name: 'Pending invites' }).getByText('Invite link').waitFor();
      assert.equal(await page.getByLabel('The invite link').count(), 0);
      assert.ok(!(await page.locator('body').innerText()).includes(inviteUrl.split('/invite/')[1]!));

      // The owner checking the link is a member already: the page offers nothing that would use it up.
      await page.goto(inviteUrl);
      await page.getByText('You are already a member of Team A').waitFor();
      assert.equal(await page.getByRole('button', { name: /^Accept/ }).count(), 0);
    });

    bob = await personSignedIn('bob@example.com', false);
    await explained(bob, async () => {
      // Bob has a workspace of his own; the invite takes him into Team A.
      await switcher(bob.page, "bob's workspace").waitFor();
      await bob.page.goto(inviteUrl);
      await bob.page.getByRole('heading', { name: 'Join Team A' }).waitFor();
      await bob.page.getByText('admin@example.com invited you to the workspace Team A as a member.').waitFor();
      await bob.page.screenshot({ path: screenshotPath('invite'), fullPage: true });
      await bob.page.getByRole('button', { name: 'Accept and join Team A' }).click();
      await bob.page.waitForURL((url) => url.pathname === '/');
      await switcher(bob.page, 'Team A').waitFor();
      const me = (await (await apiOf(bob)).get('/api/users/me')).body;
      assert.equal(me.workspace.name, 'Team A');
      assert.equal(me.workspace.role, 'member');

      // The link was for one person: now it is used, and says so.
      await bob.page.goto(inviteUrl);
      await bob.page.getByRole('heading', { name: 'This invite link is not valid' }).waitFor();
      assert.equal(await bob.page.getByRole('button', { name: /^Accept/ }).count(), 0);
      assert.deepEqual(bob.problems, []);
    });

    await explained(owner, async () => {
      await page.goto(`${t.url}/settings/members`);
      await page.getByRole('table', { name: 'Members' }).getByText('bob@example.com').waitFor();
      await page.getByText('No pending invites').waitFor();
    });
  });

  it('lets the owner change a member’s role, never the owner’s', async () => {
    const { page } = owner;
    await explained(owner, async () => {
      const members = page.getByRole('table', { name: 'Members' });
      // The owner's own row has no role control: an owner keeps the role until a transfer.
      await members.getByText('owner', { exact: true }).waitFor();
      assert.equal(await members.getByRole('combobox').count(), 1, 'only Bob has a role to change');
      await page.getByLabel('Role of bob@example.com').selectOption('admin');
      await page.getByText('bob@example.com is now an admin.').waitFor();
      const api = await apiOf(owner);
      const bobAsMember = async () =>
        ((await api.get('/api/workspace/members')).body.items as Array<{ email: string; role: string }>).find(
          (m) => m.email === 'bob@example.com',
        );
      assert.equal((await bobAsMember())?.role, 'admin');
      await page.getByLabel('Role of bob@example.com').selectOption('member');
      await page.getByText('bob@example.com is now a member.').waitFor();
      assert.equal((await bobAsMember())?.role, 'member');
      assert.deepEqual(owner.problems, []);
    });
  });

  it('invites by email: the person is in at their next sign-in, and the owner can remove them', async () => {
    const { page } = owner;
    await explained(owner, async () => {
      await page.getByLabel('An email address').check();
      await page.getByLabel('Email', { exact: true }).fill('dana@example.com');
      await page.getByLabel('Role', { exact: true }).selectOption('admin');
      await page.getByRole('button', { name: 'Invite', exact: true }).click();
      await page.getByText('Invited dana@example.com: they join when they next sign in with that address.').waitFor();
      const invites = page.getByRole('table', { name: 'Pending invites' });
      await invites.getByText('dana@example.com').waitFor();
      assert.equal(await page.getByLabel('The invite link').count(), 0, 'an email invite has no link to show');
    });

    // Dana signs in with that (verified) address and lands in Team A as an admin.
    const dana = await personSignedIn('dana@example.com', false);
    await explained(dana, async () => {
      await switcher(dana.page, 'Team A').waitFor();
      assert.equal((await (await apiOf(dana)).get('/api/users/me')).body.workspace.role, 'admin');
    });

    await explained(owner, async () => {
      await page.reload();
      await page.getByText('No pending invites').waitFor();
      await page.getByRole('button', { name: 'Remove dana@example.com' }).click();
      await page.getByText('dana@example.com was removed.').waitFor();
      await page.getByRole('table', { name: 'Members' }).getByText('dana@example.com').waitFor({ state: 'detached' });
      // Her session in Team A ended with the membership: her next page asks her to sign in.
      await dana.page.goto(`${t.url}/runs`);
      await dana.page.waitForURL(/\/sign-in\?next=%2Fruns/);
      assert.deepEqual(owner.problems, []);
    });
  });

  it('shows a plain member the members read-only and no Admin area; the member can leave', async () => {
    const { page } = bob;
    await explained(bob, async () => {
      await page.goto(`${t.url}/settings/members`);
      await page.getByText('Only admins and the owner can change members and invites').waitFor();
      const members = page.getByRole('table', { name: 'Members' });
      await members.getByText('admin@example.com').waitFor();
      assert.equal(await members.getByRole('combobox').count(), 0, 'no role controls');
      assert.equal(await page.getByRole('button', { name: /^Remove/ }).count(), 0, 'no remove buttons');
      assert.equal(
        await page.getByRole('heading', { name: 'Invites', exact: true }).count(),
        0,
        'no invites for a member',
      );
      assert.equal(
        await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Admin' }).count(),
        0,
      );
      await page.screenshot({ path: screenshotPath('members-member'), fullPage: true });

      // Nor does the command palette offer it.
      await page.keyboard.press('Control+k');
      await page.getByRole('combobox', { name: 'Go to a page, job or run' }).fill('members');
      await page.getByRole('option', { name: /Members and invites/ }).waitFor();
      await page.getByRole('combobox', { name: 'Go to a page, job or run' }).fill('instance');
      assert.equal(await page.getByRole('option', { name: /of this instance/ }).count(), 0);
      await page.keyboard.press('Escape');

      await page.goto(`${t.url}/admin/users`);
      await page.getByRole('heading', { name: 'For instance admins only' }).waitFor();
      assert.equal(await page.getByRole('table').count(), 0);

      await page.goto(`${t.url}/settings/members`);
      await page.getByRole('button', { name: 'Leave workspace' }).click();
      await switcher(page, "bob's workspace").waitFor();
      assert.equal((await (await apiOf(bob)).get('/api/users/me')).body.workspace.name, "bob's workspace");
      assert.deepEqual(bob.problems, []);
    });
  });

  it('gives instance admins the Admin area: users deactivated and reactivated, admin rights, workspaces', async () => {
    const { page } = owner;
    await explained(owner, async () => {
      await page.keyboard.press('Control+k');
      await page.keyboard.type('workspaces of');
      await page.keyboard.press('Enter');
      await page.waitForURL(/\/admin\/workspaces$/);
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Admin' }).click();
      await page.waitForURL(/\/admin\/users$/);
      const users = page.getByRole('table', { name: 'Users' });
      await users.getByText('bob@example.com').waitFor();
      // The admin cannot lock themselves out: their own row has no controls.
      assert.equal(await page.getByRole('button', { name: 'Deactivate admin@example.com' }).count(), 0);

      await page.getByRole('button', { name: 'Deactivate bob@example.com' }).click();
      await page.getByText('bob@example.com is deactivated and signed out.').waitFor();
      // Bob's browser is signed out at once: his next page asks him to sign in.
      await bob.page.goto(`${t.url}/runs`);
      await bob.page.waitForURL(/\/sign-in\?next=%2Fruns/);

      await page.getByRole('button', { name: 'Reactivate bob@example.com' }).click();
      await page.getByText('bob@example.com can sign in again.').waitFor();
      await page.getByRole('button', { name: 'Make instance admin: bob@example.com' }).click();
      await page.getByText('bob@example.com is now an instance admin.').waitFor();
      const api = await apiOf(owner);
      const bobUser = ((await api.get('/api/admin/users?search=bob')).body.items as Array<Record<string, unknown>>)[0];
      assert.equal(bobUser?.isAdmin, true);
      assert.equal(bobUser?.deactivated, false);
      await page.getByRole('button', { name: 'Remove instance admin rights of bob@example.com' }).click();
      await page.getByText('bob@example.com is no longer an instance admin.').waitFor();

      await page.getByLabel('Search users by email or name').fill('bob');
      await page.waitForURL(/\/admin\/users\?search=bob$/);
      await users.getByText('admin@example.com').waitFor({ state: 'detached' });
      await page.screenshot({ path: screenshotPath('admin-users'), fullPage: true });

      await page.getByRole('link', { name: 'Workspaces' }).click();
      await page.waitForURL(/\/admin\/workspaces$/);
      const workspaces = page.getByRole('table', { name: 'Workspaces' });
      for (const name of ['Default', 'Team A', "bob's workspace"])
        await workspaces.getByRole('cell', { name, exact: true }).waitFor();
      await page.getByRole('button', { name: 'Delete workspace Default' }).click();
      await page.getByRole('alert').filter({ hasText: 'The default workspace cannot be deleted' }).waitFor();
      await workspaces.getByRole('cell', { name: 'Default', exact: true }).waitFor();
      await page.screenshot({ path: screenshotPath('admin-workspaces'), fullPage: true });
      assert.deepEqual(
        owner.problems.filter((p) => !/status of 409/.test(p)),
        [],
      );
    });
  });

  it('says clearly when an invite link is unknown, and sends a signed-out person to sign in and back', async () => {
    await explained(owner, async () => {
      await owner.page.goto(`${t.url}/invite/not-a-real-invite-token`);
      await owner.page.getByRole('heading', { name: 'This invite link is not valid' }).waitFor();
      await owner.page.getByText('It may have been used already, revoked, or copied incompletely').waitFor();
      assert.equal(await owner.page.getByRole('button', { name: /^Accept/ }).count(), 0);
      await owner.page.goto(`${t.url}/invite/${'x'.repeat(300)}`);
      await owner.page.getByRole('heading', { name: 'This invite link is not valid' }).waitFor();
    });

    const stranger = await web.open();
    people.push(stranger);
    await explained(stranger, async () => {
      await stranger.page.goto(`${t.url}/invite/some-token`);
      await stranger.page.waitForURL(`${t.url}/sign-in?next=${encodeURIComponent('/invite/some-token')}`);
      // Signed in (here through a link, as providers' redirects are tested with the login page), the sign-in page
      // sends the person back to the invite.
      const link = await t.server.services.identity.issueSignInLink('carol@example.com', false);
      await stranger.page.goto(t.url + link);
      await landedOnDashboard(stranger.page);
      await stranger.page.goto(`${t.url}/sign-in?next=${encodeURIComponent('/invite/some-token')}`);
      await stranger.page.waitForURL(`${t.url}/invite/some-token`);
      await stranger.page.getByRole('heading', { name: 'This invite link is not valid' }).waitFor();

      // An invite past its expiry: made through the command bus with a clock eight days back (no route moves time).
      const { id: ownerId, workspace } = (await (await apiOf(owner)).get('/api/users/me')).body;
      const token = `expired-${randomUUID()}`;
      const inviteId = randomUUID();
      const { bus, engine } = t.server.services;
      const made = await bus.execute(
        inviteStreamId(workspace.id, inviteId),
        inviteDecider,
        {
          type: 'CreateInvite',
          inviteId,
          workspaceId: workspace.id,
          email: null,
          role: 'member',
          tokenHash: hashToken(token),
          createdBy: ownerId,
          expiresInDays: 7,
          now: Date.now() - 8 * 86_400_000,
        },
        { ...systemContext, workspaceId: workspace.id },
      );
      await engine.waitFor(made.position, 10_000);
      await stranger.page.goto(`${t.url}/invite/${token}`);
      await stranger.page.getByText(/^This invite expired on /).waitFor();
      assert.equal(await stranger.page.getByRole('button', { name: /^Accept/ }).count(), 0, 'nothing to accept');
      assert.equal(
        (await (await apiOf(owner)).post('/api/invites/accept', { token })).status,
        401,
        'and the server refuses it too',
      );
    });
  });
});
