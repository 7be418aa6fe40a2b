import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  checksFor,
  fallbackBrief,
  filePaths,
  runChecks,
  sameValue,
  scriptedSummary,
  verdictExcerpt,
  type VerifyFacts,
} from '../../domain/verify-run.js';

const facts = (over: Partial<VerifyFacts> = {}): VerifyFacts => ({
  exitCode: 0,
  outputs: {},
  stdout: '',
  files: {},
  ...over,
});

describe('scripted run verification', () => {
  it('orders the built-in exit check, declared outputs, then the playbook checks, skipping repeats', () => {
    const checks = checksFor(['count', 'report'], {
      checks: ['output.count  exists', 'exit_code == 0', 'output.count > 3'],
      llm: false,
      varies: [],
    });
    assert.deepEqual(checks, ['exit_code == 0', 'output.count exists', 'output.report exists', 'output.count > 3']);
    assert.deepEqual(checksFor([], null), ['exit_code == 0']);
  });

  it('judges every kind of check and names the first failure', () => {
    const checks = [
      'exit_code == 0',
      'output.n >= 2',
      'output.s == "ok"',
      'output.o == {"b":2,"a":1}',
      'file /svc/outputs/r.csv exists',
      'stdout contains "done"',
      'exit_code != 3',
    ];
    const pass = runChecks(
      checks,
      facts({
        outputs: { n: '2', s: 'ok', o: { a: 1, b: 2 } },
        stdout: 'all done\n',
        files: { '/svc/outputs/r.csv': true },
      }),
    );
    assert.equal(pass.failure, null);
    assert.ok(pass.results.every((r) => r.passed));
    const fail = runChecks(checks, facts({ exitCode: 3, outputs: { n: 1, s: 'no' }, stdout: '', files: {} }));
    assert.equal(fail.failure, 'the check "exit_code == 0" failed: the exit code was 3');
    assert.deepEqual(
      fail.results.map((r) => r.passed),
      [false, false, false, false, false, false, false],
    );
    assert.equal(fail.results[1]!.detail, 'the output n was 1');
    assert.equal(fail.results[3]!.detail, 'the output o was not set');
    assert.equal(fail.results[4]!.detail, '/svc/outputs/r.csv does not exist');
  });

  it('counts a null output as not set and refuses ordering on non-numbers', () => {
    const r = runChecks(['output.a exists', 'output.b > 1'], facts({ outputs: { a: null, b: 'many' } }));
    assert.equal(r.results[0]!.detail, 'the output a was not set');
    assert.equal(r.results[1]!.detail, 'the output b was "many", not a number');
  });

  it('compares numbers numerically and the rest by canonical JSON', () => {
    assert.equal(sameValue(42, '42'), true);
    assert.equal(sameValue(1, 1.0), true);
    assert.equal(sameValue('1', '01'), false);
    assert.equal(sameValue([1, { y: 1, x: 2 }], [1, { x: 2, y: 1 }]), true);
    assert.equal(sameValue(true, 'true'), false);
  });

  it('lists the paths file checks need', () => {
    assert.deepEqual(filePaths(['file /workspace/a exists', 'exit_code == 0', 'file /svc/outputs/b exists']), [
      '/workspace/a',
      '/svc/outputs/b',
    ]);
  });

  it('summarises with svc summary, else the verdict, else the end of the output', () => {
    assert.equal(scriptedSummary('mine', 'verdict', 'out'), 'mine');
    assert.equal(scriptedSummary(null, 'verdict', 'out'), 'verdict');
    const fixed = scriptedSummary(null, null, `${'x'.repeat(2000)}END`);
    assert.match(fixed, /^The main script did the job\.\n\n```\nx+END\n```$/);
    assert.equal(fixed.length, 'The main script did the job.\n\n```\n'.length + 1500 + '\n```'.length);
  });

  it('shows the verifier the first 2,000 and last 4,000 characters', () => {
    const text = `${'a'.repeat(3000)}${'b'.repeat(5000)}`;
    const excerpt = verdictExcerpt(text);
    assert.ok(excerpt.startsWith('a'.repeat(2000) + '\n[… 2000 characters left out …]\n'));
    assert.ok(excerpt.endsWith('b'.repeat(4000)));
    assert.equal(verdictExcerpt('short'), 'short');
  });

  it('briefs the agent on a fallback with the reason, last step, output and actions', () => {
    const brief = fallbackBrief({
      reason: 'the check "exit_code == 0" failed: the exit code was 1',
      lastStep: 'upload',
      exitCode: 1,
      output: 'boom',
      outputs: { a: 1 },
      actions: [{ server: 'crm', tool: 'create', args: '{"x":1}', ok: true }],
    });
    assert.match(brief, /fell short: the check "exit_code == 0" failed/);
    assert.match(brief, /The last step it marked with svc step was "upload"/);
    assert.match(brief, /```\nboom\n```/);
    assert.match(brief, /\{"a":1\}/);
    assert.match(brief, /- crm\.create with \{"x":1\} \(succeeded\)/);
    assert.match(
      fallbackBrief({ reason: 'r', lastStep: null, exitCode: -1, output: '', outputs: {}, actions: [] }),
      /No action with side effects went through the broker/,
    );
  });
});
