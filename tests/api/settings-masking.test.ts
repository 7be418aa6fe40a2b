import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { maskedWebhookUrl } from '../../api/routes/settings.js';
import { adminSession, Client, createToken, startTestServer, userSession, type TestServer } from './harness.js';

/**
 * The notification webhook URL carries its credential in its path or query: members see only its origin, admins
 * and the owner see it whole, whatever credential they call with (docs/design.md "Notifications").
 */
let t: TestServer;
let admin: Client;
let member: { client: Client; userId: string };
const hook = 'https://hooks.example.test/services/T0001/B0002/s3cr3tHookKey?token=abc#frag';

before(async () => {
  t = await startTestServer({ SVC_ROLES: 'api,projector' });
  admin = await adminSession(t);
  member = await userSession(t, admin, 'masked-member@example.com');
  const saved = await admin.patch('/api/settings', { notifyWebhookUrl: hook });
  assert.equal(saved.status, 200, saved.text);
  assert.equal(saved.body.notifyWebhookUrl, hook, 'the admin who saves it sees it whole');
});
after(async () => t?.stop());

describe('settings: webhook URL masking', () => {
  it('shows members the origin only, by session and by API token', async () => {
    const token = await createToken(member.client, 'member token');
    for (const client of [member.client, token.client]) {
      const res = await client.get('/api/settings');
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.notifyWebhookUrl, 'https://hooks.example.test/…');
      assert.ok(!res.text.includes('s3cr3tHookKey') && !res.text.includes('token=abc'), res.text);
    }
  });

  it('shows admins the whole URL, by session and by API token', async () => {
    const token = await createToken(admin, 'admin token');
    for (const client of [admin, token.client])
      assert.equal((await client.get('/api/settings')).body.notifyWebhookUrl, hook);
  });

  it('follows the role: a member made admin sees it whole, made member again sees it masked', async () => {
    const other = await userSession(t, admin, 'promoted@example.com');
    assert.equal((await other.client.get('/api/settings')).body.notifyWebhookUrl, 'https://hooks.example.test/…');
    assert.equal((await admin.patch(`/api/workspace/members/${other.userId}`, { role: 'admin' })).status, 200);
    assert.equal((await other.client.get('/api/settings')).body.notifyWebhookUrl, hook);
    assert.equal((await admin.patch(`/api/workspace/members/${other.userId}`, { role: 'member' })).status, 200);
    assert.equal((await other.client.get('/api/settings')).body.notifyWebhookUrl, 'https://hooks.example.test/…');
  });

  it('gives members no other way to the URL: no change, no test send', async () => {
    assert.equal(
      (await member.client.patch('/api/settings', { notifyWebhookUrl: 'https://other.example.test/' })).status,
      403,
    );
    assert.equal((await member.client.post('/api/settings/notifications/test', {})).status, 403);
    assert.equal((await admin.get('/api/settings')).body.notifyWebhookUrl, hook, 'unchanged');
  });

  it('masks user info, ports and odd URLs to the origin, never more', () => {
    assert.equal(
      maskedWebhookUrl('https://user:pass@hooks.example.test:8443/a/b?c=d'),
      'https://hooks.example.test:8443/…',
    );
    assert.equal(maskedWebhookUrl('http://hooks.example.test'), 'http://hooks.example.test/…');
    assert.equal(maskedWebhookUrl('not a url'), '…');
    assert.equal(maskedWebhookUrl('data:text/plain,secret'), '…');
  });

  it('answers null to members when notifications are off', async () => {
    assert.equal((await admin.patch('/api/settings', { notifyWebhookUrl: '' })).status, 200);
    assert.equal((await member.client.get('/api/settings')).body.notifyWebhookUrl, null);
    assert.equal((await admin.patch('/api/settings', { notifyWebhookUrl: hook })).status, 200);
  });
});
