import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  graduationBlocker,
  isDemoted,
  isReadOnlyBash,
  type GraduationRun,
  type RunRecord,
} from '../../domain/graduation.js';

const scripted = (number: number, fellBack: boolean, over: Partial<RunRecord> = {}): RunRecord => ({
  number,
  status: 'succeeded',
  mode: 'scripted',
  fellBack,
  playbookVersion: 3,
  ...over,
});

describe('demotion', () => {
  it('demotes after the latest two ended scripted runs both fell back', () => {
    assert.equal(isDemoted([scripted(1, false), scripted(2, true), scripted(3, true)], 3), true);
    assert.equal(isDemoted([scripted(1, true), scripted(2, true), scripted(3, false)], 3), false);
    assert.equal(isDemoted([scripted(1, true)], 3), false, 'one fallback is not enough');
  });

  it('ignores runs still going, cancelled ones, other modes and runs before the graduation', () => {
    const runs = [
      scripted(1, true),
      scripted(2, true, { status: 'cancelled' }),
      scripted(3, true, { mode: 'assisted' }),
      scripted(4, true, { status: 'running' }),
    ];
    assert.equal(isDemoted(runs, 3), false, 'only run 1 counts');
    assert.equal(
      isDemoted([scripted(1, true, { playbookVersion: 2 }), scripted(2, true, { playbookVersion: 2 })], 3),
      false,
      'a new graduation resets it',
    );
    assert.equal(
      isDemoted([scripted(1, true, { playbookVersion: 3 }), scripted(2, true, { playbookVersion: 4 })], 3),
      true,
      'a repair (a later version) does not',
    );
    assert.equal(
      isDemoted([scripted(1, true, { playbookVersion: 0 }), scripted(2, true, { playbookVersion: 0 })], null),
      true,
    );
  });
});

describe('graduation eligibility', () => {
  it('tells read-only bash from ad-hoc bash', () => {
    assert.equal(isReadOnlyBash('cat /svc/input.json | jq .a && ls -la'), true);
    assert.equal(isReadOnlyBash('grep -c x f; wc -l f || echo none'), true);
    assert.equal(isReadOnlyBash('echo hi > f'), false);
    assert.equal(isReadOnlyBash('curl https://x'), false);
    assert.equal(isReadOnlyBash('cat f | sh'), false);
  });

  const run = (number: number, over: Partial<GraduationRun> = {}): GraduationRun => ({
    number,
    status: 'succeeded',
    mode: 'assisted',
    toolCalls: [
      { name: 'bash', command: 'cat /svc/input.json' },
      { name: 'toolkit__fetch' },
      { name: 'bash', command: 'svc output set n 1' },
      { name: 'finish' },
    ],
    ...over,
  });
  const input = (
    r: GraduationRun,
    previous: GraduationRun[],
    extra: Partial<Parameters<typeof graduationBlocker>[0]> = {},
  ) => ({ hasMain: false, demoted: false, run: r, latestNumber: r.number, previous, ...extra });

  it('lets three matching successful assisted runs graduate', () => {
    assert.equal(graduationBlocker(input(run(5), [run(4), run(3)])), null);
  });

  it('words every reason it refuses', () => {
    assert.equal(
      graduationBlocker(input(run(5), [run(4), run(3)], { hasMain: true })),
      'the job already runs its main script',
    );
    assert.equal(
      graduationBlocker(input(run(5), [run(4), run(3)], { hasMain: true, demoted: true })),
      null,
      'a demoted job may graduate again',
    );
    assert.match(graduationBlocker(input(run(5), [run(4), run(3)], { latestNumber: 6 }))!, /^run #6 is newer/);
    assert.match(graduationBlocker(input(run(5), [run(4)]))!, /3 successful assisted runs/);
    assert.equal(graduationBlocker(input(run(5), [run(4, { status: 'failed' }), run(3)])), 'run #4 did not succeed');
    assert.equal(
      graduationBlocker(input(run(5), [run(4), run(3, { mode: 'explore' })])),
      'run #3 ran in explore mode, not assisted',
    );
    const busy = run(4, {
      toolCalls: [
        { name: 'bash', command: 'a' },
        { name: 'bash', command: 'b' },
        { name: 'bash', command: 'c' },
        { name: 'toolkit__fetch' },
      ],
    });
    assert.equal(graduationBlocker(input(run(5), [busy, run(3)])), 'run #4 made 3 ad-hoc bash calls (at most 2)');
    const other = run(3, { toolCalls: [{ name: 'toolkit__other' }] });
    assert.equal(
      graduationBlocker(input(run(5), [run(4), other])),
      'run #3 called a different sequence of toolkit and MCP tools than run #5',
    );
  });
});
