import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../app/config.js';
import pino from 'pino';
import { startServer, type RunningServer } from '../../server/start.js';
import { runtimeDir } from '../../server/runner-role.js';
import { openSqliteEventStore } from '../../store/sqlite-event-store.js';
import { openSqliteDocumentStore, type SqliteDocumentStore } from '../../store/sqlite-document-store.js';
import { openMemoryStores, closeStores } from '../../store/open.js';
import { FileBlobStore } from '../../store/blob-store-files.js';
import { BlobBackedEventStore } from '../../store/blob-store-events.js';
import { allProjectors } from '../../projections/index.js';
import { verifyProjections } from '../../projections/verify.js';
import { Scheduler } from '../../runner/scheduler.js';
import { runStreamId } from '../../domain/run.js';
import { scheduleStreamId } from '../../domain/schedule.js';
import { Client, useSignInLink } from '../api/harness.js';
import { waitFor } from '../wait.js';
import { FaultyEventStore } from './faulty-event-store.js';
import { openSse, type SseReader } from './sse-reader.js';

/*
 * The subscription layer under faults: the real SQLite event store, wrapped so that its subscriptions error and end
 * at chosen points (and repeat the event they resume after), under a whole server with the api, projector, runner
 * and scheduler roles. The projection engine, the runner's cancel watch, the scheduler's wait on the read models and
 * the SSE streams must survive every loss, catch up, and see each event once (docs/design.md, "Failure handling").
 */

const runs = 24;
const main = '#!/bin/sh\necho "done"\n';
const final = new Set(['succeeded', 'failed', 'cancelled', 'timed_out', 'skipped']);

describe('subscriptions under injected faults', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-faults-'));
  let server: RunningServer | null = null;
  const readers: SseReader[] = [];
  after(async () => {
    for (const r of readers) r.close();
    await server?.close();
    rmSync(runtimeDir(dataDir), { recursive: true, force: true });
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('keeps the projection engine, runner, scheduler and SSE streams going, with nothing skipped or twice', async () => {
    // The blob store wraps the adapter as `openStores` does; the faults are injected below it, in the adapter's feed.
    const blobs = new FileBlobStore(dataDir);
    const faulty = new FaultyEventStore(openSqliteEventStore(join(dataDir, 'events.db')), {
      // Errors and plain ends, at once on connecting and after a few events: every kind of loss a server has.
      all: [
        { after: 3, how: 'error' },
        { after: 0, how: 'end' },
        { after: 7, how: 'end' },
        { after: 1, how: 'error' },
        { after: 0, how: 'error' },
        { after: 12, how: 'end' },
      ],
      stream: [
        { after: 2, how: 'end' },
        { after: 0, how: 'error' },
        { after: 1, how: 'error' },
        { after: 4, how: 'end' },
      ],
    });
    const docs: SqliteDocumentStore = openSqliteDocumentStore(join(dataDir, 'read.db'));
    const config = loadConfig(
      { host: '127.0.0.1', port: 0, dataDir },
      { NODE_ENV: 'test', SVC_ROLES: 'api,projector,runner,scheduler' },
    );
    // The product's own log lines, kept: they must say that subscriptions were lost and opened again.
    const warnings: string[] = [];
    const log = pino({ level: 'warn' }, { write: (line: string) => void warnings.push(JSON.parse(line).msg) });
    server = await startServer(config, log, () => {}, {
      events: new BlobBackedEventStore(faulty, blobs),
      docs,
      blobs,
      live: openSqliteDocumentStore(join(dataDir, 'live.db')),
    });
    const s = server.services;
    const admin = new Client(server.url, {
      cookie: await useSignInLink(server.url + (await s.identity.issueSignInLink('admin@example.com'))),
    });
    const cookie = (admin.credential as { cookie: string }).cookie;
    assert.equal((await admin.post('/api/providers', { name: 'Fake', kind: 'fake' })).status, 201);
    const model = (await admin.get('/api/models')).body.items[0];
    assert.equal((await admin.patch('/api/settings', { agentModelId: model.id })).status, 200);
    const made = await admin.post<{ id: string }>('/api/jobs', {
      name: 'Scripted',
      instruction: 'Say done.',
      selfImprove: false,
      concurrency: 'parallel',
    });
    assert.equal(made.status, 201, made.text);
    const job = made.body.id;
    assert.equal((await admin.request('PUT', `/api/jobs/${job}/playbook`, { content: { main } })).status, 200);
    const slow = (
      await admin.post<{ id: string }>('/api/jobs', { name: 'Slow', instruction: 'Wait.', selfImprove: false })
    ).body.id;
    await admin.request('PUT', `/api/jobs/${slow}/playbook`, { content: { main: '#!/bin/sh\nsleep 120\n' } });
    const scheduled = (
      await admin.post<{ id: string }>('/api/jobs', {
        name: 'Scheduled',
        instruction: 'Say done.',
        selfImprove: false,
        concurrency: 'parallel',
        cron: '*/5 * * * *',
        timezone: 'UTC',
      })
    ).body.id;
    await admin.request('PUT', `/api/jobs/${scheduled}/playbook`, { content: { main } });

    // From here every subscription opened breaks by the plan.
    faulty.armed = true;
    const feed = await openSse(`${server.url}/api/events`, { cookie });
    readers.push(feed);

    // A run that is live while its runner's cancel watch keeps losing its connection: the cancel must still arrive.
    const slowRun = (await admin.post<{ runId: string }>(`/api/jobs/${slow}/runs`, {})).body.runId;
    await waitFor(
      'the slow run to run',
      async () => (await admin.get(`/api/runs/${slowRun}`)).body.status === 'running',
      {
        timeoutMs: 60_000,
      },
    );

    const runIds: string[] = [];
    const streams = new Map<string, SseReader>();
    for (let i = 0; i < runs; i++) {
      const answer = await admin.post<{ runId: string }>(`/api/jobs/${job}/runs`, {});
      assert.equal(answer.status, 201, answer.text);
      runIds.push(answer.body.runId);
      // Every third run is followed live from its start.
      if (i % 3 === 0) {
        const r = await openSse(`${server.url}/api/runs/${answer.body.runId}/stream`, { cookie });
        readers.push(r);
        streams.set(answer.body.runId, r);
      }
    }
    assert.equal((await admin.post(`/api/runs/${slowRun}/cancel`)).status < 300, true);

    // Three occurrences of a schedule, fired by a scheduler on a hand-moved clock that waits on the read models.
    let now = 0;
    const scheduler = new Scheduler(s.bus, s.stores.docs, s.engine, s.runs, { error: () => {} }, { now: () => now });
    const occurrences: number[] = [];
    for (let k = 0; k < 3; k++) {
      const next = await waitFor('the next occurrence to be projected', async () => {
        const at = (await admin.get(`/api/jobs/${scheduled}`)).body.nextRunAt as number | null;
        return at !== null && !occurrences.includes(at) && at;
      });
      occurrences.push(next);
      now = next;
      await waitFor(`occurrence ${k + 1} to fire`, async () => (await scheduler.tick()) === 1 || null);
    }

    const ends = await Promise.all(
      [...runIds, slowRun].map((id) =>
        waitFor(
          `run ${id} to end`,
          async () => {
            const status = (await admin.get(`/api/runs/${id}`)).body.status as string;
            return final.has(status) && status;
          },
          { timeoutMs: 120_000, intervalMs: 100 },
        ),
      ),
    );
    assert.deepEqual(ends.slice(0, runs), Array(runs).fill('succeeded'));
    assert.equal(ends[runs], 'cancelled', 'the cancel reached the runner through a broken watch');
    const scheduledRuns = await waitFor('the scheduled runs to end', async () => {
      const list = (await admin.get(`/api/runs?job=${scheduled}`)).body;
      return list.total === 3 && list.items.every((r: { status: string }) => final.has(r.status)) && list.items;
    });
    assert.deepEqual(
      scheduledRuns.map((r: { trigger: string }) => r.trigger),
      ['schedule', 'schedule', 'schedule'],
    );

    // Faults of every kind happened, and the product said so in its log.
    assert.ok(faulty.injected.all.error >= 3 && faulty.injected.all.end >= 3, JSON.stringify(faulty.injected));
    assert.ok(faulty.injected.stream.error >= 3 && faulty.injected.stream.end >= 3, JSON.stringify(faulty.injected));
    assert.ok(faulty.redelivered.all > 0 && faulty.redelivered.stream > 0, JSON.stringify(faulty.redelivered));
    assert.ok(warnings.filter((w) => w.startsWith('event subscription lost')).length >= 12, warnings.join('\n'));
    // System info counts the reopenings and names the last loss, to an instance admin only.
    const seen = (await admin.get('/api/system/info')).body.subscriptions;
    assert.ok(seen.resumed >= 12 && seen.open >= 1, JSON.stringify(seen));
    assert.match(seen.lastError ?? '', /injected|ended while the store is open/);
    const member = new Client(server.url, {
      cookie: await useSignInLink(server.url + (await s.identity.issueSignInLink('member@example.com', false))),
    });
    const byMember = (await member.get('/api/system/info')).body.subscriptions;
    assert.equal(byMember.resumed >= seen.resumed, true, JSON.stringify(byMember));
    assert.equal(byMember.lastError, null, 'a member sees the counts, not the error');

    // Each run was claimed and finished once.
    for (const id of [...runIds, slowRun]) {
      const types = (await faulty.inner.readStream(runStreamId(id))).map((e) => e.type);
      assert.equal(types.filter((t) => t === 'RunClaimed').length, 1, `${id}: ${types.join(',')}`);
      assert.equal(types.filter((t) => t === 'RunFinished').length, 1, `${id}: ${types.join(',')}`);
    }
    const fired = (await faulty.inner.readStream(scheduleStreamId(scheduled))).map(
      (e) => (e.data as { occurrence: number }).occurrence,
    );
    assert.deepEqual(fired, occurrences, 'each occurrence fired once');

    // Run streams: every timeline entry once, in order, then the end with the run's status.
    for (const [id, r] of streams) {
      await waitFor(`the stream of ${id} to end`, () => r.messages().some((m) => m.event === 'end'));
      const seqs = r
        .messages()
        .filter((m) => m.event === 'event')
        .map((m) => Number(m.id));
      const stored = (await s.stores.events.readStream(`timeline-${id}`)).length;
      assert.deepEqual(
        seqs,
        Array.from({ length: stored }, (_, i) => i + 1),
        `${id}: entries once each, in order`,
      );
      assert.deepEqual(JSON.parse(r.messages().find((m) => m.event === 'end')!.data), { status: 'succeeded' });
    }

    // The workspace feed: each run's final status announced exactly once.
    const announced = () =>
      feed
        .messages()
        .filter((m) => m.event === 'run')
        .map((m) => JSON.parse(m.data) as { kind: string; runId: string; status?: string });
    await waitFor('the feed to announce every end', () =>
      [...runIds, slowRun].every((id) => announced().some((m) => m.runId === id && final.has(m.status ?? ''))),
    );
    for (const id of [...runIds, slowRun]) {
      const statuses = announced()
        .filter((m) => m.runId === id && m.kind === 'run')
        .map((m) => m.status);
      assert.equal(new Set(statuses).size, statuses.length, `${id} announced twice: ${statuses.join(',')}`);
    }

    // The engine is healthy at the head of the log, and its read models equal a replay of the log.
    faulty.armed = false;
    const head = await s.stores.events.headPosition();
    assert.equal(await s.engine.waitFor(head, 30_000), true);
    assert.ok(s.engine.status().every((p) => p.healthy));
    for (const r of readers) r.close();
    await server.close();
    server = null;
    const events = openSqliteEventStore(join(dataDir, 'events.db'));
    const live = openSqliteDocumentStore(join(dataDir, 'read.db'));
    const scratch = openMemoryStores();
    try {
      const differences = await verifyProjections(events, live, scratch.docs, allProjectors, {
        error: () => {},
        info: () => {},
      });
      assert.deepEqual(differences, []);
    } finally {
      await events.close();
      await live.close();
      await closeStores(scratch);
    }
  });
});
