import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DomainError } from '../../domain/decider.js';
import { jobRunsDecider, type JobRunsEvent, type JobRunsState } from '../../domain/job-runs.js';
import { emptyOutcome, runDecider, type RunEvent, type RunPlan, type RunState } from '../../domain/run.js';
import { manualPlan } from '../run-plan.js';

const plan: RunPlan = manualPlan({
  runId: 'r1',
  jobId: 'j1',
  jobName: 'J',
  workspaceId: 'w',
  number: 1,
  queuedAt: 1000,
});

function fold(events: RunEvent[]): RunState {
  return events.reduce(runDecider.evolve, runDecider.initialState);
}
function step(state: RunState, command: Parameters<typeof runDecider.decide>[0]) {
  const events = runDecider.decide(command, state);
  return { events, state: events.reduce(runDecider.evolve, state) };
}
const code = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    return (err as DomainError).code;
  }
  return null;
};

describe('run decider', () => {
  it('goes queued → provisioning → running → final, measuring from the claim', () => {
    let s = step(runDecider.initialState, { type: 'QueueRun', plan, submitted: true }).state;
    s = step(s, { type: 'ClaimRun', runnerId: 'x', now: 2000 }).state;
    assert.equal(s.status, 'provisioning');
    s = step(s, { type: 'StartRun', sandbox: { id: 's', backend: 'bwrap' } }).state;
    const done = step(s, { type: 'FinishRun', outcome: { ...emptyOutcome(5000), status: 'succeeded' } });
    assert.equal(done.state.status, 'succeeded');
    assert.equal((done.events[0]!.data as { msTotal: number }).msTotal, 3000);
    assert.equal(
      code(() => runDecider.decide({ type: 'FinishRun', outcome: emptyOutcome(6000) }, done.state)),
      'conflict',
    );
  });

  it('lets exactly one claim win, and only a submitted run be claimed', () => {
    const waiting = fold([{ type: 'RunQueued', data: { ...plan, submitted: false } }]);
    assert.equal(
      code(() => runDecider.decide({ type: 'ClaimRun', runnerId: 'a', now: 1 }, waiting)),
      'conflict',
    );
    const s = step(waiting, { type: 'SubmitRun' }).state;
    const claimed = step(s, { type: 'ClaimRun', runnerId: 'a', now: 1 }).state;
    assert.equal(
      code(() => runDecider.decide({ type: 'ClaimRun', runnerId: 'b', now: 1 }, claimed)),
      'conflict',
    );
  });

  it('cancels: a queued run ends at once, a live one is asked once, a final one is refused', () => {
    const queued = fold([{ type: 'RunQueued', data: { ...plan, submitted: true } }]);
    const ended = step(queued, { type: 'CancelRun', now: 3000 });
    assert.equal(ended.state.status, 'cancelled');
    assert.equal((ended.events[0]!.data as { error: string }).error, 'Cancelled before it started');
    assert.equal((ended.events[0]!.data as { msTotal: number | null }).msTotal, null);
    assert.equal(
      code(() => runDecider.decide({ type: 'CancelRun', now: 4000 }, ended.state)),
      'conflict',
    );
    const live = step(queued, { type: 'ClaimRun', runnerId: 'a', now: 1 }).state;
    const asked = step(live, { type: 'CancelRun', now: 2 });
    assert.equal(asked.events[0]!.type, 'RunCancelRequested');
    assert.deepEqual(runDecider.decide({ type: 'CancelRun', now: 3 }, asked.state), []);
    assert.equal(
      code(() => runDecider.decide({ type: 'CancelRun', now: 1 }, runDecider.initialState)),
      'not_found',
    );
  });
});

describe('job admission', () => {
  const admit = (s: JobRunsState, runId: string, concurrency: 'skip' | 'queue' | 'parallel') => {
    const events = jobRunsDecider.decide({ type: 'AdmitRun', runId, concurrency }, s);
    return {
      outcome: (events[0] as Extract<JobRunsEvent, { type: 'RunAdmitted' }>).data.outcome,
      state: events.reduce(jobRunsDecider.evolve, s),
    };
  };
  const release = (s: JobRunsState, runId: string) => {
    const events = jobRunsDecider.decide({ type: 'ReleaseRun', runId }, s);
    return {
      next: events.length ? (events[0] as Extract<JobRunsEvent, { type: 'RunReleased' }>).data.next : undefined,
      state: events.reduce(jobRunsDecider.evolve, s),
    };
  };

  it('skips when busy under skip, waits under queue, starts under parallel', () => {
    let s = admit(jobRunsDecider.initialState, 'a', 'skip').state;
    assert.equal(admit(s, 'b', 'skip').outcome, 'skip');
    assert.equal(admit(s, 'b', 'parallel').outcome, 'start');
    const q = admit(s, 'b', 'queue');
    assert.equal(q.outcome, 'wait');
    s = q.state;
    assert.equal(s.counter, 2);
    // Under queue, a waiting run keeps the job busy even when nothing is active.
    const r = release(s, 'a');
    assert.equal(r.next, 'b');
    assert.deepEqual(r.state.active, ['b']);
    assert.equal(release(r.state, 'zzz').next, undefined, 'releasing an unknown run changes nothing');
  });

  it('starts the next waiting run only when nothing is active', () => {
    let s = jobRunsDecider.initialState;
    for (const [id, c] of [
      ['a', 'parallel'],
      ['b', 'parallel'],
      ['c', 'queue'],
    ] as const)
      s = admit(s, id, c).state;
    assert.deepEqual(s.waiting, ['c']);
    const first = release(s, 'a');
    assert.equal(first.next, null);
    assert.equal(release(first.state, 'b').next, 'c');
  });
});
