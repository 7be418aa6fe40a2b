import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { liveDeltas } from '../../app/timeline.js';
import { waitFor } from '../wait.js';
import { Client, spawnServer, startTestServer, useSignInLink, type TestServer } from './harness.js';
import { eachSseMessage } from '../sse-blocks.js';

/**
 * Live deltas across replicas (docs/design.md, "Live deltas across replicas"): two real processes on one data
 * directory, an api-only `svc serve` and this test's process with the projector and runner roles. A client of the
 * api process follows a run the other process executes and sees its output as `delta` messages while the run is
 * live, before its end.
 */
const dataDir = mkdtempSync(join(tmpdir(), 'svc-live-deltas-'));
let runner: TestServer;
let apiChild: ChildProcess;
let apiUrl = '';
let admin: Client;
let cookie = '';

before(async () => {
  runner = await startTestServer({ SVC_ROLES: 'projector,runner,scheduler' }, dataDir);
  const spawned = await spawnServer(dataDir, ['--roles', 'api']);
  apiChild = spawned.child;
  apiUrl = spawned.url;
  cookie = await useSignInLink(apiUrl + (await runner.server.services.identity.issueSignInLink('admin@example.com')));
  admin = new Client(apiUrl, { cookie });
  const provider = await admin.post<{ id: string }>('/api/providers', { name: 'Fake', kind: 'fake' });
  assert.equal(provider.status, 201, provider.text);
  const model = await waitFor('the fake model to be listed by the api process', async () => {
    const models = await admin.get<{ items: Array<{ id: string; model: string }> }>('/api/models');
    return models.body.items?.find((m) => m.model === 'fake-model');
  });
  assert.equal((await admin.patch('/api/settings', { agentModelId: model.id })).status, 200);
});

after(async () => {
  if (apiChild && apiChild.exitCode === null) {
    const exited = new Promise((resolve) => apiChild.once('exit', resolve));
    apiChild.kill('SIGTERM');
    await exited;
  }
  await runner?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

interface Message {
  event: string;
  data: unknown;
  /** performance.now() when it arrived. */
  at: number;
}

/** Reads a server-sent-event answer to its end, keeping each message as it comes. */
async function follow(url: string, seen: Message[]): Promise<void> {
  const res = await fetch(url, { headers: { cookie } });
  assert.equal(res.status, 200);
  await eachSseMessage(res, (m) => seen.push({ event: m.event, data: m.data, at: performance.now() }));
}

describe('live deltas across replicas', () => {
  it("reach a client of an api-only process from the runner process's sandbox, while the run is live", async () => {
    const marker = `delta-marker-${Math.random().toString(36).slice(2)}`;
    const job = await admin.post<{ id: string }>('/api/jobs', {
      name: 'Talks',
      // The command waits for a state key the test sets once its client follows the run: live deltas are not kept,
      // so output made before the client connected would never reach it.
      instruction: `Say it with \`until svc state get go >/dev/null 2>&1; do sleep 0.05; done; echo ${marker}\` and finish.`,
    });
    assert.equal(job.status, 201, job.text);
    const run = await admin.post<{ runId: string }>(`/api/jobs/${job.body.id}/runs`, {});
    assert.equal(run.status, 201, run.text);
    const seen: Message[] = [];
    // The runner role runs in this process: when its sandbox's output was made, to print the delay to the client.
    let madeAt: number | null = null;
    const made = liveDeltas.subscribe((d) => {
      if (d.runId === run.body.runId && d.delta.type === 'tool_output' && d.delta.text.includes(marker))
        madeAt ??= performance.now();
    });
    const followed = follow(`${apiUrl}/api/runs/${run.body.runId}/stream`, seen);
    followed.catch(() => undefined); // awaited below; a failure is reported there
    await waitFor('the stream to answer its first message', () => seen.length > 0);
    const go = await admin.request('PUT', `/api/jobs/${job.body.id}/state/go`, { value: '1' });
    assert.equal(go.status, 200, go.text);
    await followed;
    made.unsubscribe();

    const kinds = seen.map((m) => m.event);
    assert.equal(kinds.at(-1), 'end');
    assert.deepEqual(seen.at(-1)!.data, { status: 'succeeded' });
    const deltas = seen
      .map((m, i) => ({ ...m, i }))
      .filter((m) => m.event === 'delta')
      .map((m) => ({ i: m.i, delta: m.data as { type: string; callId?: string; text: string } }));
    const output = deltas.filter((d) => d.delta.type === 'tool_output' && d.delta.text.includes(marker));
    // Before the stream's end, though the run ends right after the command: the runner shares a run's output before
    // recording its end, and the stream reads what was shared before it ends. Across processes the output may follow
    // the final status message (batching and polling, docs/design.md, "Live deltas across replicas"), never the end.
    assert.ok(output.length > 0, `the command's output came live: ${JSON.stringify(kinds)}`);
    // Each batch once: the output is not repeated.
    const arrived = seen[output[0]!.i]!.at;
    if (madeAt !== null)
      console.log(`[live deltas] runner process to a client of the api process: ${Math.round(arrived - madeAt)} ms`);
    const outputText = deltas
      .filter((d) => d.delta.type === 'tool_output')
      .map((d) => d.delta.text)
      .join('');
    assert.equal(outputText.split(marker).length - 1, 1, `once: ${outputText}`);
  });
});
