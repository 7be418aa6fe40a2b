import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RunFiles } from '../../adapters/run-files.js';
import { CommandBus, type CommandContext } from '../../app/commands.js';
import { JobQueries } from '../../app/queries/jobs.js';
import { StatsQueries } from '../../app/queries/stats.js';
import { StatsBucketCache } from '../../app/queries/stats-buckets.js';
import { RunDeletion } from '../../app/run-deletion.js';
import type { RunStatus } from '../../domain/job-types.js';
import { emptyOutcome, runDecider, runStreamId } from '../../domain/run.js';
import type { OverviewRange } from '../../domain/stats.js';
import { ProjectionEngine } from '../../projections/engine.js';
import { allProjectors } from '../../projections/index.js';
import { ReadCache } from '../../projections/read-cache.js';
import { FileBlobStore } from '../../store/blob-store-files.js';
import { openSqliteDocumentStore } from '../../store/sqlite-document-store.js';
import { openSqliteEventStore } from '../../store/sqlite-event-store.js';
import { manualPlan } from '../run-plan.js';

/**
 * The overview's bucket cache (docs/design.md, "Stats"): a process that does not project (another replica, here a
 * second handle on the read model's database) keeps parsed buckets between requests, and after every kind of change
 * another process projects (a run today, a run of an earlier day finishing late, a reflection, a deletion) answers
 * exactly what a request with nothing cached answers.
 */
const hourMs = 3_600_000;
const dayMs = 24 * hourMs;
const now = Date.UTC(2026, 0, 10, 12, 30);
const quiet = { error: () => {}, info: () => {} };
const dir = mkdtempSync(join(tmpdir(), 'svc-stats-cache-'));
const events = openSqliteEventStore(join(dir, 'events.db'));
const projected = openSqliteDocumentStore(join(dir, 'read.db'));
const engine = new ProjectionEngine(events, projected, allProjectors, quiet);
const bus = new CommandBus(events, () => now);
const ctx: CommandContext = { workspaceId: 'w1', actor: { type: 'system', id: null }, requestId: null };
const admin: CommandContext = { workspaceId: 'w1', actor: { type: 'user', id: 'u-admin' }, requestId: null };
/** The replica: its own handle on the read model, its own cache, no engine. */
const replica = openSqliteDocumentStore(join(dir, 'read.db'));
const cache = new StatsBucketCache();
const ranges: OverviewRange[] = ['24h', '7d', '30d', '90d'];
let counter = 0;

const queries = (c: StatsBucketCache) =>
  new StatsQueries(replica, new JobQueries(replica, new ReadCache(engine, () => false), 'w1'), 'w1', c);

async function queue(jobId: string, queuedAt: number): Promise<string> {
  const runId = `run-${++counter}`;
  const plan = manualPlan({ runId, jobId, workspaceId: 'w1', number: counter, queuedAt });
  await bus.execute(runStreamId(runId), runDecider, { type: 'QueueRun', plan, submitted: true }, ctx);
  return runId;
}

async function finish(runId: string, startedAt: number, status: RunStatus, cost: number, ms: number): Promise<void> {
  const stream = runStreamId(runId);
  await bus.execute(stream, runDecider, { type: 'ClaimRun', runnerId: 'r', now: startedAt }, ctx);
  await bus.execute(stream, runDecider, { type: 'StartRun', sandbox: { id: 's', backend: 'bwrap' } }, ctx);
  const outcome = { ...emptyOutcome(startedAt + ms), status: status as 'succeeded', cost, tokIn: cost * 10 };
  await bus.execute(stream, runDecider, { type: 'FinishRun', outcome }, ctx);
}

async function settled(): Promise<void> {
  assert.equal(await engine.waitFor(await events.headPosition(), 30_000), true, 'projection caught up');
}

/** Every range, through the kept cache and through an empty one: the same answers. */
async function sameAsFresh(when: string): Promise<void> {
  for (const range of ranges) {
    const kept = await queries(cache).overview(range, now);
    const fresh = await queries(new StatsBucketCache()).overview(range, now);
    assert.deepEqual(kept, fresh, `${range} ${when}`);
  }
}

before(async () => {
  await engine.start();
  // Eight jobs over the last 40 days, several runs a day, one in nine failing.
  for (let d = 40; d >= 1; d--)
    for (let i = 0; i < 6; i++) {
      const queuedAt = now - d * dayMs + i * 3 * hourMs + (d % 7) * 60_000;
      const runId = await queue(`j${(d + i) % 8}`, queuedAt);
      await finish(runId, queuedAt + 1000, (d + i) % 9 === 0 ? 'failed' : 'succeeded', 100 + d * 3 + i, 1000 + d * 50);
    }
  await settled();
});

after(async () => {
  await engine.stop();
  await events.close();
  await projected.close();
  await replica.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('the overview bucket cache', () => {
  it('answers as an empty cache does after every change another process projects', async () => {
    await sameAsFresh('at first');
    assert.ok(cache.size.entries > 40, 'days and hours are kept');
    const first = await queries(cache).overview('30d', now);

    // A run today, and one still live.
    const today = await queue('j1', now - 10 * 60_000);
    await finish(today, now - 9 * 60_000, 'failed', 500, 70_000);
    await queue('j2', now - 60_000);
    await settled();
    await sameAsFresh('after a run today');
    assert.notDeepEqual((await queries(cache).overview('30d', now)).current, first.current, 'the change is seen');

    // A run queued three days ago that finishes only now changes a day the cache holds.
    const late = await queue('j3', now - 3 * dayMs);
    await settled();
    await sameAsFresh('after a late run was queued');
    await finish(late, now - 60_000, 'succeeded', 9_999, 123_456);
    await settled();
    await sameAsFresh('after it finished');

    // A reflection of a run of 20 days ago, then its deletion.
    const old = `run-${6 * 20 + 1}`;
    await bus.execute(runStreamId(old), runDecider, { type: 'RequestReflection', key: 'k', now }, ctx);
    await bus.execute(runStreamId(old), runDecider, { type: 'StartReflection', key: 'k', now, runnerId: 'r' }, ctx);
    const result = {
      status: 'done' as const,
      error: null,
      summary: 's',
      ops: null,
      version: null,
      cost: 77,
      tokens: 7,
    };
    await bus.execute(runStreamId(old), runDecider, { type: 'FinishReflection', key: 'k', result }, ctx);
    await settled();
    await sameAsFresh('after a reflection');
    const deletion = new RunDeletion(bus, events, projected, new RunFiles(new FileBlobStore(dir)), () => now);
    assert.deepEqual((await deletion.deleteMany('w1', [old, today], admin)).deleted, [old, today]);
    await settled();
    await sameAsFresh('after deletions');
    assert.ok(
      !(await queries(cache).overview('7d', now)).recentFailures.some((r) => r.id === today),
      'a deleted failure is no longer listed',
    );
  });

  it('drops the least recently used entries past its bound', async () => {
    const small = new StatsBucketCache(20_000);
    const answer = await queries(small).overview('90d', now);
    assert.ok(small.size.bytes <= 20_000, `${small.size.bytes} bytes kept`);
    assert.ok(small.size.entries > 0);
    assert.deepEqual(await queries(small).overview('90d', now), answer);
  });
});
