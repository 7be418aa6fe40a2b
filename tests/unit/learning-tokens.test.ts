import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RunFiles } from '../../adapters/run-files.js';
import { CommandBus, type CommandContext } from '../../app/commands.js';
import { JobQueries } from '../../app/queries/jobs.js';
import { StatsQueries } from '../../app/queries/stats.js';
import { RunDeletion } from '../../app/run-deletion.js';
import { jobRunsStreamId } from '../../domain/job-runs.js';
import { emptyOutcome, runDecider, runStreamId, type ReflectionResult, type RunPlan } from '../../domain/run.js';
import { ProjectionEngine } from '../../projections/engine.js';
import { allProjectors } from '../../projections/index.js';
import { ReadCache } from '../../projections/read-cache.js';
import { FileBlobStore } from '../../store/blob-store-files.js';
import { openSqliteDocumentStore } from '../../store/sqlite-document-store.js';
import { openSqliteEventStore } from '../../store/sqlite-event-store.js';
import { manualPlan } from '../run-plan.js';

/**
 * Learning tokens (docs/design.md, "Stats"): the verifier's verdict and every reflection of a run count once, events
 * written before they were counted read as 0 through their upcasters, and a deleted run keeps its figures.
 */
const now = Date.UTC(2026, 0, 10, 12, 30);
const quiet = { error: () => {}, info: () => {} };
const dir = mkdtempSync(join(tmpdir(), 'svc-learning-tokens-'));
const events = openSqliteEventStore(':memory:');
const docs = openSqliteDocumentStore(':memory:');
const engine = new ProjectionEngine(events, docs, allProjectors, quiet);
const bus = new CommandBus(events, () => now);
const ctx: CommandContext = { workspaceId: 'w1', actor: { type: 'system', id: null }, requestId: null };
const admin: CommandContext = { workspaceId: 'w1', actor: { type: 'user', id: 'u-admin' }, requestId: null };

const plan = (runId: string, number: number): RunPlan =>
  manualPlan({ runId, jobId: 'job', jobName: 'job', workspaceId: 'w1', number, queuedAt: now - 60_000 });

const reflected = (tokens: number): ReflectionResult => ({
  status: 'done',
  error: null,
  summary: 'learned',
  ops: null,
  version: null,
  cost: 1,
  tokens,
});

async function reflect(runId: string, key: string, tokens: number): Promise<void> {
  await bus.execute(runStreamId(runId), runDecider, { type: 'StartReflection', key, now, runnerId: 'r' }, ctx);
  await bus.execute(runStreamId(runId), runDecider, { type: 'FinishReflection', key, result: reflected(tokens) }, ctx);
}

async function settled(): Promise<void> {
  assert.equal(await engine.waitFor(await events.headPosition(), 30_000), true, 'projection caught up');
}

const overview = () =>
  new StatsQueries(docs, new JobQueries(docs, new ReadCache(engine, () => false), 'w1'), 'w1').overview('24h', now);

before(async () => {
  await engine.start();
});

after(async () => {
  await engine.stop();
  await events.close();
  await docs.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('learning tokens', () => {
  it("sum the verifier's tokens and every reflection's, and are written as payload version 2", async () => {
    const stream = runStreamId('run-a');
    await bus.execute(stream, runDecider, { type: 'QueueRun', plan: plan('run-a', 1), submitted: true }, ctx);
    await bus.execute(stream, runDecider, { type: 'ClaimRun', runnerId: 'r', now: now - 50_000 }, ctx);
    await bus.execute(stream, runDecider, { type: 'StartRun', sandbox: { id: 's', backend: 'bwrap' } }, ctx);
    const outcome = { ...emptyOutcome(now - 40_000), status: 'succeeded' as const, tokIn: 500, verifyTokens: 40 };
    await bus.execute(stream, runDecider, { type: 'FinishRun', outcome: { ...outcome, reflection: 'pending' } }, ctx);
    await reflect('run-a', `auto-run-a`, 100);
    await bus.execute(stream, runDecider, { type: 'RequestReflection', key: 'again', now }, ctx);
    await reflect('run-a', 'again', 50);
    await settled();

    const recorded = await events.readStream(stream);
    const finished = recorded.find((e) => e.type === 'RunFinished')!;
    assert.equal(finished.metadata.v, 2);
    const last = recorded.filter((e) => e.type === 'RunReflected').at(-1)!;
    assert.deepEqual([last.metadata.v, (last.data as { totalTokens: number }).totalTokens], [2, 150]);
    const o = await overview();
    assert.deepEqual([o.current.runTokens, o.current.learningTokens], [500, 40 + 100 + 50]);
  });

  it('read as 0 in events written before they were counted (version 1, no fields)', async () => {
    const stream = runStreamId('run-old');
    await bus.execute(stream, runDecider, { type: 'QueueRun', plan: plan('run-old', 2), submitted: true }, ctx);
    await bus.execute(stream, runDecider, { type: 'ClaimRun', runnerId: 'r', now: now - 30_000 }, ctx);
    const { verifyTokens: _v, ...v1Outcome } = { ...emptyOutcome(now - 20_000), status: 'succeeded' as const };
    const meta = {
      workspaceId: 'w1',
      actor: ctx.actor,
      requestId: null,
      correlationId: null,
      causationId: null,
      ts: 0,
    };
    await events.append(
      stream,
      [
        {
          type: 'RunFinished',
          data: { ...v1Outcome, tokIn: 7, runId: 'run-old', jobId: 'job', msTotal: 10_000 },
          metadata: meta,
        },
      ],
      1,
    );
    await settled();
    const o = await overview();
    assert.deepEqual([o.current.runs, o.current.runTokens, o.current.learningTokens], [2, 507, 190]);
    // The command bus folds the old event through its upcaster: the run is finished and may be reflected on.
    await bus.execute(stream, runDecider, { type: 'RequestReflection', key: 'late', now }, ctx);
    await reflect('run-old', 'late', 9);
    await settled();
    assert.equal((await overview()).current.learningTokens, 199);
  });

  it('stay in the statistics after the run is deleted, and a rebuild gives the same', async () => {
    const deletion = new RunDeletion(bus, events, docs, new RunFiles(new FileBlobStore(dir)), () => now);
    assert.deepEqual((await deletion.deleteMany('w1', ['run-a'], admin)).deleted, ['run-a']);
    await settled();
    const fact = (await events.readStream(jobRunsStreamId('job'))).find((e) => e.type === 'RunDeleted')!;
    assert.equal(fact.metadata.v, 2);
    assert.deepEqual((fact.data as { figures: { verifyTokens: number; learningTokens: number } }).figures, {
      ...(fact.data as { figures: object }).figures,
      verifyTokens: 40,
      learningTokens: 190,
    });
    const kept = await overview();
    assert.equal(kept.current.learningTokens, 199);
    await engine.rebuild();
    await settled();
    assert.deepEqual(await overview(), kept);
  });
});
