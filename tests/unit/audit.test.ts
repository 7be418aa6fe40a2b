import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { auditActorName, auditFacts } from '../../domain/audit.js';
import { streams } from '../../domain/streams.js';

/**
 * The audit trail's summaries (docs/events.md, "Audit trail"): each event's sensitive fields are filled with a
 * canary, and no summary may carry one, whatever the event type.
 */
const canary = 'CANARY-5e1f';
const ws = '00000000-0000-4000-8000-000000000001';
const job = 'job-1';

const event = (streamId: string, type: string, data: Record<string, unknown>) => ({
  streamId,
  type,
  data,
  metadata: { workspaceId: ws, v: 1 },
});

const sensitive = [
  event(streams.secret.id('s1'), 'SecretCreated', {
    secretId: 's1',
    workspaceId: ws,
    name: 'KEY',
    sealed: canary,
    createdAt: 1,
  }),
  event(streams.secret.id('s1'), 'SecretValueChanged', { sealed: canary, updatedAt: 2 }),
  event(streams.apiToken.id('t1'), 'ApiTokenCreated', {
    tokenId: 't1',
    workspaceId: ws,
    userId: 'u1',
    name: 'ci',
    tokenHash: canary,
    expiresAt: null,
    createdAt: 1,
  }),
  event(streams.job.id(job), 'JobWebhookTokenSet', { tokenHash: canary, updatedAt: 1 }),
  event(streams.job.id(job), 'JobUpdated', { changes: { instruction: canary }, updatedAt: 1 }),
  event(streams.jobState.id(job), 'JobStateSet', { key: 'k', value: canary, size: 12, keys: 1, bytes: 12 }),
  event(streams.provider.id('p1'), 'ProviderUpdated', { apiKeySealed: canary }),
  event(streams.provider.id('p1'), 'ProviderCreated', {
    providerId: 'p1',
    workspaceId: ws,
    name: 'P',
    kind: 'openai',
    baseUrl: canary,
    apiKeySealed: canary,
    createdAt: 1,
  }),
  event(streams.mcpOauth.id('m1'), 'McpOauthLoggedIn', {
    serverId: 'm1',
    userId: 'u1',
    sealed: canary,
    loggedInAt: 1,
    expiresAt: null,
    refreshable: true,
  }),
  event(streams.mcpOauth.id('m1'), 'McpOauthTokensRefreshed', {
    serverId: 'm1',
    sealed: canary,
    refreshedAt: 1,
    expiresAt: null,
    refreshable: true,
  }),
  event(streams.settings.id(ws), 'SettingsChanged', { changes: { notifyWebhookUrl: canary }, changedAt: 1 }),
];

describe('audit summaries', () => {
  it('never carry a sealed value, token, hash, key, instruction, state value or URL', () => {
    for (const e of sensitive) {
      const facts = auditFacts(e);
      assert.ok(!JSON.stringify(facts ?? {}).includes(canary), `${e.type}: ${JSON.stringify(facts)}`);
    }
  });

  it('say what changed in one line, and which job', () => {
    assert.deepEqual(auditFacts(sensitive[4]!), {
      workspaceId: ws,
      jobId: job,
      summary: 'Changed instruction',
    });
    assert.equal(auditFacts(sensitive[6]!)?.summary, 'Changed provider p1: API key');
    assert.equal(auditFacts(sensitive[8]!)?.summary, 'Logged in to MCP server m1');
    assert.equal(auditFacts(sensitive[9]!), null, 'a token refresh is not a change a person made');
    const long = event(streams.job.id(job), 'JobCreated', {
      jobId: job,
      workspaceId: ws,
      config: { name: `a\nname ${'x'.repeat(300)}` },
      createdAt: 1,
    });
    const summary = auditFacts(long)!.summary;
    assert.ok(!summary.includes('\n') && summary.length < 140, summary);
  });

  it('leave out events of no workspace', () => {
    const orphan = { ...sensitive[0]!, metadata: { workspaceId: null, v: 1 } };
    assert.equal(auditFacts(orphan), null);
    const user = event(streams.user.id('u1'), 'UserSignedIn', { at: 1, provider: 'x', isAdmin: false, name: 'Ann' });
    assert.equal(auditFacts(user), null);
    assert.deepEqual(auditActorName(user), { type: 'user', id: 'u1', name: 'Ann' });
  });
});
