import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { waitFor } from '../wait.js';
import { adminSession, Client, createToken, startTestServer, type TestServer } from '../api/harness.js';
import { eachSseMessage, type SseMessage } from '../sse-blocks.js';

/**
 * The "done when": with the embedded defaults and the fake provider, a job whose instruction quotes an svc
 * command runs in a real sandbox, succeeds, shows its output, and its timeline streams live.
 */
export function endToEnd(backend: string, env: Record<string, string>): void {
  let t: TestServer;
  let admin: Client;
  let api: Client;

  before(async () => {
    t = await startTestServer({ SVC_ROLES: 'api,projector,scheduler,runner', ...env });
    admin = await adminSession(t);
    const info = await admin.get('/api/system/info');
    assert.equal(info.body.sandbox?.backend, backend);
    assert.equal(info.body.sandbox?.error, null, `the ${backend} backend is usable`);
    api = (await createToken(admin)).client;
    const provider = await admin.post<{ id: string }>('/api/providers', { name: 'Fake', kind: 'fake' });
    assert.equal(provider.status, 201, provider.text);
    const models = await admin.get<{ items: Array<{ id: string; model: string }> }>('/api/models');
    const fake = models.body.items.find((m) => m.model === 'fake-model');
    assert.ok(fake, 'the fake provider brings its model');
    const settings = await admin.patch('/api/settings', { agentModelId: fake.id });
    assert.equal(settings.status, 200, settings.text);
  });
  after(async () => t?.stop());

  interface Sse {
    events: SseMessage[];
    done: Promise<void>;
  }

  /** Reads a server-sent-event answer to its end, the way `curl -N` shows it. */
  function follow(url: string, cookie: string, headers: Record<string, string> = {}): Sse {
    const events: Sse['events'] = [];
    const done = (async () => {
      const res = await fetch(url, { headers: { cookie, ...headers } });
      assert.equal(res.status, 200);
      await eachSseMessage(res, (m) => events.push(m));
    })();
    return { events, done };
  }

  async function waitFinal(runId: string, timeoutMs = 60_000): Promise<Record<string, unknown>> {
    return waitFor(
      `run ${runId} to end`,
      async () => {
        const run = (await api.get(`/api/runs/${runId}`)).body as Record<string, unknown>;
        return ['succeeded', 'failed', 'cancelled', 'timed_out', 'skipped'].includes(String(run.status)) && run;
      },
      { timeoutMs, intervalMs: 100 },
    );
  }

  describe(`a run end to end (${backend})`, () => {
    it('runs the quoted command in a sandbox, succeeds with its output and streams its timeline', async () => {
      const job = await api.post<{ id: string }>('/api/jobs', {
        name: 'Answer',
        instruction: 'Report the answer with `svc output set answer 42` and finish.',
      });
      assert.equal(job.status, 201, job.text);
      const started = await api.post<{ runId: string; status: string }>(`/api/jobs/${job.body.id}/runs`, {});
      assert.equal(started.body.status, 'queued');
      const cookie = (admin.credential as { cookie: string }).cookie;
      const stream = follow(`${t.url}/api/runs/${started.body.runId}/stream`, cookie);
      await stream.done;
      const run = await waitFinal(started.body.runId);
      assert.equal(run.status, 'succeeded', JSON.stringify(run));
      assert.deepEqual(run.outputs, { answer: 42 });
      assert.equal(run.trigger, 'api');
      assert.ok((run.turns as number) >= 2);
      assert.ok((run.msTotal as number) > 0);

      const kinds = stream.events.map((e) => e.event);
      assert.equal(kinds[kinds.length - 1], 'end');
      assert.deepEqual(stream.events[stream.events.length - 1]!.data, { status: 'succeeded' });
      const timeline = stream.events
        .filter((e) => e.event === 'event')
        .map((e) => e.data as { seq: number; type: string; payload: Record<string, unknown> });
      assert.deepEqual(
        timeline.map((e) => e.seq),
        timeline.map((_, i) => i + 1),
        'every entry once, in order',
      );
      const types = timeline.map((e) => e.type);
      for (const type of [
        'run.status',
        'sandbox.create',
        'llm.call',
        'tool.call',
        'tool.result',
        'broker.call',
        'finish',
        'sandbox.destroy',
      ])
        assert.ok(types.includes(type), `${type} is on the timeline`);
      const statuses = stream.events
        .filter((e) => e.event === 'status')
        .map((e) => (e.data as { status: string }).status);
      assert.deepEqual(statuses, ['provisioning', 'running', 'succeeded']);
      const bash = timeline.find((e) => e.type === 'tool.result')!;
      assert.match(String(bash.payload.content), /^exit code: 0/);

      // The events route gives the same entries, and pages with after.
      const stored = (await api.get(`/api/runs/${started.body.runId}/events`)).body as Array<{ seq: number }>;
      assert.equal(stored.length, timeline.length);
      const page = (await api.get(`/api/runs/${started.body.runId}/events?after=2&limit=2`)).body as Array<{
        seq: number;
      }>;
      assert.deepEqual(
        page.map((e) => e.seq),
        [3, 4],
      );
      // A stream resumed with Last-Event-ID replays only what came after, then ends.
      const resumed = follow(`${t.url}/api/runs/${started.body.runId}/stream`, cookie, {
        'last-event-id': String(timeline.length - 2),
      });
      await resumed.done;
      assert.deepEqual(
        resumed.events.filter((e) => e.event === 'event').map((e) => Number(e.id)),
        [timeline.length - 1, timeline.length],
      );

      const list = (await api.get('/api/jobs')).body.items.find((j: { id: string }) => j.id === job.body.id);
      assert.equal(list.lastRun.status, 'succeeded');
    });

    it('fails a run whose quoted command fails, and keeps artifacts from /svc/outputs', async () => {
      const job = await api.post<{ id: string }>('/api/jobs', {
        name: 'Artifacts',
        instruction: 'Run `mkdir -p /svc/outputs/sub && echo hello > /svc/outputs/sub/a.txt` then `false`.',
      });
      const runId = (await api.post<{ runId: string }>(`/api/jobs/${job.body.id}/runs`, {})).body.runId;
      const run = await waitFinal(runId);
      assert.equal(run.status, 'failed');
      assert.equal(run.error, 'the agent reported failure');
      const artifacts = (await api.get(`/api/runs/${runId}/artifacts`)).body;
      assert.deepEqual(artifacts, [{ name: 'sub/a.txt', size: 6 }]);
      const file = await api.get(`/api/runs/${runId}/artifact?path=sub/a.txt`);
      assert.equal(file.text, 'hello\n');
      assert.match(file.headers.get('content-disposition') ?? '', /filename="a.txt"/);
      assert.equal((await api.get(`/api/runs/${runId}/artifact?path=../../master.key`)).status, 404);
    });

    it('gives mapped secrets to the sandbox as variables and redacts their values from everything stored', async () => {
      const value = 'hunter2-very-secret-value';
      const secret = await api.post<{ id: string }>('/api/secrets', { name: 'API_TOKEN', value });
      assert.equal(secret.status, 201, secret.text);
      const listed = (await api.get('/api/secrets')).body;
      assert.deepEqual(
        Object.keys(listed.items[0]).sort(),
        ['createdAt', 'id', 'name', 'updatedAt'],
        'never the value',
      );
      const job = await api.post<{ id: string }>('/api/jobs', {
        name: 'Secretive',
        instruction: 'Run `echo "token=$MY_TOKEN svc=$SVC_RUN_ID"` then `svc output set leaked "$MY_TOKEN"`.',
      });
      const mapped = await api.request('PUT', `/api/jobs/${job.body.id}/secrets`, [
        { secretId: secret.body.id, envName: 'MY_TOKEN' },
        { secretId: secret.body.id, envName: 'SVC_RUN_ID' },
      ]);
      assert.equal(mapped.status, 200, mapped.text);
      assert.deepEqual(
        mapped.body.map((m: { secretName: string }) => m.secretName),
        ['API_TOKEN', 'API_TOKEN'],
      );
      const dup = await api.request('PUT', `/api/jobs/${job.body.id}/secrets`, [
        { secretId: secret.body.id, envName: 'A' },
        { secretId: secret.body.id, envName: 'A' },
      ]);
      assert.equal(dup.status, 400);
      assert.match(dup.body.fields[0].message, /mapped twice/);
      assert.equal(
        (await api.request('PUT', `/api/jobs/${job.body.id}/secrets`, [{ secretId: 'nope', envName: 'B' }])).status,
        404,
      );
      assert.equal((await api.post('/api/secrets', { name: 'API_TOKEN', value: 'x' })).status, 409);

      const runId = (await api.post<{ runId: string }>(`/api/jobs/${job.body.id}/runs`, {})).body.runId;
      const run = await waitFinal(runId);
      assert.equal(run.status, 'succeeded', JSON.stringify(run));
      assert.deepEqual(run.outputs, { leaked: '[redacted]' });
      assert.ok(!JSON.stringify(run).includes(value));
      const events = JSON.stringify((await api.get(`/api/runs/${runId}/events`)).body);
      assert.ok(events.includes('token=[redacted]'), 'the command saw the value; the timeline shows it redacted');
      assert.ok(events.includes(`svc=${runId}`), 'a mapping onto SVC_* is dropped');
      assert.ok(!events.includes(value));
      for (const file of readdirSync(t.dataDir)) {
        const full = join(t.dataDir, file);
        if (statSync(full).isFile())
          assert.ok(!readFileSync(full).includes(value), `${file} holds the secret in plain text`);
      }
    });

    it('answers svc llm from the workspace model through the broker, and records the call', async () => {
      const job = await api.post<{ id: string }>('/api/jobs', {
        name: 'Asks',
        instruction: 'Run `svc llm --max-tokens 50 "Say hi" > /svc/outputs/answer.txt && svc state set asked yes`.',
      });
      const runId = (await api.post<{ runId: string }>(`/api/jobs/${job.body.id}/runs`, {})).body.runId;
      const run = await waitFinal(runId);
      assert.equal(run.status, 'succeeded', JSON.stringify(run));
      assert.equal((await api.get(`/api/runs/${runId}/artifact?path=answer.txt`)).text, 'Done.\n');
      assert.equal((await api.get(`/api/jobs/${job.body.id}/state/asked`)).body.value, 'yes');
      const events = (await api.get(`/api/runs/${runId}/events`)).body as Array<{
        type: string;
        payload: Record<string, unknown>;
      }>;
      const llm = events.find((e) => e.type === 'broker.call' && e.payload.endpoint === 'POST /v1/llm');
      assert.ok(llm, 'the llm call is on the timeline');
      assert.equal(llm.payload.model, 'fake-model');
      assert.ok(events.some((e) => e.type === 'broker.call' && e.payload.endpoint === 'PUT /v1/state/asked'));
    });

    it('cancels a running run within seconds', async () => {
      const job = await api.post<{ id: string }>('/api/jobs', { name: 'Slow', instruction: 'Wait: `sleep 60`' });
      const runId = (await api.post<{ runId: string }>(`/api/jobs/${job.body.id}/runs`, {})).body.runId;
      await waitFor(
        'the run to be running',
        async () => (await api.get(`/api/runs/${runId}`)).body.status === 'running',
        { timeoutMs: 60_000, intervalMs: 50 },
      );
      const asked = Date.now();
      assert.equal((await api.post(`/api/runs/${runId}/cancel`)).status, 200);
      const run = await waitFinal(runId, 10_000);
      assert.equal(run.status, 'cancelled');
      assert.ok(Date.now() - asked < 5000, 'stopped within seconds');
    });
  });
}
