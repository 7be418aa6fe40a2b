import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DomainError } from '../../domain/decider.js';
import {
  emptyContent,
  isEmptyPlaybook,
  playbookDecider,
  validateContent,
  type PlaybookContent,
  type PlaybookEvent,
  type SavePlaybook,
} from '../../domain/playbook.js';
import {
  emptyPlaybookText,
  playbookBudget,
  playbookFiles,
  playbookMarkdown,
  playbookTokens,
  renderPlaybook,
  renderWithinBudget,
} from '../../domain/playbook-render.js';
import { playbookStatsDecider, withStats } from '../../domain/playbook-stats.js';
import type { ContentInput } from '../../schemas/playbook.js';

const tool = (name: string, extra = '') => ({
  name,
  content: `#!/bin/sh\n# svc:description Does ${name}\n${extra}echo ${name}\n`,
});

/** The field names of the validation error `fn` throws. */
function refused(fn: () => unknown): string[] {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof DomainError);
    assert.equal(err.code, 'validation_failed');
    return (err.fields ?? []).map((f) => f.field);
  }
  assert.fail('expected a validation error');
}

const valid = (c: ContentInput, declaresInputs = false) => validateContent(c, { declaresInputs });

describe('playbook content on save', () => {
  it('normalizes: lists never null, blank texts null, ids and kinds filled in, headers read again', () => {
    const c = valid({
      learnings: [{ text: ' Use the API ', kind: 'Deploy Notes' }, { id: 'L7', text: 'B', hits: 9 }, { text: 'C' }],
      toolkit: [tool('fetch', '# svc:args {"q": "string"}\n')],
      main: '  ',
      setup: '',
      dockerfile: null,
    });
    assert.deepEqual(
      c.learnings.map((l) => [l.id, l.kind, l.text, l.hits, l.status]),
      [
        ['L8', 'deploy_notes', 'Use the API', 0, 'active'],
        ['L7', 'fact', 'B', 0, 'active'],
        ['L9', 'fact', 'C', 0, 'active'],
      ],
    );
    assert.deepEqual(c.toolkit[0]!.args, { q: 'string' });
    assert.equal(c.toolkit[0]!.description, 'Does fetch');
    assert.equal(c.toolkit[0]!.language, 'sh');
    assert.equal(c.main, null);
    assert.equal(c.setup, null);
    assert.equal(c.verify, null);
    assert.deepEqual(valid({}), emptyContent());
  });

  it('refuses bad headers, duplicate tools, a main without the input, oversized parts, naming each field', () => {
    assert.deepEqual(
      refused(() =>
        valid({ toolkit: [{ name: 'x', content: '# svc:description X\n# svc:side-effects sometimes\n' }] }),
      ),
      ['content.toolkit[0].content'],
    );
    assert.deepEqual(
      refused(() => valid({ toolkit: [{ name: 'x', content: 'echo no description\n' }] })),
      ['content.toolkit[0].content'],
    );
    assert.deepEqual(
      refused(() => valid({ toolkit: [{ name: 'x', content: '# svc:name y\n# svc:description Y\n' }] })),
      ['content.toolkit[0].content'],
    );
    assert.deepEqual(
      refused(() => valid({ toolkit: [tool('top.stories'), tool('top_stories')] })),
      ['content.toolkit[1].name'],
    );
    assert.deepEqual(
      refused(() => valid({ toolkit: [tool('a'), tool('a')] })),
      ['content.toolkit[1].name'],
    );
    assert.deepEqual(
      refused(() => valid({ toolkit: [tool('../x')] })),
      ['content.toolkit[0].name'],
    );
    assert.deepEqual(
      refused(() => valid({ main: 'echo hi' }, true)),
      ['content.main'],
    );
    assert.equal(valid({ main: 'jq . /svc/input.json' }, true).main, '#!/usr/bin/env bash\njq . /svc/input.json\n');
    assert.deepEqual(
      refused(() => valid({ toolkit: [{ name: 'big', content: `# svc:description B\n${'x'.repeat(70_000)}` }] })),
      ['content.toolkit[0].content'],
    );
    assert.deepEqual(
      refused(() => valid({ setup: 'x'.repeat(17_000) })),
      ['content.setup'],
    );
    assert.deepEqual(
      refused(() => valid({ dockerfile: 'RUN true' })),
      ['content.dockerfile'],
    );
    assert.deepEqual(
      refused(() => valid({ learnings: [{ text: 'x'.repeat(601) }] })),
      ['content.learnings[0].text'],
    );
    assert.deepEqual(
      refused(() =>
        valid({
          learnings: [
            { id: 'L1', text: 'a' },
            { id: 'l1', text: 'b' },
          ],
        }),
      ),
      ['content.learnings[1].id'],
    );
    assert.deepEqual(
      refused(() => valid({ verify: { checks: ['exit_code is 0'] } })),
      ['content.verify.checks[0]'],
    );
    assert.deepEqual(
      refused(() => valid({ toolkit: Array.from({ length: 21 }, (_, i) => tool(`t${i}`)) })),
      ['content.toolkit'],
    );
    // Several problems are reported together.
    assert.deepEqual(
      refused(() => valid({ setup: 'x'.repeat(17_000), main: 'echo' }, true)),
      ['content.main', 'content.setup'],
    );
  });

  it('refuses content whose render would pass the 3,000-token budget', () => {
    const learnings = Array.from({ length: 30 }, (_, i) => ({ text: `${i} ${'word '.repeat(100)}`.trim() }));
    assert.deepEqual(
      refused(() => valid({ learnings })),
      ['content'],
    );
  });
});

describe('playbook versions', () => {
  const save = (content: PlaybookContent, extra: Partial<SavePlaybook> = {}): SavePlaybook => ({
    type: 'SavePlaybook',
    jobId: 'j1',
    workspaceId: 'w1',
    content,
    baseVersion: null,
    summary: 'Edited by hand',
    author: 'user',
    authorId: 'u1',
    sourceRunId: null,
    ops: null,
    dockerfileHash: null,
    proposedMain: false,
    rolledBackFrom: null,
    now: 1000,
    ...extra,
  });
  const fold = (events: PlaybookEvent[]) => events.reduce(playbookDecider.evolve, playbookDecider.initialState);

  it('numbers versions from 1 and refuses a change that started from an older version', () => {
    const [v1] = playbookDecider.decide(
      save(valid({ learnings: [{ text: 'a' }] }), { baseVersion: 0 }),
      playbookDecider.initialState,
    );
    assert.equal(v1!.data.version, 1);
    const state = fold([v1!]);
    assert.throws(
      () => playbookDecider.decide(save(emptyContent(), { baseVersion: 0 }), state),
      (e: unknown) => e instanceof DomainError && e.code === 'conflict',
    );
    assert.equal(playbookDecider.decide(save(emptyContent(), { baseVersion: 1 }), state)[0]!.data.version, 2);
    assert.throws(
      () => playbookDecider.decide(save(emptyContent(), { workspaceId: 'w2' }), state),
      (e: unknown) => e instanceof DomainError && e.code === 'not_found',
    );
  });

  it('graduates when main first appears or reflection proposed it, and stores no statistics', () => {
    const withMain = valid({ main: 'echo hi' });
    const [v1] = playbookDecider.decide(
      save({
        ...withMain,
        learnings: [{ id: 'L1', kind: 'fact', text: 'a', hits: 5, status: 'active', sources: null }],
      }),
      playbookDecider.initialState,
    );
    assert.equal(v1!.data.graduated, true);
    assert.equal(v1!.data.content.learnings[0]!.hits, 0);
    const [v2] = playbookDecider.decide(save(withMain), fold([v1!]));
    assert.equal(v2!.data.graduated, false);
    const [v3] = playbookDecider.decide(save(withMain, { proposedMain: true }), fold([v1!, v2!]));
    assert.equal(v3!.data.graduated, true);
  });

  it('is empty without active learnings, toolkit and main', () => {
    assert.equal(isEmptyPlaybook(emptyContent()), true);
    const retired = valid({
      learnings: [{ text: 'a', status: 'retired' }],
      setup: 'apt-get install jq',
      dockerfile: 'FROM x',
    });
    assert.equal(isEmptyPlaybook(retired), true);
    assert.equal(isEmptyPlaybook(valid({ learnings: [{ text: 'a' }] })), false);
    assert.equal(isEmptyPlaybook(valid({ toolkit: [tool('t')] })), false);
    assert.equal(isEmptyPlaybook(valid({ main: 'echo' })), false);
  });
});

describe('rendering', () => {
  const content = valid({
    learnings: [
      { text: 'The API pages by 50', when: 'listing items' },
      { text: 'gone', status: 'retired' },
      { text: 'Dates are UTC' },
    ],
    toolkit: [
      tool('fetch'),
      { name: 'post', content: '#!/bin/sh\n# svc:description Posts the digest\n# svc:side-effects external\n' },
    ],
    setup: 'apt-get install -y jq',
    main: 'echo main',
    verify: { checks: ['exit_code == 0'] },
  });

  it('renders active learnings and the toolkit, not setup, Dockerfile, main or verify', () => {
    const text = renderPlaybook(content);
    assert.equal(
      text,
      [
        '## Learnings',
        '- [L1] The API pages by 50 (when listing items)',
        '- [L3] Dates are UTC',
        '',
        '## Toolkit',
        'Scripts proven in earlier runs. Call them as tools, or run them as /svc/toolkit/<name> with `--name value` flags.',
        '- toolkit__fetch: Does fetch',
        '- toolkit__post: Posts the digest (has external side effects)',
      ].join('\n'),
    );
    assert.equal(playbookTokens(content), Math.ceil(text.length / 4));
    assert.equal(playbookMarkdown(content), `# Playbook\n\n${text}\n`);
    assert.equal(playbookMarkdown(emptyContent()), emptyPlaybookText);
  });

  it('cuts a render over the budget item by item, saying how many were left out', () => {
    const big: PlaybookContent = {
      ...emptyContent(),
      learnings: Array.from({ length: 60 }, (_, i) => ({
        id: `L${i + 1}`,
        kind: 'fact',
        text: 'x'.repeat(400),
        hits: 0,
        status: 'active' as const,
        sources: null,
      })),
    };
    const cut = renderWithinBudget(big);
    assert.ok(cut.length <= playbookBudget * 4, `${cut.length}`);
    assert.match(cut, /\(\d+ more item\(s\) left out/);
    assert.ok(playbookMarkdown(big).length <= playbookBudget * 4);
  });

  it('gives the sandbox PLAYBOOK.md, executable toolkit scripts and main', () => {
    const files = playbookFiles(content);
    assert.deepEqual(
      files.map((f) => [f.path, f.mode]),
      [
        ['/svc/PLAYBOOK.md', 0o644],
        ['/svc/toolkit/fetch', 0o755],
        ['/svc/toolkit/post', 0o755],
        ['/svc/main', 0o755],
      ],
    );
    assert.equal(files[3]!.content, '#!/usr/bin/env bash\necho main\n');
    assert.deepEqual(
      playbookFiles(emptyContent()).map((f) => f.path),
      ['/svc/PLAYBOOK.md'],
    );
  });
});

describe('playbook statistics', () => {
  it('counts hits and script calls as totals, merged into the content on read', () => {
    const s0 = playbookStatsDecider.initialState;
    const [e1] = playbookStatsDecider.decide(
      { type: 'CountLearningHits', jobId: 'j', workspaceId: 'w', runId: 'r1', ids: ['L1', 'l1', 'L2'] },
      s0,
    );
    assert.deepEqual(e1!.data, {
      jobId: 'j',
      workspaceId: 'w',
      runId: 'r1',
      ids: ['L1', 'L2'],
      learnings: [
        { id: 'L1', hits: 1 },
        { id: 'L2', hits: 1 },
      ],
    });
    const s1 = playbookStatsDecider.evolve(s0, e1!);
    const [e2] = playbookStatsDecider.decide(
      { type: 'CountLearningHits', jobId: 'j', workspaceId: 'w', runId: 'r2', ids: ['L1'] },
      s1,
    );
    const s2 = playbookStatsDecider.evolve(s1, e2!);
    const [e3] = playbookStatsDecider.decide(
      {
        type: 'CountScriptCalls',
        jobId: 'j',
        workspaceId: 'w',
        runId: 'r2',
        counts: [
          { name: 'fetch', calls: 3, failures: 1 },
          { name: 'idle', calls: 0, failures: 0 },
        ],
      },
      s2,
    );
    const s3 = playbookStatsDecider.evolve(s2, e3!);
    assert.deepEqual(s3, {
      learnings: [
        { id: 'L1', hits: 2 },
        { id: 'L2', hits: 1 },
      ],
      scripts: [{ name: 'fetch', calls: 3, failures: 1 }],
    });
    assert.deepEqual(
      playbookStatsDecider.decide(
        { type: 'CountLearningHits', jobId: 'j', workspaceId: 'w', runId: null, ids: [] },
        s3,
      ),
      [],
    );
    const merged = withStats(valid({ learnings: [{ text: 'a' }], toolkit: [tool('fetch')] }), s3);
    assert.equal(merged.learnings[0]!.hits, 2);
    assert.deepEqual([merged.toolkit[0]!.calls, merged.toolkit[0]!.failures], [3, 1]);
  });
});
