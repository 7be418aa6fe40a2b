import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import Database from 'better-sqlite3';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RunFiles } from '../../adapters/run-files.js';
import { FileBlobStore } from '../../store/blob-store-files.js';
import { CommandBus, type CommandContext } from '../../app/commands.js';
import { RunDeletion } from '../../app/run-deletion.js';
import { TimelineWriter } from '../../app/timeline.js';
import { replayProgressLines } from '../../cli/progress.js';
import { jobDecider, jobStreamId } from '../../domain/job.js';
import { jobRunsDecider, jobRunsStreamId } from '../../domain/job-runs.js';
import { emptyContent, playbookDecider, playbookStreamId, type PlaybookContent } from '../../domain/playbook.js';
import { emptyOutcome, runDecider, runStreamId, type RunPlan } from '../../domain/run.js';
import { ProjectionEngine, replayFilter, type ReplayProgress } from '../../projections/engine.js';
import { allProjectors } from '../../projections/index.js';
import type { DocOp, Projector } from '../../projections/projector.js';
import type { DocumentStore } from '../../store/document-store.js';
import type { RecordedEvent } from '../../store/event-store.js';
import { quiet, systemMeta } from '../engine-fixtures.js';
import { openSqliteDocumentStore } from '../../store/sqlite-document-store.js';
import { openSqliteEventStore } from '../../store/sqlite-event-store.js';
import { plainSave } from '../playbook-save.js';

/**
 * The offline replay (`ProjectionEngine.replay`, what `svc admin rebuild-projections` and `verify-projections` run)
 * against the live feed: over a history made through the product's deciders and services, longer than one replay
 * page, the rebuilt read models must be the live ones document for document.
 */
const t0 = Date.UTC(2026, 0, 5, 8);
let now = t0;
const dir = mkdtempSync(join(tmpdir(), 'svc-replay-'));
const events = openSqliteEventStore(join(dir, 'events.db'));
const docs = openSqliteDocumentStore(join(dir, 'read.db'));
const bus = new CommandBus(events, () => now);
const user: CommandContext = { workspaceId: 'w1', actor: { type: 'user', id: 'u1' }, requestId: 'r1' };
const system = (workspaceId: string): CommandContext => ({
  workspaceId,
  actor: { type: 'system', id: null },
  requestId: null,
});

async function snapshot(store: DocumentStore): Promise<Record<string, unknown[]>> {
  const out: Record<string, unknown[]> = {};
  for (const name of allProjectors.flatMap((p) => p.collections))
    out[name] = await store.collection(name).find({}, { sort: [['_id', 1]] });
  return out;
}

async function savePlaybook(jobId: string, workspaceId: string, change: (c: PlaybookContent) => void) {
  const { state } = await bus.load(playbookStreamId(jobId), playbookDecider);
  const content: PlaybookContent = { ...emptyContent(), ...state.content };
  change(content);
  await bus.execute(
    playbookStreamId(jobId),
    playbookDecider,
    plainSave({ jobId, workspaceId, content, summary: 'change', authorId: 'u1', now }),
    { ...user, workspaceId },
  );
}

/** A run admitted and queued, its plan read from the job's playbook. */
async function queue(jobId: string, workspaceId: string, i: number, scripted: boolean): Promise<string> {
  const runId = `run-${i}`;
  const ctx = system(workspaceId);
  const admitted = await bus.execute(
    jobRunsStreamId(jobId),
    jobRunsDecider,
    { type: 'AdmitRun', runId, concurrency: 'parallel' },
    ctx,
  );
  const { version } = (await bus.load(playbookStreamId(jobId), playbookDecider)).state;
  const plan: RunPlan = {
    runId,
    jobId,
    jobName: `job ${jobId}`,
    workspaceId,
    number: (admitted.events[0]!.data as { number: number }).number,
    trigger: i % 2 === 0 ? 'manual' : 'schedule',
    triggeredBy: i % 2 === 0 ? 'u1' : null,
    input: { i },
    instructions: null,
    mode: scripted ? 'scripted' : 'explore',
    playbookVersion: version,
    modelId: null,
    queuedAt: now,
  };
  await bus.execute(runStreamId(runId), runDecider, { type: 'QueueRun', plan, submitted: true }, ctx);
  return runId;
}

/** A queued run claimed, started and finished, with a timeline; late scripted runs fall back, to move `demoted`. */
async function finish(jobId: string, workspaceId: string, i: number, scripted: boolean): Promise<void> {
  const runId = `run-${i}`;
  const ctx = system(workspaceId);
  const stream = runStreamId(runId);
  await bus.execute(stream, runDecider, { type: 'ClaimRun', runnerId: 'r', now: now + 10 }, ctx);
  await bus.execute(stream, runDecider, { type: 'StartRun', sandbox: { id: `s${i}`, backend: 'bwrap' } }, ctx);
  const timeline = new TimelineWriter(events, runId, workspaceId, undefined, () => now);
  for (let e = 0; e < 4; e++) await timeline.append('tool.call', { step: e, text: `step ${e}` }, { ms: e });
  // The last scripted runs fall back to the agent: two in a row demote the job.
  const fellBack = scripted && i >= 60;
  if (fellBack) {
    await bus.execute(stream, runDecider, { type: 'VerifyRun' }, ctx);
    await bus.execute(stream, runDecider, { type: 'FallBackRun', reason: 'main failed' }, ctx);
  }
  await bus.execute(
    stream,
    runDecider,
    {
      type: 'FinishRun',
      outcome: {
        ...emptyOutcome(now + 5000),
        status: i % 5 === 0 ? 'failed' : 'succeeded',
        cost: 100 + i,
        turns: 2,
        tokIn: 50 + i,
        tokOut: 10,
        fellBack,
      },
    },
    ctx,
  );
  await bus.execute(jobRunsStreamId(jobId), jobRunsDecider, { type: 'ReleaseRun', runId }, ctx);
}

/** One run's life through the deciders. */
async function run(jobId: string, workspaceId: string, i: number, scripted: boolean): Promise<void> {
  await queue(jobId, workspaceId, i, scripted);
  await finish(jobId, workspaceId, i, scripted);
}

let live: Record<string, unknown[]>;
let liveIndexes: string[] = [];
/** The events the replay reads: those of the categories some projector maps (the timelines are passed unread). */
let mapped: RecordedEvent[] = [];

/** The read models' indexes, as SQLite lists them: a rebuild builds some after its replay, and must leave them all. */
function indexes(): string[] {
  const db = new Database(join(dir, 'read.db'), { readonly: true });
  try {
    return (
      db
        .prepare(`SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY name`)
        .all() as Array<{
        name: string;
      }>
    ).map((r) => r.name);
  } finally {
    db.close();
  }
}

before(async () => {
  const engine = new ProjectionEngine(events, docs, allProjectors, quiet);
  await engine.start();
  const jobs = ['j0', 'j1', 'j2', 'j3', 'j4'];
  for (const [n, jobId] of jobs.entries()) {
    const workspaceId = n === 4 ? 'w2' : 'w1';
    await bus.execute(
      jobStreamId(jobId),
      jobDecider,
      {
        type: 'CreateJob',
        jobId,
        workspaceId,
        fields: { name: `Job ${n}`, instruction: 'Summarise the report.', ...(n % 2 ? { cron: '0 * * * *' } : {}) },
        now,
      },
      { ...user, workspaceId },
    );
  }
  for (let i = 0; i < 300; i++) {
    now = t0 + i * 7 * 60_000;
    const jobId = jobs[i % jobs.length]!;
    const workspaceId = jobId === 'j4' ? 'w2' : 'w1';
    // j0 graduates after its tenth run: its later runs are scripted, and some of them fail.
    if (i === 10) await savePlaybook('j0', 'w1', (c) => (c.main = '#!/bin/sh\necho ok\n'));
    if (i % 9 === 0)
      await savePlaybook(jobId, workspaceId, (c) => {
        c.learnings = [
          ...c.learnings,
          { id: `L${i}`, kind: 'fact', text: `learnt at ${i}`, hits: 0, status: 'active', sources: null },
        ];
      });
    // Renames rename the job's runs too, many documents at once, which no memo of a replay observes.
    if (i % 11 === 0)
      await bus.execute(
        jobStreamId(jobId),
        jobDecider,
        { type: 'PatchJob', patch: { name: `Job ${jobId} (${i})`, ...(i % 2 ? { cron: '*/5 * * * *' } : {}) }, now },
        { ...user, workspaceId },
      );
    await run(jobId, workspaceId, i, jobId === 'j0' && i > 10);
  }
  // Twelve runs of j2 queued at once and finished oldest first: the first two finish outside its ten latest, where a
  // replay's memo of the job's runs cannot tell a new run from an old one changed (projections/jobs.ts).
  for (let i = 300; i < 312; i++) await queue('j2', 'w1', i, false);
  for (let i = 300; i < 312; i++) await finish('j2', 'w1', i, false);
  await bus.execute(jobStreamId('j3'), jobDecider, { type: 'ArchiveJob', now }, user);
  assert.equal(await engine.waitFor(await events.headPosition(), 30_000), true, 'the live feed caught up');
  // A deleted run: the rebuild meets its fact and nothing of its streams.
  const deletion = new RunDeletion(bus, events, docs, new RunFiles(new FileBlobStore(dir)), () => now);
  // run-295 is j0's latest: its run fields fall back to the one before.
  assert.deepEqual((await deletion.deleteMany('w1', ['run-6', 'run-295'], user)).deleted, ['run-6', 'run-295']);
  assert.equal(await engine.waitFor(await events.headPosition(), 30_000), true, 'the live feed caught up');
  await engine.stop();
  live = await snapshot(docs);
  liveIndexes = indexes();
  mapped = await events.readAll({ filter: replayFilter(allProjectors) });
});

after(async () => {
  await events.close();
  await docs.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('rebuild by replay', () => {
  it('gives the documents of the live projection over a mixed history, across replay pages, with progress', async () => {
    const head = await events.headPosition();
    const all = await events.readAll();
    assert.ok(mapped.length > 1500, `a history longer than one page of 1,000 events (${mapped.length})`);
    assert.ok(all.length - mapped.length >= 1000, 'timeline events no projector maps, passed unread');
    assert.ok((live.runs ?? []).length >= 80 && (live.audit ?? []).length > 100, 'the history fills the read models');
    assert.ok(
      (live.jobs ?? []).some((j) => (j as { demoted?: boolean }).demoted === true),
      'a scripted job got demoted',
    );
    const engine = new ProjectionEngine(events, docs, allProjectors, quiet);
    assert.equal((await engine.rebuild()).length, allProjectors.length);
    assert.deepEqual((await docs.collection('jobs').find({})).length, 0, 'the rebuild starts from empty read models');
    const progress: ReplayProgress[] = [];
    await engine.replay((p) => progress.push(p));
    assert.deepEqual(await snapshot(docs), live, 'every read model equals the live one');
    assert.ok(liveIndexes.includes('ix_runs_workspaceId__cost'), `the list indexes exist (${liveIndexes.length})`);
    assert.deepEqual(indexes(), liveIndexes, 'the indexes built after the replay are the live ones');
    // Progress counts the log's positions passed, the timelines' included, of those up to the head.
    const total = Number(head);
    assert.deepEqual(
      progress.map((p) => [p.done, p.total]),
      Array.from({ length: Math.ceil(mapped.length / 1000) }, (_, i) => [
        (i + 1) * 1000 < mapped.length ? Number(mapped[(i + 1) * 1000 - 1]!.position) : total,
        total,
      ]),
      'one report per page of 1,000 events mapped',
    );
    assert.ok(
      (await engine.storedStatus()).every((s) => s.position === head && s.healthy),
      'every checkpoint is at the head',
    );
  });

  it('rebuilds one projector on a stopped engine and leaves the others and their checkpoints alone', async () => {
    const before = await engine().storedStatus();
    await docs.collection('audit').updateOne({ _id: 'marker' }, { $set: { workspaceId: 'x' } }, { upsert: true });
    await docs.collection('jobs').updateOne({ _id: 'j0' }, { $set: { name: 'tampered' } });
    const e = engine();
    assert.deepEqual(await e.rebuild(['jobs']), ['jobs']);
    await e.replay();
    const after = await snapshot(docs);
    assert.deepEqual(after.jobs, live.jobs, 'jobs rebuilt');
    assert.ok(
      (after.audit ?? []).some((d) => (d as { _id: string })._id === 'marker'),
      'audit not replayed over',
    );
    assert.deepEqual(
      (await e.storedStatus()).filter((s) => s.name !== 'jobs'),
      before.filter((s) => s.name !== 'jobs'),
    );
    await docs.collection('audit').deleteMany({ _id: 'marker' });
  });

  it('writes nothing of a page once the lease is lost', async () => {
    const e = engine();
    await e.rebuild(['runs']);
    let allowed = 1200;
    e.guardWrites(() => allowed-- > 0);
    await assert.rejects(e.replay(), /lease was lost/);
    const runs = (await e.storedStatus()).find((s) => s.name === 'runs')!;
    assert.equal(runs.position, mapped[999]!.position, 'the checkpoint of the last whole page');
    const count = (await docs.collection('runs').find({})).length;
    assert.ok(!indexes().includes('ix_runs_workspaceId__cost'), 'a list index is built only once the replay ends');
    e.guardWrites(() => true);
    await e.replay();
    assert.ok(count < (live.runs ?? []).length, 'the second page was rolled back');
    assert.deepEqual((await snapshot(docs)).runs, live.runs);
    assert.deepEqual(indexes(), liveIndexes);
  });

  it('leaves an interrupted rebuild for the next start to finish, indexes included', async () => {
    const e = engine();
    await e.rebuild(['runs', 'jobs', 'stats', 'audit']);
    let allowed = 1500;
    e.guardWrites(() => allowed-- > 0);
    await assert.rejects(e.replay(), /lease was lost/);
    assert.notDeepEqual(indexes(), liveIndexes, 'the interrupted rebuild left the list indexes to build');
    const started = engine();
    await started.start();
    await started.catchUp(60_000);
    await started.stop();
    assert.deepEqual(await snapshot(docs), live, 'the live feed finished what the rebuild left');
    assert.deepEqual(indexes(), liveIndexes);
  });
});

function engine(projectors = allProjectors): ProjectionEngine {
  return new ProjectionEngine(events, docs, projectors, quiet);
}

/** Of a snapshot, the read models of the projectors named. */
function only(all: Record<string, unknown[]>, names: string[]): Record<string, unknown[] | undefined> {
  const collections = allProjectors.filter((p) => names.includes(p.name)).flatMap((p) => p.collections);
  return Object.fromEntries(collections.map((c) => [c, all[c]]));
}

describe('what derives keep through a replay', () => {
  it('gives the live documents from a checkpoint in the middle of the log, with nothing of its start seen', async () => {
    const names = ['runs', 'stats', 'jobs'];
    const first = engine();
    await first.rebuild(names);
    let allowed = 1100;
    first.guardWrites(() => allowed-- > 0);
    await assert.rejects(first.replay(), /lease was lost/);
    const jobs = (await first.storedStatus()).find((s) => s.name === 'jobs')!;
    assert.equal(jobs.position, mapped[999]!.position, 'stopped after the first page');
    assert.ok(
      (await docs.collection('jobs').find({})).some((j) => (j.runCount as number) > 10),
      'jobs have more runs than the memo holds by then',
    );
    // Another process goes on from the stored checkpoints: its memo starts empty, in the middle of the jobs' runs.
    await engine().replay();
    assert.deepEqual(only(await snapshot(docs), names), only(live, names));
  });

  it('rebuilds a projector whose version changed alone, its derives reading the others at the head', async () => {
    const bumped = allProjectors.map((p) => (p.name === 'jobs' ? { ...p, version: p.version + 1 } : p));
    await docs.collection('jobs').updateMany({}, { $set: { runCount: -1, recentRuns: null, demoted: true } });
    const e = engine(bumped);
    await e.replay();
    assert.deepEqual(await snapshot(docs), live, 'the jobs rebuilt, the others untouched');
    // Back to the stored version, for the tests after this one.
    await engine().rebuild(['jobs']);
    await engine().replay();
    assert.deepEqual(await snapshot(docs), live);
  });

  it('rebuilds runs, statistics and jobs together after a version change of each', async () => {
    const names = new Set(['runs', 'stats', 'jobs']);
    const bumped = allProjectors.map((p) => (names.has(p.name) ? { ...p, version: p.version + 1 } : p));
    await engine(bumped).replay();
    assert.deepEqual(await snapshot(docs), live);
    await engine().rebuild([...names]);
    await engine().replay();
    assert.deepEqual(await snapshot(docs), live);
  });
});

describe('a projector failing in a replay', () => {
  const meta = systemMeta;
  const copy = (name: string, failAt: number | null): Projector => ({
    name,
    version: 1,
    collections: [name],
    indexes: [],
    project(e): DocOp[] {
      const n = (e.data as { n: number }).n;
      if (n === failAt) throw new Error(`cannot map ${n}`);
      return [{ kind: 'update', collection: name, filter: { _id: `d${n}` }, update: { $set: { n } }, upsert: true }];
    },
  });

  it('stops that projector at the event before, lets the others finish, stores its error and says so', async () => {
    const ev = openSqliteEventStore(':memory:');
    const ds = openSqliteDocumentStore(':memory:');
    for (let n = 1; n <= 2500; n++) await ev.append(`s${n % 7}`, [{ type: 'N', data: { n }, metadata: meta }], 'any');
    const e = new ProjectionEngine(ev, ds, [copy('good', null), copy('bad', 1200)], quiet);
    await assert.rejects(e.replay(), /projection failed: bad: cannot map 1200/);
    assert.equal(await ds.collection('good').count({}), 2500);
    assert.equal(await ds.collection('bad').count({}), 1199);
    const status = await e.storedStatus();
    assert.deepEqual(
      status.map((s) => [s.name, s.position, s.lastError]),
      [
        ['good', '2500', null],
        ['bad', '1199', 'cannot map 1200'],
      ],
    );
    await ev.close();
    await ds.close();
  });
});

describe('replay progress on the terminal', () => {
  it('is silent for the first seconds, then prints a line every few seconds with done, total, share and rate', () => {
    const lines: string[] = [];
    const progress = replayProgressLines((l) => lines.push(l), 'rebuild-projections', 3000);
    progress({ done: 1000, total: 250_000, elapsedMs: 900 });
    progress({ done: 2000, total: 250_000, elapsedMs: 2900 });
    assert.deepEqual(lines, [], 'a short rebuild prints nothing');
    progress({ done: 150_000, total: 250_000, elapsedMs: 3000 });
    progress({ done: 160_000, total: 250_000, elapsedMs: 4000 });
    progress({ done: 240_000, total: null, elapsedMs: 6000 });
    assert.deepEqual(lines, [
      'rebuild-projections: 150,000 of 250,000 (60%) events, 50,000 events/s\n',
      'rebuild-projections: 240,000 events, 40,000 events/s\n',
    ]);
  });
});
