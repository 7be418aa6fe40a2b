import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RunFiles } from '../../adapters/run-files.js';
import { FileBlobStore } from '../../store/blob-store-files.js';
import { BlobBackedEventStore, eventBlobPrefix } from '../../store/blob-store-events.js';
import { CommandBus, type CommandContext } from '../../app/commands.js';
import { JobQueries } from '../../app/queries/jobs.js';
import { StatsQueries } from '../../app/queries/stats.js';
import { Retention } from '../../app/retention.js';
import { RunDeletion } from '../../app/run-deletion.js';
import { TimelineWriter, timelineStreamId } from '../../app/timeline.js';
import { jobRunsStreamId } from '../../domain/job-runs.js';
import type { RunStatus } from '../../domain/job-types.js';
import { emptyOutcome, runDecider, runStreamId } from '../../domain/run.js';
import { ProjectionEngine } from '../../projections/engine.js';
import { allProjectors } from '../../projections/index.js';
import { ReadCache } from '../../projections/read-cache.js';
import { openSqliteDocumentStore } from '../../store/sqlite-document-store.js';
import { openSqliteEventStore } from '../../store/sqlite-event-store.js';
import { manualPlan } from '../run-plan.js';
import { summarize } from '../../domain/stats.js';
import {
  dayHours,
  dayTotals,
  decodeDurations,
  fromHourRun,
  hourRuns,
  revOf,
  type StatsDayDoc,
  type StatsHourDoc,
} from '../../projections/stats-buckets.js';
import { sliceMs } from '../../projections/stats.js';

/**
 * The stats read model end to end below the HTTP layer: real SQLite stores, the real deciders and projection
 * engine, runs with chosen timestamps and figures, so every number of the overview can be stated exactly. Deletion
 * and retention run through their services, and a rebuild from the log must give the same read models.
 */
const now = Date.UTC(2026, 0, 10, 12, 30);
const at = (day: number, hour: number, minute = 0) => Date.UTC(2026, 0, day, hour, minute);
const quiet = { error: () => {}, info: () => {} };

const dir = mkdtempSync(join(tmpdir(), 'svc-stats-'));
// The log keeps large payloads in the blob store, as `openStores` wires it: deletion and retention must remove them.
const blobs = new FileBlobStore(dir);
const events = new BlobBackedEventStore(openSqliteEventStore(':memory:'), blobs);
const docs = openSqliteDocumentStore(':memory:');
const engine = new ProjectionEngine(events, docs, allProjectors, quiet);
const bus = new CommandBus(events, () => now);
const files = new RunFiles(blobs);
/** A timeline payload over both limits: its whole copy is a run file, its shortened entry an out-of-line event. */
const bulky = { items: Array.from({ length: 40 }, (_, i) => `${'x'.repeat(2000)}${i}`) };
const admin: CommandContext = { workspaceId: 'w1', actor: { type: 'user', id: 'u-admin' }, requestId: 'req-1' };
const ids: Record<string, string> = {};
let counter = 0;

interface Spec {
  key: string;
  jobId: string;
  queuedAt: number;
  status: RunStatus;
  cost?: number;
  tokens?: number;
  ms?: number;
  verifyCost?: number;
  workspaceId?: string;
}

async function addRun(s: Spec): Promise<string> {
  const runId = `run-${++counter}-${s.key}`;
  ids[s.key] = runId;
  const workspaceId = s.workspaceId ?? 'w1';
  const ctx: CommandContext = { workspaceId, actor: { type: 'system', id: null }, requestId: null };
  const plan = manualPlan({ runId, jobId: s.jobId, workspaceId, number: counter, queuedAt: s.queuedAt });
  const stream = runStreamId(runId);
  if (s.status === 'skipped') {
    await bus.execute(stream, runDecider, { type: 'SkipRun', plan, error: 'busy' }, ctx);
    return runId;
  }
  await bus.execute(stream, runDecider, { type: 'QueueRun', plan, submitted: true }, ctx);
  if (s.status === 'queued') return runId;
  const startedAt = s.queuedAt + 1000;
  await bus.execute(stream, runDecider, { type: 'ClaimRun', runnerId: 'r', now: startedAt }, ctx);
  await bus.execute(stream, runDecider, { type: 'StartRun', sandbox: { id: 's', backend: 'bwrap' } }, ctx);
  await bus.execute(
    stream,
    runDecider,
    {
      type: 'FinishRun',
      outcome: {
        ...emptyOutcome(startedAt + (s.ms ?? 0)),
        status: s.status as 'succeeded',
        cost: s.cost ?? 0,
        tokIn: s.tokens ?? 0,
        verifyCost: s.verifyCost ?? 0,
      },
    },
    ctx,
  );
  return runId;
}

async function settled(): Promise<void> {
  assert.equal(await engine.waitFor(await events.headPosition(), 30_000), true, 'projection caught up');
}

const stats = (workspaceId = 'w1') =>
  new StatsQueries(docs, new JobQueries(docs, new ReadCache(engine, () => false), workspaceId), workspaceId);

async function snapshot(): Promise<Record<string, unknown[]>> {
  const out: Record<string, unknown[]> = {};
  for (const name of ['runs', 'jobs', 'stats_runs', 'stats_hours', 'stats_hour_sums', 'stats_days', 'stats_revs'])
    out[name] = await docs.collection(name).find({}, { sort: [['_id', 1]] });
  return out;
}

before(async () => {
  await engine.start();
  // alpha: six succeeded runs on Jan 9 (01:00–06:00), getting cheaper, flat on tokens.
  const alphaCost = [90, 90, 90, 60, 60, 60];
  for (let i = 0; i < 6; i++)
    await addRun({
      key: `a${i}`,
      jobId: 'alpha',
      queuedAt: at(9, i + 1),
      status: 'succeeded',
      cost: alphaCost[i],
      tokens: 10,
      ms: (i + 1) * 1000,
    });
  // alpha today: one of each other outcome, and one still queued.
  await addRun({ key: 'failed', jobId: 'alpha', queuedAt: at(10, 1), status: 'failed', cost: 5, ms: 500 });
  await addRun({ key: 'timedOut', jobId: 'alpha', queuedAt: at(10, 2), status: 'timed_out', cost: 5, ms: 700 });
  await addRun({ key: 'cancelled', jobId: 'alpha', queuedAt: at(10, 3), status: 'cancelled', ms: 100 });
  await addRun({ key: 'skipped', jobId: 'alpha', queuedAt: at(10, 4), status: 'skipped' });
  await addRun({ key: 'live', jobId: 'alpha', queuedAt: at(10, 5), status: 'queued' });
  // beta: six succeeded runs on Jan 5, cheaper and leaner; one verification cost.
  const betaCost = [40, 40, 40, 10, 10, 10];
  const betaTokens = [300, 300, 300, 100, 100, 100];
  for (let i = 0; i < 6; i++)
    await addRun({
      key: `b${i}`,
      jobId: 'beta',
      queuedAt: at(5, i + 1),
      status: 'succeeded',
      cost: betaCost[i],
      tokens: betaTokens[i],
      ms: 10_000 + i * 1000,
      verifyCost: i === 0 ? 3 : 0,
    });
  // The previous 7-day period is [Dec 28 00:00, Jan 3 12:30): its edges, inside and out.
  await addRun({
    key: 'prevFirst',
    jobId: 'gamma',
    queuedAt: Date.UTC(2025, 11, 28),
    status: 'failed',
    cost: 2,
    ms: 50,
  });
  await addRun({ key: 'prevBefore', jobId: 'gamma', queuedAt: Date.UTC(2025, 11, 28) - 1, status: 'succeeded' });
  await addRun({ key: 'prevIn', jobId: 'gamma', queuedAt: at(3, 11), status: 'succeeded', cost: 7, ms: 800 });
  await addRun({ key: 'prevCutHour', jobId: 'gamma', queuedAt: at(3, 12, 29), status: 'succeeded', cost: 8, ms: 900 });
  await addRun({ key: 'prevAfterCut', jobId: 'gamma', queuedAt: at(3, 12, 30), status: 'succeeded', cost: 1000 });
  // Another workspace's run, in the same hours.
  await addRun({ key: 'other', jobId: 'omega', queuedAt: at(10, 1), status: 'failed', cost: 77, workspaceId: 'w2' });
  await settled();
});

after(async () => {
  await engine.stop();
  await events.close();
  await docs.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('stats overview from the read model', () => {
  it('7d: whole days, totals without skipped runs, exact percentiles, the previous period cut at now − 7 days', async () => {
    const o = await stats().overview('7d', now);
    assert.deepEqual([o.range, o.bucket, o.bucketMs, o.from, o.to], ['7d', 'day', 86_400_000, at(4, 0), at(11, 0)]);
    // 16 non-skipped runs; durations 100 500 700 1000…6000 10000…15000 (15 values, the queued run has none):
    // p50 at ⌊14·0.5⌋ = 7 → 5000, p95 at ⌊14·0.95⌋ = 13 → 14000.
    assert.deepEqual(o.current, {
      runs: 16,
      succeeded: 12,
      failed: 2,
      successRate: 12 / 14,
      p50Ms: 5000,
      p95Ms: 14000,
      runCost: 450 + 10 + 150,
      learningCost: 3,
      runTokens: 60 + 1200,
      learningTokens: 0,
    });
    // Dec 28 00:00 (first instant), Jan 3 11:00 and 12:29 are in; Dec 27 23:59:59.999 and Jan 3 12:30 are not.
    assert.deepEqual(o.previous, {
      runs: 3,
      succeeded: 2,
      failed: 1,
      successRate: 2 / 3,
      p50Ms: 800,
      p95Ms: 800,
      runCost: 17,
      learningCost: 0,
      runTokens: 0,
      learningTokens: 0,
    });
    const zero = { succeeded: 0, failed: 0, cancelled: 0, timedOut: 0, skipped: 0, other: 0, cost: 0, tokens: 0 };
    assert.deepEqual(o.perDay, [
      { ...zero, day: at(4, 0) },
      { ...zero, day: at(5, 0), succeeded: 6, cost: 153, tokens: 1200 },
      { ...zero, day: at(6, 0) },
      { ...zero, day: at(7, 0) },
      { ...zero, day: at(8, 0) },
      { ...zero, day: at(9, 0), succeeded: 6, cost: 450, tokens: 60 },
      { ...zero, day: at(10, 0), failed: 1, timedOut: 1, cancelled: 1, skipped: 1, other: 1, cost: 10 },
    ]);
    const nonSkipped = o.perDay.reduce((n, b) => n + b.succeeded + b.failed + b.cancelled + b.timedOut + b.other, 0);
    assert.equal(nonSkipped, o.current.runs);
    assert.deepEqual(o.costByJob, [
      { day: at(5, 0), jobId: 'beta', jobName: 'job beta', cost: 153, tokens: 1200 },
      { day: at(9, 0), jobId: 'alpha', jobName: 'job alpha', cost: 450, tokens: 60 },
      { day: at(10, 0), jobId: 'alpha', jobName: 'job alpha', cost: 10, tokens: 0 },
    ]);
    assert.deepEqual(
      o.running.map((r) => [r.id, r.status]),
      [[ids.live, 'queued']],
    );
    assert.deepEqual(
      o.recentFailures.map((r) => r.id),
      [ids.timedOut, ids.failed, ids.prevFirst],
    );
    assert.deepEqual(o.gettingCheaper, [
      { jobId: 'beta', jobName: 'job beta', firstCost: 40, recentCost: 10, dropPct: 0.75, runs: 6 },
      { jobId: 'alpha', jobName: 'job alpha', firstCost: 90, recentCost: 60, dropPct: 1 - 60 / 90, runs: 6 },
    ]);
    assert.deepEqual(o.gettingLeaner, [
      { jobId: 'beta', jobName: 'job beta', firstTokens: 300, recentTokens: 100, tokenDropPct: 1 - 100 / 300, runs: 6 },
    ]);
    assert.equal(o.hasRuns, true);
  });

  it("sums each day from its slices' sums to what its hours' runs sum to", async () => {
    const days = await docs.collection<StatsDayDoc>('stats_days').find({});
    assert.ok(days.length >= 3, 'several days have runs');
    for (const day of days) {
      const hours = (await docs.collection<StatsHourDoc>('stats_hours').find({ workspaceId: day.workspaceId }))
        .filter((h) => h.start >= day.start && h.start < day.start + 86_400_000)
        .sort((a, b) => a.start - b.start);
      const direct = summarize(hours.flatMap((h) => hourRuns(h).map(fromHourRun)));
      assert.deepEqual(dayTotals(day), direct.totals, `day ${day._id}`);
      assert.deepEqual([...decodeDurations(day.durations)], direct.durations, `day ${day._id}`);
      // An hour's revision names its slices' (each a digest of its runs): a change of any run changes it.
      const hourStarts = [...new Set(hours.map((h) => Math.floor(h.start / 3_600_000) * 3_600_000))];
      assert.deepEqual(
        dayHours(day).map(([start]) => start),
        hourStarts,
      );
      for (const [start, rev] of dayHours(day)) {
        const slices = hours.filter((h) => h.start >= start && h.start < start + 3_600_000);
        assert.ok(slices.every((h) => h.start % sliceMs === 0 && hourRuns(h).length > 0));
        assert.equal(rev, revOf(JSON.stringify(slices.map((h) => [h.start, h.rev]))));
      }
    }
  });

  it('24h: hourly buckets; the previous day is cut at now − 24 h', async () => {
    const o = await stats().overview('24h', now);
    assert.deepEqual([o.bucket, o.from, o.to, o.perDay.length], ['hour', at(9, 13), at(10, 13), 24]);
    // Durations 100, 500, 700: p50 and p95 both at offset 1.
    assert.equal(o.current.runs, 4);
    assert.deepEqual([o.current.succeeded, o.current.failed, o.current.p50Ms, o.current.p95Ms], [0, 2, 500, 500]);
    // Jan 8 13:00 to Jan 9 12:30: alpha's six succeeded runs, 1000…6000 ms: offsets 2 and 4.
    assert.deepEqual(
      [o.previous.runs, o.previous.succeeded, o.previous.p50Ms, o.previous.p95Ms, o.previous.runCost],
      [6, 6, 3000, 5000, 450],
    );
    const hour1 = o.perDay.find((b) => b.day === at(10, 1))!;
    assert.deepEqual([hour1.failed, hour1.cost], [1, 5]);
  });

  it('keeps workspaces apart and says when one has no runs', async () => {
    const w2 = await stats('w2').overview('24h', now);
    assert.deepEqual([w2.current.runs, w2.current.failed, w2.current.runCost], [1, 1, 77]);
    const none = await stats('w3').overview('90d', now);
    assert.equal(none.hasRuns, false);
    assert.equal(none.perDay.length, 90);
    assert.deepEqual([none.current.runs, none.current.p50Ms, none.running.length], [0, 0, 0]);
  });
});

describe('run deletion and retention in the read models', () => {
  it('deletes a finished run for good, keeps its figures, and a rebuild gives the same read models', async () => {
    const runId = ids.failed!;
    const timeline = new TimelineWriter(events, runId, 'w1', undefined, undefined, files);
    await timeline.append('run.status', { status: 'failed' });
    await timeline.append('log', bulky);
    await files.saveArtifact(runId, 'out/report.txt', Buffer.from('x'));
    assert.equal((await blobs.list(eventBlobPrefix(timelineStreamId(runId)))).length, 1, 'an entry out of line');
    assert.equal((await blobs.list(`runs/${runId}/events/`)).length, 1, 'a whole payload stored');
    const before7d = await stats().overview('7d', now);
    const deletion = new RunDeletion(bus, events, docs, files, () => now);

    assert.equal(
      (await deletion.deleteMany('w2', [runId], admin)).skipped[0]?.reason,
      'not_found',
      "another workspace's run reads as missing",
    );
    const live = await deletion.deleteMany('w1', [ids.live!, 'nope', runId, runId], admin);
    assert.deepEqual(live.deleted, [runId]);
    assert.deepEqual(live.skipped, [
      { id: ids.live, reason: 'unfinished' },
      { id: 'nope', reason: 'not_found' },
    ]);
    await settled();

    assert.deepEqual(await events.readStream(runStreamId(runId)), []);
    assert.deepEqual(await events.readStream(timelineStreamId(runId)), []);
    assert.equal(existsSync(join(dir, 'runs', runId)), false, 'artifacts and payloads removed');
    assert.deepEqual(await blobs.list(`runs/${runId}/`), []);
    assert.deepEqual(await blobs.list(eventBlobPrefix(timelineStreamId(runId))), [], 'the out-of-line entry went too');
    const fact = (await events.readStream(jobRunsStreamId('alpha'))).find((e) => e.type === 'RunDeleted')!;
    assert.deepEqual(fact.metadata.actor, { type: 'user', id: 'u-admin' });
    assert.equal((fact.data as { figures: { cost: number } }).figures.cost, 5);
    assert.equal(await docs.collection('runs').findOne({ _id: runId }), null);

    // Statistics keep the run; only the lists of runs that still exist change.
    const after7d = await stats().overview('7d', now);
    assert.deepEqual(after7d.current, before7d.current);
    assert.deepEqual(after7d.perDay, before7d.perDay);
    assert.deepEqual(
      after7d.recentFailures.map((r) => r.id),
      [ids.timedOut, ids.prevFirst],
    );
    await assert.rejects(deletion.deleteOne('w1', runId, admin), /not found/i);
    await assert.rejects(deletion.deleteOne('w1', ids.live!, admin), /finished/);

    const live1 = await snapshot();
    await engine.rebuild();
    await settled();
    assert.deepEqual(await snapshot(), live1, 'a replay of the log equals the live read models');
    assert.deepEqual(await stats().overview('7d', now), after7d);
  });

  it("retention removes old runs' timelines and files, keeps the runs and the statistics", async () => {
    const old = ids.prevIn!;
    const recent = ids.a0!;
    for (const id of [old, recent]) {
      const timeline = new TimelineWriter(events, id, 'w1', undefined, undefined, files);
      await timeline.append('run.status', { status: 'succeeded' });
      await timeline.append('log', bulky);
      await files.saveArtifact(id, 'a.txt', Buffer.from('x'));
    }
    const before7d = await stats().overview('7d', now);
    // Jan 10 12:30 − 5 days: runs finished before Jan 5 12:30 go.
    const retention = new Retention(
      bus,
      events,
      docs,
      files,
      async () => 5,
      () => now,
    );
    // The workspaces read model is empty here (no workspace events): the pass is asked for w1 by name.
    assert.deepEqual(await retention.pass(), { workspaces: 0, purged: 0 });
    const purged = await retention.purgeWorkspace('w1');
    await settled();
    // Finished before Jan 5 12:30: the five gamma runs and beta's six (Jan 5, 01:00–06:00).
    assert.equal(purged, 5 + 6);
    assert.deepEqual(await events.readStream(timelineStreamId(old)), []);
    assert.equal(existsSync(join(dir, 'runs', old)), false);
    assert.deepEqual(await blobs.list(eventBlobPrefix(timelineStreamId(old))), [], 'its out-of-line entry went too');
    assert.equal((await events.readStream(timelineStreamId(recent))).length, 2);
    assert.deepEqual((await events.readStream(timelineStreamId(recent)))[1]?.data, {
      ...((await events.readStream(timelineStreamId(recent)))[1]?.data as object),
      payload: bulky,
    });
    assert.equal((await blobs.list(eventBlobPrefix(timelineStreamId(recent)))).length, 1, 'a recent run keeps it');
    assert.equal(existsSync(join(dir, 'runs', recent, 'artifacts', 'a.txt')), true);
    const kept = await docs.collection('runs').findOne({ _id: old });
    assert.equal(kept?.purgedAt, now);
    assert.deepEqual(await stats().overview('7d', now), before7d);
    // A second pass finds nothing more to do.
    assert.equal(await retention.purgeWorkspace('w1'), 0);
  });

  it('refuses a run whose reflection is pending: 409 alone, reported in bulk', async () => {
    const runId = ids.a1!;
    const ctx: CommandContext = { workspaceId: 'w1', actor: { type: 'user', id: 'u-admin' }, requestId: null };
    await bus.execute(runStreamId(runId), runDecider, { type: 'RequestReflection', key: 'k1', now }, ctx);
    await settled();
    const deletion = new RunDeletion(bus, events, docs, files, () => now);
    await assert.rejects(deletion.deleteOne('w1', runId, admin), (err: Error & { code?: string }) => {
      assert.equal(err.code, 'conflict');
      assert.match(err.message, /reflection/);
      return true;
    });
    assert.deepEqual((await deletion.deleteMany('w1', [runId], admin)).skipped, [
      { id: runId, reason: 'reflection_pending' },
    ]);
    assert.equal((await events.readStream(runStreamId(runId))).length > 0, true);
  });
});
