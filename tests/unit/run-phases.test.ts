import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { CommandBus, type CommandContext } from '../../app/commands.js';
import { RunExecutor } from '../../app/run/executor.js';
import { RunEnd } from '../../app/run/phases/context.js';
import { cancelWins, unrecordedFails } from '../../app/run/phases/policy.js';
import { RunStopSignal } from '../../app/run/phases/stop-signal.js';
import { noModelMessage, type ExecutorPorts } from '../../app/run/ports.js';
import { timelineStreamId } from '../../app/timeline.js';
import { RunFiles } from '../../adapters/run-files.js';
import { FileBlobStore } from '../../store/blob-store-files.js';
import { BwrapBackend } from '../../adapters/sandbox/bwrap.js';
import { svcBinaryPath } from '../../adapters/sandbox/select.js';
import { jobDecider, jobStreamId } from '../../domain/job.js';
import { emptyOutcome, runDecider, runStreamId, type RunOutcome } from '../../domain/run.js';
import { costLimitMessage, stopMessages, stoppedOutcome, turnLimitMessage } from '../../domain/run-stop.js';
import { defaultLimits } from '../../domain/settings.js';
import { closeStores, openMemoryStores, type Stores } from '../../store/open.js';
import { manualPlan } from '../run-plan.js';

/** The run's error policy and stop signal (docs/runs.md), and the executor's guarantee of one finish, without a sandbox. */
describe('run stop signal', () => {
  it('names the first reason that fired: the deadline, then a cancel keeps it a timeout', async () => {
    const cancel = new AbortController();
    const stop = new RunStopSignal(cancel.signal);
    assert.equal(stop.stopped, false);
    stop.armDeadline(10);
    await new Promise((r) => stop.signal.addEventListener('abort', r, { once: true }));
    cancel.abort();
    assert.equal(stop.reason, 'timeout');
    assert.equal(stop.cancelled, true);
    assert.deepEqual(stop.outcome(), { status: 'timed_out', error: stopMessages.timeout });
    stop.dispose();
  });

  it('fires at once for a cancel that came before the run, and a disposed deadline never fires', async (t) => {
    const cancel = new AbortController();
    cancel.abort();
    const stop = new RunStopSignal(cancel.signal);
    assert.equal(stop.reason, 'cancelled');
    assert.deepEqual(stop.outcome(), { status: 'cancelled', error: stopMessages.stopped });
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const quiet = new RunStopSignal(new AbortController().signal);
    quiet.armDeadline(5);
    quiet.dispose();
    t.mock.timers.tick(60_000);
    assert.equal(quiet.stopped, false);
    const armed = new RunStopSignal(new AbortController().signal);
    armed.armDeadline(5);
    t.mock.timers.tick(5);
    assert.equal(armed.stopped, true, 'the same deadline not disposed does fire');
  });

  it('words the limits as runs have always stored them', () => {
    assert.equal(turnLimitMessage(1), 'the run exceeded its limit of 1 turn');
    assert.equal(turnLimitMessage(3), 'the run exceeded its limit of 3 turns');
    assert.equal(costLimitMessage(10_000), 'the run exceeded its cost limit of $0.01');
    assert.deepEqual(stoppedOutcome('timeout'), { status: 'timed_out', error: 'the run exceeded its time limit' });
  });
});

describe('run error policy', () => {
  it('lets a cancel win over every end but success, and words a stop as Cancelled', () => {
    const stopped = cancelWins(new RunEnd('cancelled', stopMessages.stopped), true);
    assert.deepEqual([stopped.status, stopped.error], ['cancelled', 'Cancelled']);
    const timedOut = cancelWins(new RunEnd('timed_out', stopMessages.timeout), true);
    assert.deepEqual([timedOut.status, timedOut.error], ['cancelled', stopMessages.timeout], 'its own words are kept');
    const failed = cancelWins(RunEnd.failed('model call failed: boom', { a: 1 }), true);
    assert.deepEqual([failed.status, failed.error, failed.outputs], ['cancelled', 'model call failed: boom', { a: 1 }]);
    const succeeded = new RunEnd('succeeded', null, 'done');
    assert.equal(cancelWins(succeeded, true), succeeded);
    const uncancelled = RunEnd.failed('x');
    assert.equal(cancelWins(uncancelled, false), uncancelled);
  });

  it('fails a success whose timeline could not be written, and leaves other ends alone', () => {
    const end = unrecordedFails(new RunEnd('succeeded', null, 'done', { a: 1 }), new Error('disk full'));
    assert.deepEqual(
      [end.status, end.error, end.summary, end.outputs],
      ['failed', "The run's timeline could not be written: disk full", 'done', { a: 1 }],
    );
    const failed = RunEnd.failed('x');
    assert.equal(unrecordedFails(failed, new Error('disk full')), failed);
  });
});

describe('the executor sequences the phases and finishes a run exactly once', () => {
  let stores: Stores;
  let bus: CommandBus;
  let dir: string;
  const ctx: CommandContext = { workspaceId: 'ws', actor: { type: 'system', id: null }, requestId: null };
  before(() => {
    stores = openMemoryStores();
    bus = new CommandBus(stores.events);
    dir = mkdtempSync(join(tmpdir(), 'svc-run-phases-'));
  });
  after(async () => {
    await closeStores(stores);
    rmSync(dir, { recursive: true, force: true });
  });

  async function claimedRun(): Promise<string> {
    const jobId = randomUUID();
    const runId = randomUUID();
    const fields = { name: 'unit', instruction: 'Do it', selfImprove: false };
    await bus.execute(
      jobStreamId(jobId),
      jobDecider,
      { type: 'CreateJob', jobId, workspaceId: 'ws', fields, now: 1 },
      ctx,
    );
    const plan = manualPlan({ runId, jobId, jobName: 'unit', workspaceId: 'ws', number: 1, queuedAt: Date.now() });
    await bus.execute(runStreamId(runId), runDecider, { type: 'QueueRun', plan, submitted: true }, ctx);
    await bus.execute(runStreamId(runId), runDecider, { type: 'ClaimRun', runnerId: 'r', now: Date.now() }, ctx);
    return runId;
  }

  function executor(overrides: Partial<ExecutorPorts>, finish: (outcome: RunOutcome) => Promise<null>) {
    const errors: string[] = [];
    const ports: ExecutorPorts = {
      // Never asked for a sandbox: every run here ends before one is made.
      backend: new BwrapBackend(join(dir, 'sandboxes'), svcBinaryPath()),
      openSession: () => Promise.reject(new Error('no session in these tests')),
      agentModel: async () => null,
      utilityModel: async () => null,
      settings: async () => ({ defaultLimits, defaultImage: null, dailySpendLimitUsd: 0 }),
      spentSince: async () => 0,
      secretEnv: async () => ({}),
      runImage: async () => null,
      secretValues: async () => [],
      recordScriptCalls: async () => undefined,
      jobState: { get: async () => null, set: async () => undefined },
      ...overrides,
    };
    const log = {
      error: (_: object, msg: string) => void errors.push(msg),
      info: () => undefined,
      debug: () => undefined,
    };
    const runs = { finish: (_job: string, _run: string, outcome: RunOutcome) => finish(outcome) };
    return {
      errors,
      executor: new RunExecutor(bus, stores.events, runs, ports, new RunFiles(new FileBlobStore(dir)), log),
    };
  }

  it('ends a run whose phase fails with that failure, the final status on its timeline', async () => {
    const runId = await claimedRun();
    const outcomes: RunOutcome[] = [];
    const { executor: ex } = executor({}, async (o) => (outcomes.push(o), null));
    await ex.execute(runId, new AbortController().signal);
    assert.equal(outcomes.length, 1);
    assert.deepEqual([outcomes[0]?.status, outcomes[0]?.error], ['failed', noModelMessage]);
    const timeline = await stores.events.readStream(timelineStreamId(runId), { fromRevision: 0 });
    const statuses = timeline.map((e) => (e.data as { payload: { status?: string } }).payload.status);
    assert.deepEqual(statuses, ['provisioning', 'failed']);
  });

  it('maps a thrown error to a failed run, logged, and does not finish again when finishing fails', async () => {
    const runId = await claimedRun();
    const outcomes: RunOutcome[] = [];
    const { executor: ex, errors } = executor(
      { settings: () => Promise.reject(new Error('settings store is down')) },
      async (outcome) => {
        outcomes.push(outcome);
        throw new Error('the run stream is down too');
      },
    );
    await ex.execute(runId, new AbortController().signal);
    assert.equal(outcomes.length, 1, 'finish ran exactly once');
    assert.equal(outcomes[0]?.status, 'failed');
    assert.equal(outcomes[0]?.error, 'The run failed unexpectedly: settings store is down');
    assert.deepEqual(errors, ['run failed unexpectedly', 'could not finish the run']);
  });

  it('does nothing for a run that is no longer waiting to be provisioned', async () => {
    const runId = await claimedRun();
    const outcome = { ...emptyOutcome(Date.now()), status: 'failed' as const };
    await bus.execute(runStreamId(runId), runDecider, { type: 'FinishRun', outcome }, ctx);
    let finishes = 0;
    const { executor: ex } = executor({}, async () => (finishes++, null));
    await ex.execute(runId, new AbortController().signal);
    const state = (await bus.load(runStreamId(runId), runDecider)).state;
    assert.equal(finishes, 0);
    assert.equal(state.status, 'failed');
  });
});
