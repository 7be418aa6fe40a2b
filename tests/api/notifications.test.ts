import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { lookup } from 'node:dns/promises';
import { hostname } from 'node:os';
import {
  fitMessage,
  messageByteLimit,
  notificationBody,
  slackEscape,
  triggersFor,
  type NotifiedRun,
} from '../../domain/notification.js';
import { notificationStreamId } from '../../domain/notification-stream.js';
import type { NotificationBody } from '../../schemas/notification.js';
import { defaultWorkspaceId } from '../../domain/workspace.js';
import { waitFor } from '../wait.js';
import {
  adminSession,
  finishedRun,
  serverWithFakeModel,
  startTestServer,
  userSession,
  type Client,
  type TestServer,
} from './harness.js';

/**
 * Run notifications (docs/design.md, "Notifications") end to end: real runs on the fake model, delivered by the
 * runner's notifier to a real HTTP receiver on loopback (which the private-target switch allows), through the public
 * API only.
 */
process.env.SVC_ALLOW_PRIVATE_NETWORK_TARGETS = 'true';

interface Received {
  headers: IncomingHttpHeaders;
  raw: string;
  body: NotificationBody;
  answered: number;
}

/** A webhook receiver: records every POST and answers the statuses queued in `answers`, then 200. */
class Receiver {
  readonly received: Received[] = [];
  answers: number[] = [];
  private server: Server | null = null;
  url = '';

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      let raw = '';
      req.setEncoding('utf8');
      req.on('data', (chunk: string) => (raw += chunk));
      req.on('end', () => {
        const answered = this.answers.shift() ?? 200;
        this.received.push({ headers: req.headers, raw, body: JSON.parse(raw) as NotificationBody, answered });
        res
          .writeHead(answered, { 'content-type': 'text/plain' })
          .end(answered < 300 ? 'ok' : `refused with ${answered}`);
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hook`;
  }

  forRun(runId: string): Received[] {
    return this.received.filter((r) => r.body.run?.id === runId);
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }
}

const server = serverWithFakeModel();
const receiver = new Receiver();
let member: Client;
let slowRun: { runId: string; jobName: string };

/** The events on the run's notification stream, in order. */
type StreamEntry = { type: string; data: { events?: string[]; error?: string; retryAt?: number | null } };
async function streamOf(runId: string): Promise<StreamEntry[]> {
  const events = await server.t.server.services.stores.events.readStream(notificationStreamId(runId));
  return events.map((e) => ({ type: e.type, data: e.data as StreamEntry['data'] }));
}

async function startRun(
  instruction: string,
  fields: Record<string, unknown> = {},
): Promise<{ runId: string; jobName: string }> {
  const jobName = `notify ${Math.random().toString(36).slice(2, 8)}`;
  const job = await server.api.post('/api/jobs', { name: jobName, instruction, selfImprove: false, ...fields });
  assert.equal(job.status, 201, job.text);
  const run = await server.api.post(`/api/jobs/${job.body.id}/runs`, {});
  assert.equal(run.status, 201, run.text);
  return { runId: run.body.runId as string, jobName };
}

const sign = (key: string, raw: string) => `sha256=${createHmac('sha256', key).update(raw).digest('hex')}`;

describe('notifications', () => {
  before(async () => {
    await receiver.start();
    member = (await userSession(server.t, server.api, 'notify-member@example.com')).client;
    assert.equal(
      (await server.api.post('/api/secrets', { name: 'HOOK_KEY', value: 'webhook-signing-key' })).status,
      201,
    );
    const saved = await server.api.patch('/api/settings', { notifyWebhookUrl: receiver.url, notifySecret: 'HOOK_KEY' });
    assert.equal(saved.status, 200, saved.text);
    assert.deepEqual(saved.body.notifyOn, ['run.failed', 'job.demoted'], 'the default triggers');
    // Started first: it needs its whole time limit (30 s at least) to time out, while the other cases go on.
    slowRun = await startRun('Wait with `sleep 120`.', { limits: { timeoutSeconds: 30 } });
  });
  after(async () => receiver.stop());

  describe('run notifications', () => {
    it('posts run.failed once for a failed run, signed with the secret, with the body and message docs/design.md names', async () => {
      const { runId, jobName } = await startRun('Fail with `exit 3`.');
      const { run } = await finishedRun(server.api, runId);
      assert.equal(run.status, 'failed');
      const [got] = await waitFor(
        'the notification',
        () => receiver.forRun(runId).length > 0 && receiver.forRun(runId),
      );
      const url = `${server.t.url}/runs/${runId}?workspace=${defaultWorkspaceId}`;

      assert.equal(got!.headers['content-type'], 'application/json');
      assert.match(String(got!.headers['user-agent']), /^svc\/\S+$/);
      assert.equal(got!.headers['x-svc-event'], 'run.failed');
      assert.equal(
        got!.headers['x-svc-signature'],
        sign('webhook-signing-key', got!.raw),
        'HMAC-SHA256 of the exact body',
      );
      assert.deepEqual(Object.keys(got!.body).sort(), [
        'allowed_mentions',
        'content',
        'event',
        'job',
        'run',
        'text',
        'timestamp',
      ]);
      assert.equal(got!.body.event, 'run.failed');
      assert.equal(got!.body.content, `svc: ${jobName} run #1 failed: ${run.error}\n${url}`);
      assert.equal(got!.body.text, got!.body.content, 'nothing to escape here');
      assert.deepEqual(got!.body.job, { id: run.jobId, name: jobName });
      assert.deepEqual(got!.body.run, {
        id: runId,
        number: 1,
        status: 'failed',
        mode: run.mode,
        trigger: 'manual',
        fellBack: false,
        error: run.error,
        url,
      });
      assert.equal(got!.body.timestamp, new Date(run.finishedAt).toISOString());
      assert.deepEqual(got!.body.allowed_mentions, { parse: [] });

      await waitFor('the delivery to be recorded', async () =>
        (await streamOf(runId)).some((e) => e.type === 'NotificationDelivered'),
      );
      // Every post is preceded by an attempt appended to the stream, and a delivered notification takes no new
      // attempt (docs/design.md, "Notifications"): one attempt on the stream is "sent once", with no wait needed.
      assert.equal(receiver.forRun(runId).length, 1, 'sent once');
      assert.deepEqual(
        (await streamOf(runId)).map((e) => e.type),
        ['NotificationQueued', 'RunNotificationsChecked', 'NotificationAttemptStarted', 'NotificationDelivered'],
      );
    });

    it('posts run.fell_back for a scripted run that fell back, and job.demoted once the job is demoted', async () => {
      assert.equal(
        (await server.api.patch('/api/settings', { notifyOn: ['run.fell_back', 'job.demoted'] })).status,
        200,
      );
      try {
        const job = await server.api.post('/api/jobs', {
          name: `fallback ${Math.random().toString(36).slice(2, 8)}`,
          instruction: 'Report it with `svc output set answer 42`.',
          selfImprove: false,
        });
        assert.equal(
          (
            await server.api.request('PUT', `/api/jobs/${job.body.id}/playbook`, {
              content: { main: '#!/bin/sh\nexit 3\n' },
            })
          ).status,
          200,
        );
        await server.api.post(`/api/providers/${server.providerId}/script`, { responses: [], reset: true });
        const runs: string[] = [];
        for (let i = 0; i < 2; i++) {
          const runId = (await server.api.post(`/api/jobs/${job.body.id}/runs`, {})).body.runId as string;
          const { run } = await finishedRun(server.api, runId);
          assert.equal(run.fellBack, true);
          runs.push(runId);
        }
        const first = await waitFor(
          "the first run's notification",
          () => receiver.forRun(runs[0]!).length > 0 && receiver.forRun(runs[0]!),
        );
        assert.deepEqual(
          first.map((r) => r.body.event),
          ['run.fell_back'],
        );
        const second = await waitFor(
          "the second run's notifications",
          () => receiver.forRun(runs[1]!).length > 1 && receiver.forRun(runs[1]!),
        );
        assert.deepEqual(second.map((r) => r.body.event).sort(), ['job.demoted', 'run.fell_back']);
        assert.equal(second.find((r) => r.body.event === 'job.demoted')!.headers['x-svc-event'], 'job.demoted');
      } finally {
        await server.api.patch('/api/settings', { notifyOn: ['run.failed', 'job.demoted'] });
      }
    });

    it('sends only the events listed in notifyOn', async () => {
      assert.equal((await server.api.patch('/api/settings', { notifyOn: ['run.fell_back'] })).status, 200);
      try {
        const { runId } = await startRun('Fail with `exit 3`.');
        await finishedRun(server.api, runId);
        const checked = await waitFor('the trigger check', async () =>
          (await streamOf(runId)).find((e) => e.type === 'RunNotificationsChecked'),
        );
        assert.deepEqual(checked.data.events, [], 'a failure is not listed, so nothing is queued');
        // Nothing queued means nothing can be attempted: the stream holds the check alone, and nothing was posted.
        assert.deepEqual(
          (await streamOf(runId)).map((e) => e.type),
          ['RunNotificationsChecked'],
        );
        assert.equal(receiver.forRun(runId).length, 0);
      } finally {
        await server.api.patch('/api/settings', { notifyOn: ['run.failed', 'job.demoted'] });
      }
    });

    it('retries a 503 and delivers on the next attempt, once', async () => {
      receiver.answers = [503];
      const { runId } = await startRun('Fail with `exit 3`.');
      await finishedRun(server.api, runId);
      const got = await waitFor(
        'the second attempt',
        () => receiver.forRun(runId).length >= 2 && receiver.forRun(runId),
      );
      assert.deepEqual(
        got.map((r) => r.answered),
        [503, 200],
      );
      assert.equal(got[0]!.raw, got[1]!.raw, 'the same body both times');
      await waitFor('the delivery to be recorded', async () =>
        (await streamOf(runId)).some((e) => e.type === 'NotificationDelivered'),
      );
      const failed = (await streamOf(runId)).find((e) => e.type === 'NotificationAttemptFailed')!;
      assert.match(String(failed.data.error), /HTTP 503: refused with 503/);
      assert.ok(typeof failed.data.retryAt === 'number', 'a retry was planned');
      // A delivered notification takes no further attempt: two attempts on the stream, two posts, and no more.
      assert.deepEqual(
        (await streamOf(runId)).map((e) => e.type),
        [
          'NotificationQueued',
          'RunNotificationsChecked',
          'NotificationAttemptStarted',
          'NotificationAttemptFailed',
          'NotificationAttemptStarted',
          'NotificationDelivered',
        ],
      );
      assert.equal(receiver.forRun(runId).length, 2, 'nothing more after the delivery');
    });

    it('gives up at once on a 400', async () => {
      receiver.answers = [400];
      const { runId } = await startRun('Fail with `exit 3`.');
      await finishedRun(server.api, runId);
      const failed = await waitFor('the failed attempt', async () =>
        (await streamOf(runId)).find((e) => e.type === 'NotificationAttemptFailed'),
      );
      assert.equal(failed.data.retryAt, null, 'permanent');
      assert.match(String(failed.data.error), /HTTP 400/);
      // With no retryAt the notification is given up and takes no new attempt, so the failed attempt is the last
      // event of its stream rather than something a wait longer than the first retry delay could only suggest.
      assert.deepEqual(
        (await streamOf(runId)).map((e) => e.type),
        ['NotificationQueued', 'RunNotificationsChecked', 'NotificationAttemptStarted', 'NotificationAttemptFailed'],
      );
      assert.equal(receiver.forRun(runId).length, 1, 'not retried');
    });

    it('keeps secret values out of the body: the run error is stored redacted', async () => {
      assert.equal(
        (await server.api.post('/api/secrets', { name: 'LEAKY', value: 'hunter2-very-secret-value' })).status,
        201,
      );
      const pushed = await server.api.post(`/api/providers/${server.providerId}/script`, {
        responses: [{ error: 'key hunter2-very-secret-value was refused', errorStatus: 401 }],
        reset: true,
      });
      assert.equal(pushed.status, 200, pushed.text);
      const { runId } = await startRun('Anything.');
      const { run } = await finishedRun(server.api, runId);
      assert.equal(run.status, 'failed');
      assert.match(run.error, /\[redacted\]/);
      const [got] = await waitFor(
        'the notification',
        () => receiver.forRun(runId).length > 0 && receiver.forRun(runId),
      );
      assert.ok(!got!.raw.includes('hunter2-very-secret-value'), got!.raw);
      assert.match(String(got!.body.run?.error), /key \[redacted\] was refused/);
      assert.match(got!.body.text, /key \[redacted\] was refused/);
    });

    it('posts run.failed for a timed-out run, worded "timed out"', async () => {
      const { run } = await finishedRun(server.api, slowRun.runId);
      assert.equal(run.status, 'timed_out');
      const [got] = await waitFor(
        'the notification',
        () => receiver.forRun(slowRun.runId).length > 0 && receiver.forRun(slowRun.runId),
      );
      assert.equal(got!.body.event, 'run.failed');
      assert.equal(got!.body.run?.status, 'timed_out');
      assert.ok(
        got!.body.content.startsWith(`svc: ${slowRun.jobName} run #1 timed out: ${run.error}\n`),
        got!.body.content,
      );
    });
  });

  describe('POST /api/settings/notifications/test', () => {
    it('sends a signed test notification and answers what the webhook said', async () => {
      const before = receiver.received.length;
      const res = await server.api.post('/api/settings/notifications/test');
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.delivered, true);
      assert.equal(res.body.status, 200);
      const got = receiver.received[before]!;
      assert.equal(got.headers['x-svc-event'], 'test');
      assert.equal(got.headers['x-svc-signature'], sign('webhook-signing-key', got.raw));
      assert.equal(got.body.event, 'test');
      assert.equal(got.body.job, null);
      assert.deepEqual(got.body, res.body.body);
    });

    it('answers 502 when the webhook refuses, and the refusal is not retried', async () => {
      receiver.answers = [500];
      const before = receiver.received.length;
      const res = await server.api.post('/api/settings/notifications/test');
      assert.equal(res.status, 502);
      assert.equal(res.body.code, 'webhook_error');
      assert.match(
        res.body.message,
        /^The webhook did not accept the notification: the webhook answered HTTP 500: refused with 500$/,
      );
      assert.equal(receiver.received.length, before + 1);
    });

    it('answers 502 when the signing secret is gone', async () => {
      const secrets = (await server.api.get('/api/secrets')).body.items as Array<{ id: string; name: string }>;
      const key = secrets.find((s) => s.name === 'HOOK_KEY')!;
      assert.equal((await server.api.delete(`/api/secrets/${key.id}`)).status, 204);
      try {
        const res = await server.api.post('/api/settings/notifications/test');
        assert.equal(res.status, 502);
        assert.match(res.body.message, /signing secret HOOK_KEY cannot be read/);
      } finally {
        assert.equal(
          (await server.api.post('/api/secrets', { name: 'HOOK_KEY', value: 'webhook-signing-key' })).status,
          201,
        );
      }
    });

    it('is for admins only', async () => {
      const res = await member.post('/api/settings/notifications/test');
      assert.equal(res.status, 403);
      assert.equal(res.body.code, 'forbidden');
    });

    it('answers 400 on notifyWebhookUrl without a URL', async () => {
      assert.equal((await server.api.patch('/api/settings', { notifyWebhookUrl: '' })).body.notifyWebhookUrl, null);
      try {
        const res = await server.api.post('/api/settings/notifications/test');
        assert.equal(res.status, 400);
        assert.equal(res.body.code, 'validation_failed');
        assert.equal(res.body.fields[0].field, 'notifyWebhookUrl');
      } finally {
        await server.api.patch('/api/settings', { notifyWebhookUrl: receiver.url });
      }
    });
  });

  describe('the webhook URL and the egress guard', () => {
    it('refuses link-local and metadata addresses at save, even with private targets allowed', async () => {
      for (const url of [
        'http://169.254.169.254/latest/meta-data',
        'http://[fe80::1]/hook',
        'http://0.0.0.0:8080/hook',
      ]) {
        const res = await server.api.patch('/api/settings', { notifyWebhookUrl: url });
        assert.equal(res.status, 400, url);
        assert.equal(res.body.fields[0].field, 'notifyWebhookUrl');
        assert.match(res.body.fields[0].message, /does not connect to/);
      }
      assert.equal((await server.api.get('/api/settings')).body.notifyWebhookUrl, receiver.url, 'nothing changed');
    });

    describe('without SVC_ALLOW_PRIVATE_NETWORK_TARGETS', () => {
      let guarded: TestServer;
      let admin: Client;
      before(async () => {
        // The switch is read when a server starts: this one starts with it off, the suite's server keeps it on.
        process.env.SVC_ALLOW_PRIVATE_NETWORK_TARGETS = 'false';
        try {
          guarded = await startTestServer({ SVC_ROLES: 'api,projector' });
        } finally {
          process.env.SVC_ALLOW_PRIVATE_NETWORK_TARGETS = 'true';
        }
        admin = await adminSession(guarded);
      });
      after(async () => guarded?.stop());

      it('refuses loopback and private addresses at save, and takes names', async () => {
        for (const url of [
          receiver.url,
          'http://localhost:9/hook',
          'http://[::1]/hook',
          'http://10.1.2.3/hook',
          'http://192.168.0.10/hook',
        ]) {
          const res = await admin.patch('/api/settings', { notifyWebhookUrl: url });
          assert.equal(res.status, 400, url);
          assert.equal(res.body.fields[0].code, 'not_allowed');
          assert.match(res.body.fields[0].message, /SVC_ALLOW_PRIVATE_NETWORK_TARGETS=true/);
        }
        assert.equal(
          (await admin.patch('/api/settings', { notifyWebhookUrl: 'https://hooks.example.com/T1' })).status,
          200,
          'a name is judged when it is dialled',
        );
      });

      it('refuses, when dialling, a name that resolves to loopback', async (t) => {
        const name = hostname().toLowerCase();
        const resolved = await lookup(name).catch(() => null);
        if (!resolved || !resolved.address.startsWith('127.'))
          return t.skip(`${name} does not resolve to a loopback address here`);
        const port = new URL(receiver.url).port;
        assert.equal(
          (await admin.patch('/api/settings', { notifyWebhookUrl: `http://${name}:${port}/hook` })).status,
          200,
        );
        const before = receiver.received.length;
        const res = await admin.post('/api/settings/notifications/test');
        assert.equal(res.status, 502);
        assert.match(res.body.message, /^The webhook did not accept the notification: .*does not connect to/);
        assert.equal(receiver.received.length, before, 'nothing reached the receiver');
      });
    });
  });
});

describe('notification messages', () => {
  const run: NotifiedRun = {
    id: 'r1',
    workspaceId: 'w1',
    jobId: 'j1',
    jobName: 'Backup <prod> & co',
    number: 7,
    status: 'failed',
    mode: 'scripted',
    trigger: 'schedule',
    fellBack: true,
    error: 'disk full',
    fallbackReason: 'main exited 2',
    finishedAt: Date.UTC(2025, 0, 2, 3, 4, 5),
  };

  it('raises run.failed, run.fell_back and job.demoted each only when listed, job.demoted only after a fallback', () => {
    const all = {
      notifyWebhookUrl: 'https://hooks.example.com/x',
      notifyOn: ['run.failed', 'run.fell_back', 'job.demoted'] as const,
    };
    assert.deepEqual(triggersFor({ status: 'failed', fellBack: true, demotedAfter: true }, all), [
      'run.failed',
      'run.fell_back',
      'job.demoted',
    ]);
    assert.deepEqual(
      triggersFor({ status: 'timed_out', fellBack: false, demotedAfter: true }, all),
      ['run.failed'],
      'demotion is looked at only after a fallback',
    );
    assert.deepEqual(triggersFor({ status: 'succeeded', fellBack: true, demotedAfter: false }, all), ['run.fell_back']);
    assert.deepEqual(triggersFor({ status: 'cancelled', fellBack: false, demotedAfter: false }, all), []);
    assert.deepEqual(
      triggersFor({ status: 'failed', fellBack: true, demotedAfter: true }, { ...all, notifyWebhookUrl: null }),
      [],
      'no URL, nothing',
    );
  });

  it('escapes &<> for Slack only, and cuts long messages to 2000 bytes with an ellipsis, keeping the link', () => {
    const body = notificationBody('run.fell_back', run, 'https://svc.example.com/');
    assert.equal(
      body.content,
      'svc: Backup <prod> & co run #7 fell back to the agent: its main script fell short (main exited 2)\nhttps://svc.example.com/runs/r1?workspace=w1',
    );
    assert.equal(body.text, slackEscape(body.content));
    assert.ok(body.text.includes('Backup &lt;prod&gt; &amp; co'));
    assert.equal(body.timestamp, '2025-01-02T03:04:05.000Z');

    const long = notificationBody('run.failed', { ...run, error: `${'é<'.repeat(1500)}` }, 'https://svc.example.com');
    for (const text of [long.text, long.content]) {
      assert.ok(Buffer.byteLength(text) <= messageByteLimit, `${Buffer.byteLength(text)} bytes`);
      assert.ok(Buffer.byteLength(text) > messageByteLimit - 10, 'cut close to the limit');
      assert.ok(text.endsWith('…\nhttps://svc.example.com/runs/r1?workspace=w1'), text.slice(-80));
    }
    assert.ok(!/&(a|am|l|lt)?…/.test(long.text), 'an escape is never cut in half');
    assert.equal(fitMessage('short', '\nlink', 2000), 'short\nlink');
  });
});
