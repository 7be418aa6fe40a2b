import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { emptyContent, validateContent, type PlaybookContent } from '../../domain/playbook.js';
import { applyOp, applyOps, tokensOverBudget, type OpContext, type PlaybookOp } from '../../domain/playbook-ops.js';

const ctx: OpContext = {
  runId: 'run1',
  secretValues: ['hunter2-secret'],
  declaresInputs: false,
  jobImage: 'svc-base:bookworm',
  graduationBlocked: null,
};
const op = (o: Partial<PlaybookOp> & { op: string }): PlaybookOp => ({
  rationale: 'because',
  id: null,
  kind: null,
  text: null,
  when: null,
  name: null,
  content: null,
  ...o,
});
const script = (name: string, extra = '') =>
  `#!/bin/sh\n# svc:name ${name}\n# svc:description Does ${name}\n${extra}echo ${name}\n`;
const start = (): PlaybookContent =>
  validateContent(
    {
      learnings: [{ text: 'Pages hold 50 items' }, { text: 'Old', status: 'retired' }],
      toolkit: [{ name: 'fetch', content: script('fetch') }],
    },
    { declaresInputs: false },
  );

describe('ops on a scratch copy', () => {
  it('adds, updates and retires learnings, never touching the content passed in', () => {
    const c = start();
    const before = JSON.stringify(c);
    const { content, results } = applyOps(
      c,
      [
        op({ op: 'add_learning', text: 'Dates are UTC', kind: 'Time Zones', when: 'parsing dates' }),
        op({ op: 'update_learning', id: 'l2', text: 'Old, but back' }),
        op({ op: 'retire_learning', id: 'L1' }),
      ],
      ctx,
    );
    assert.equal(JSON.stringify(c), before);
    assert.deepEqual(
      results.map((r) => [r.status, r.target]),
      [
        ['applied', 'L3'],
        ['applied', 'L2'],
        ['applied', 'L1'],
      ],
    );
    assert.deepEqual(
      content.learnings.map((l) => [l.id, l.status, l.kind, l.sources]),
      [
        ['L1', 'retired', 'fact', null],
        ['L2', 'active', 'fact', ['run1']],
        ['L3', 'active', 'time_zones', ['run1']],
      ],
    );
    assert.equal(content.learnings[2]!.when, 'parsing dates');
  });

  it('rejects with reasons and carries on with the next op', () => {
    const { content, results } = applyOps(
      start(),
      [
        op({ op: 'add_learning', text: 'pages hold 50 ITEMS' }),
        op({ op: 'add_learning', text: '' }),
        op({ op: 'add_learning', text: 'x'.repeat(601) }),
        op({ op: 'update_learning', id: 'L9', text: 'x' }),
        op({ op: 'retire_learning', id: 'L2' }),
        op({ op: 'delete_script', name: 'nope' }),
        op({ op: 'update_main', content: 'echo' }),
        op({ op: 'set_dockerfile', content: 'RUN true' }),
        op({ op: 'set_verify', content: '{"checks": ["exit_code is 0"]}' }),
        op({ op: 'set_verify', content: 'not json' }),
        op({ op: 'frobnicate' }),
        op({ op: 'add_learning', text: 'Still applied' }),
      ],
      ctx,
    );
    assert.deepEqual(
      results.map((r) => r.status),
      [...Array(11).fill('rejected'), 'applied'],
    );
    assert.match(results[0]!.reason!, /L1 already says this; use update_learning/);
    assert.match(results[4]!.reason!, /already retired/);
    assert.match(results[6]!.reason!, /no main script/);
    assert.ok(results.every((r) => r.status === 'applied' || (r.reason ?? '') !== ''));
    assert.deepEqual(
      content.learnings.map((l) => l.text),
      ['Pages hold 50 items', 'Old', 'Still applied'],
    );
  });

  it('upserts scripts from their headers, keeping names unique as tools and at most 20', () => {
    const c = start();
    const added = applyOp(
      c,
      op({ op: 'upsert_script', content: script('top.stories', '# svc:args {"limit": "integer?"}\n') }),
      ctx,
    );
    assert.equal(added.result.status, 'applied');
    assert.deepEqual(added.content.toolkit[1]!.args, { limit: 'integer?' });
    assert.deepEqual(added.content.toolkit[1]!.sources, ['run1']);
    const clash = applyOp(
      added.content,
      op({ op: 'upsert_script', name: 'top_stories', content: '# svc:description X\n' }),
      ctx,
    );
    assert.match(clash.result.reason!, /same tool/);
    assert.match(
      applyOp(c, op({ op: 'upsert_script', name: 'other', content: script('fetch') }), ctx).result.reason!,
      /svc:name says "fetch"/,
    );
    assert.match(
      applyOp(c, op({ op: 'upsert_script', content: '# svc:description X\n' }), ctx).result.reason!,
      /needs a name/,
    );
    assert.match(
      applyOp(c, op({ op: 'upsert_script', name: 'x', content: 'echo hi\n' }), ctx).result.reason!,
      /svc:description/,
    );
    assert.match(
      applyOp(c, op({ op: 'upsert_script', name: 'x', content: '# svc:description X\n# svc:side-effects lots\n' }), ctx)
        .result.reason!,
      /side-effects/,
    );
    const updated = applyOp(
      { ...c, toolkit: [{ ...c.toolkit[0]!, calls: 4 }] },
      op({ op: 'upsert_script', name: 'fetch', content: script('fetch', '# v2\n') }),
      ctx,
    );
    assert.equal(updated.content.toolkit.length, 1);
    assert.equal(updated.content.toolkit[0]!.calls, 4);
    let full = c;
    for (let i = 0; i < 19; i++)
      full = applyOp(full, op({ op: 'upsert_script', content: script(`s${i}`) }), ctx).content;
    assert.equal(full.toolkit.length, 20);
    assert.match(
      applyOp(full, op({ op: 'upsert_script', content: script('one-more') }), ctx).result.reason!,
      /delete or merge one first/,
    );
    assert.equal(applyOp(full, op({ op: 'delete_script', name: 'fetch' }), ctx).content.toolkit.length, 19);
  });

  it('holds secret values and credential-shaped text instead of applying them, and keeps no secret in the record', () => {
    const held = applyOps(
      start(),
      [
        op({ op: 'add_learning', text: 'The password is hunter2-secret' }),
        op({ op: 'upsert_script', content: script('gh', 'export TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123\n') }),
        op({ op: 'set_setup', content: 'echo AKIAABCDEFGHIJKLMNOP' }),
        op({ op: 'add_learning', text: 'Key -----BEGIN RSA PRIVATE KEY----- inside' }),
        op({ op: 'add_learning', text: 'Use eyJhbGciOiJIUzI1.eyJzdWIiOiIxMjM0.SflKxwRJSMeKKF2QT4f' }),
      ],
      ctx,
    );
    assert.deepEqual(
      held.results.map((r) => r.status),
      ['held', 'held', 'held', 'held', 'held'],
    );
    assert.ok(held.results.every((r) => r.flags!.some((f) => f.startsWith('needs review'))));
    assert.equal(held.results[0]!.text, 'The password is [redacted]');
    assert.doesNotMatch(JSON.stringify(held.results), /hunter2-secret/);
    assert.deepEqual(held.content, start());
  });

  it('applies a learning with a URL, with a warning flag', () => {
    const { result } = applyOp(start(), op({ op: 'add_learning', text: 'Docs at https://example.com/api' }), ctx);
    assert.equal(result.status, 'applied');
    assert.equal(result.flags!.length, 1);
    assert.match(result.flags![0]!, /URL/);
  });

  it('holds a Dockerfile from an unknown image, applies one from the job image', () => {
    assert.equal(
      applyOp(
        start(),
        op({ op: 'set_dockerfile', content: 'FROM svc-base:bookworm\nRUN apt-get install -y jq\n' }),
        ctx,
      ).result.status,
      'applied',
    );
    const risky = applyOp(start(), op({ op: 'set_dockerfile', content: 'FROM someone/else\n' }), ctx);
    assert.equal(risky.result.status, 'held');
    assert.equal(risky.content.dockerfile, null);
  });

  it('proposes main only when the server says the job is eligible, and checks the input reference', () => {
    const blocked = applyOp(start(), op({ op: 'propose_main', content: 'echo hi' }), {
      ...ctx,
      graduationBlocked: 'run #3 is newer',
    });
    assert.equal(blocked.result.reason, 'propose_main is not allowed yet: run #3 is newer');
    assert.match(
      applyOp(start(), op({ op: 'propose_main', content: 'echo hi' }), { ...ctx, declaresInputs: true }).result.reason!,
      /\/svc\/input\.json/,
    );
    const proposed = applyOp(start(), op({ op: 'propose_main', content: 'jq .city /svc/input.json' }), {
      ...ctx,
      declaresInputs: true,
    });
    assert.equal(proposed.result.status, 'applied');
    assert.equal(proposed.content.main, '#!/usr/bin/env bash\njq .city /svc/input.json\n');
    const updated = applyOp(
      proposed.content,
      op({ op: 'update_main', content: '#!/bin/sh\n/svc/toolkit/fetch\n' }),
      ctx,
    );
    assert.equal(updated.content.main, '#!/bin/sh\n/svc/toolkit/fetch\n');
    const verify = applyOp(
      updated.content,
      op({ op: 'set_verify', content: '{"checks": ["exit_code == 0"], "llm": false, "varies": []}' }),
      ctx,
    );
    assert.deepEqual(verify.content.verify, { checks: ['exit_code == 0'], llm: false, varies: [] });
    assert.equal(applyOp(verify.content, op({ op: 'set_verify', content: null }), ctx).content.verify, null);
  });

  it('measures the excess over the budget', () => {
    assert.equal(tokensOverBudget(emptyContent()), 0);
    let c = emptyContent();
    for (let i = 0; i < 30; i++)
      c = applyOp(c, op({ op: 'add_learning', text: `${i} ${'y'.repeat(500)}` }), ctx).content;
    assert.ok(tokensOverBudget(c) > 0);
  });
});
