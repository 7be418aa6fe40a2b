import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { defaultWorkspaceId } from '../../domain/workspace.js';
import { Playbooks } from '../../app/playbooks.js';
import { adminSession, Client, createToken, finishedRun, startTestServer, type TestServer } from './harness.js';

/**
 * The playbook routes (docs/design.md, "Playbook") on a real server: edits, versions, rollback, conflicts, bad
 * content, and the files a run's sandbox gets from the version it was pinned to.
 */
let t: TestServer;
let api: Client;
let token: Client;

before(async () => {
  t = await startTestServer();
  api = await adminSession(t);
  token = (await createToken(api)).client;
});
after(async () => t?.stop());

async function job(fields: Record<string, unknown> = {}): Promise<string> {
  const res = await api.post<{ id: string }>('/api/jobs', {
    name: `job ${Math.random()}`,
    instruction: 'Do it',
    selfImprove: false,
    ...fields,
  });
  assert.equal(res.status, 201, res.text);
  return res.body.id;
}

const tool = (name: string, extra = '') => ({
  name,
  content: `#!/bin/sh\n# svc:description Does ${name}\n${extra}echo ${name} "$@"\n`,
});

async function put(id: string, content: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  return api.request('PUT', `/api/jobs/${id}/playbook`, { content, ...extra });
}

describe('playbook', () => {
  it('starts as version 0, the empty playbook, and the job explores', async () => {
    const id = await job();
    const res = await token.get(`/api/jobs/${id}/playbook`);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body, {
      jobId: id,
      version: 0,
      summary: 'The empty playbook',
      author: null,
      authorId: null,
      sourceRunId: null,
      dockerfileHash: null,
      createdAt: null,
      content: { learnings: [], toolkit: [], dockerfile: null, setup: null, main: null, verify: null },
      tokens: 0,
      budget: 3000,
    });
    const j = (await api.get(`/api/jobs/${id}`)).body;
    assert.equal(j.playbookVersion, 0);
    assert.equal(j.nextMode, 'explore');
  });

  it('saves edits as new versions, reads headers again, and moves the job through its modes', async () => {
    const id = await job();
    const first = await put(
      id,
      {
        learnings: [{ text: 'The API pages by 50', when: 'listing' }],
        toolkit: [tool('fetch', '# svc:args {"site": "string"}\n')],
      },
      { baseVersion: 0 },
    );
    assert.equal(first.status, 200, first.text);
    assert.equal(first.body.version, 1);
    assert.equal(first.body.author, 'user');
    assert.equal(first.body.summary, 'Edited by hand');
    assert.ok(first.body.authorId);
    assert.deepEqual(first.body.content.learnings, [
      {
        id: 'L1',
        kind: 'fact',
        text: 'The API pages by 50',
        when: 'listing',
        hits: 0,
        status: 'active',
        sources: null,
      },
    ]);
    assert.deepEqual(first.body.content.toolkit[0], {
      name: 'fetch',
      description: 'Does fetch',
      language: 'sh',
      args: { site: 'string' },
      sideEffects: 'none',
      content: tool('fetch', '# svc:args {"site": "string"}\n').content,
      sources: null,
      calls: 0,
      failures: 0,
    });
    assert.ok(first.body.tokens > 0);
    let j = (await api.get(`/api/jobs/${id}`)).body;
    assert.deepEqual([j.playbookVersion, j.nextMode, j.graduatedVersion], [1, 'assisted', null]);

    const second = await put(
      id,
      { ...first.body.content, main: '/svc/toolkit/fetch --site hn', verify: { checks: ['exit_code == 0'] } },
      { baseVersion: 1, summary: 'Added main' },
    );
    assert.equal(second.status, 200, second.text);
    assert.equal(second.body.content.main, '#!/usr/bin/env bash\n/svc/toolkit/fetch --site hn\n');
    assert.deepEqual(second.body.content.verify, { checks: ['exit_code == 0'], llm: false, varies: [] });
    j = (await api.get(`/api/jobs/${id}`)).body;
    assert.deepEqual([j.playbookVersion, j.nextMode, j.graduatedVersion], [2, 'scripted', 2]);
    const listed = (await api.get(`/api/jobs?search=${encodeURIComponent(j.name)}`)).body.items[0];
    assert.equal(listed.nextMode, 'scripted');
  });

  it('answers 409 to an edit that started from an older version, and saves nothing', async () => {
    const id = await job();
    assert.equal((await put(id, { learnings: [{ text: 'a' }] }, { baseVersion: 0 })).status, 200);
    const stale = await put(id, { learnings: [{ text: 'b' }] }, { baseVersion: 0 });
    assert.equal(stale.status, 409, stale.text);
    assert.equal(stale.body.code, 'conflict');
    assert.match(stale.body.message, /changed since it was loaded/);
    const now = (await api.get(`/api/jobs/${id}/playbook`)).body;
    assert.equal(now.version, 1);
    assert.equal(now.content.learnings[0].text, 'a');
    assert.equal(
      (await api.request('POST', `/api/jobs/${id}/playbook/rollback`, { version: 0, baseVersion: 0 })).status,
      409,
    );
  });

  it('never loses a version to concurrent edits: one of many from the same base wins, unconditioned ones all land', async () => {
    const id = await job();
    const racing = await Promise.all(
      Array.from({ length: 6 }, (_, i) => put(id, { learnings: [{ text: `edit ${i}` }] }, { baseVersion: 0 })),
    );
    assert.deepEqual(racing.map((r) => r.status).sort(), [200, 409, 409, 409, 409, 409]);
    const blind = await Promise.all(
      Array.from({ length: 5 }, (_, i) => put(id, { learnings: [{ text: `blind ${i}` }] })),
    );
    assert.ok(
      blind.every((r) => r.status === 200),
      blind.map((r) => r.text).join('\n'),
    );
    const versions = (await api.get(`/api/jobs/${id}/playbook/versions?pageSize=100`)).body;
    assert.equal(versions.total, 6);
    assert.deepEqual(
      versions.items.map((v: { version: number }) => v.version),
      [6, 5, 4, 3, 2, 1],
    );
    const texts = new Set<string>();
    for (let v = 2; v <= 6; v++)
      texts.add((await api.get(`/api/jobs/${id}/playbook/versions/${v}`)).body.content.learnings[0].text);
    assert.deepEqual([...texts].sort(), ['blind 0', 'blind 1', 'blind 2', 'blind 3', 'blind 4']);
  });

  it('refuses bad content with validation_failed naming the field, and saves nothing', async () => {
    const id = await job({ spec: { inputs: [{ name: 'city', type: 'string' }] } });
    const cases: Array<[Record<string, unknown>, string]> = [
      [
        { toolkit: [{ name: 'x', content: '# svc:description X\n# svc:side-effects sometimes\n' }] },
        'content.toolkit[0].content',
      ],
      [
        { toolkit: [{ name: 'x', content: '# svc:description X\n# svc:args {"limit": "int"}\n' }] },
        'content.toolkit[0].content',
      ],
      [{ toolkit: [tool('top.stories'), tool('top_stories')] }, 'content.toolkit[1].name'],
      [{ toolkit: [tool('../escape')] }, 'content.toolkit[0].name'],
      [{ main: 'echo "no input read"' }, 'content.main'],
      [{ setup: 'x'.repeat(17 * 1024) }, 'content.setup'],
      [{ main: `cat /svc/input.json\n${'#'.repeat(65 * 1024)}` }, 'content.main'],
      [{ dockerfile: 'RUN echo no base' }, 'content.dockerfile'],
      [{ learnings: [{ text: 'x'.repeat(601) }] }, 'content.learnings[0].text'],
      [{ verify: { checks: ['exit code is zero'] } }, 'content.verify.checks[0]'],
      [{ verify: { checks: [], strict: true } }, 'content.verify.strict'],
      [{ learnings: [{ text: 'a', bogus: 1 }] }, 'content.learnings[0].bogus'],
    ];
    for (const [content, field] of cases) {
      const res = await put(id, content);
      assert.equal(res.status, 400, `${field}: ${res.text}`);
      assert.equal(res.body.code, 'validation_failed');
      assert.ok(
        res.body.fields.some((f: { field: string }) => f.field === field),
        `${field}: ${res.text}`,
      );
    }
    assert.equal((await api.get(`/api/jobs/${id}/playbook`)).body.version, 0);
    assert.equal((await put(id, { main: 'jq -r .city /svc/input.json' })).status, 200);
  });

  it('lists versions newest first, paginated, with search and sort', async () => {
    const id = await job();
    for (let i = 1; i <= 4; i++)
      assert.equal(
        (await put(id, { learnings: [{ text: `v${i}` }] }, { summary: i === 3 ? 'Edited learning L1' : undefined }))
          .status,
        200,
      );
    const page = await token.get(`/api/jobs/${id}/playbook/versions?pageSize=3`);
    assert.equal(page.status, 200, page.text);
    assert.deepEqual([page.body.page, page.body.pageSize, page.body.total], [1, 3, 4]);
    assert.deepEqual(
      page.body.items.map((v: { version: number }) => v.version),
      [4, 3, 2],
    );
    assert.deepEqual(Object.keys(page.body.items[0]).sort(), [
      'author',
      'authorId',
      'createdAt',
      'dockerfileHash',
      'opCount',
      'sourceRunId',
      'summary',
      'version',
    ]);
    assert.deepEqual(
      (await api.get(`/api/jobs/${id}/playbook/versions?page=2&pageSize=3`)).body.items.map(
        (v: { version: number }) => v.version,
      ),
      [1],
    );
    assert.deepEqual(
      (await api.get(`/api/jobs/${id}/playbook/versions?sort=version`)).body.items.map(
        (v: { version: number }) => v.version,
      ),
      [1, 2, 3, 4],
    );
    const found = (await api.get(`/api/jobs/${id}/playbook/versions?search=learning%20l1`)).body;
    assert.deepEqual([found.total, found.items[0].version], [1, 3]);
    const bad = await api.get(`/api/jobs/${id}/playbook/versions?sort=name`);
    assert.equal(bad.status, 400);
    assert.equal(bad.body.fields[0].field, 'sort');
    assert.equal((await api.get(`/api/jobs/${id}/playbook/versions?pageSize=101`)).status, 400);
  });

  it('shows one version with the previous content for diffs', async () => {
    const id = await job();
    await put(id, { learnings: [{ text: 'one' }] });
    await put(id, { learnings: [{ text: 'two' }], dockerfile: 'FROM debian:12\n' });
    const v2 = (await api.get(`/api/jobs/${id}/playbook/versions/2`)).body;
    assert.equal(v2.content.learnings[0].text, 'two');
    assert.equal(v2.previous.learnings[0].text, 'one');
    assert.equal(v2.ops, null);
    assert.match(v2.dockerfileHash, /^[0-9a-f]{64}$/);
    const v1 = (await api.get(`/api/jobs/${id}/playbook/versions/1`)).body;
    assert.deepEqual(v1.previous, {
      learnings: [],
      toolkit: [],
      dockerfile: null,
      setup: null,
      main: null,
      verify: null,
    });
    const v0 = (await api.get(`/api/jobs/${id}/playbook/versions/0`)).body;
    assert.deepEqual([v0.version, v0.previous, v0.createdAt], [0, null, null]);
    const missing = await api.get(`/api/jobs/${id}/playbook/versions/9`);
    assert.equal(missing.status, 404);
    assert.equal(missing.body.code, 'not_found');
    assert.equal((await api.get(`/api/jobs/${id}/playbook/versions/abc`)).status, 400);
  });

  it('rolls back as a new version; version 0 sends the job back to explore', async () => {
    const id = await job();
    await put(id, { learnings: [{ text: 'first' }] });
    await put(id, { learnings: [{ text: 'second' }], main: 'echo main' });
    const back = await api.post(`/api/jobs/${id}/playbook/rollback`, { version: 1 });
    assert.equal(back.status, 200, back.text);
    assert.deepEqual(
      [back.body.version, back.body.author, back.body.summary],
      [3, 'rollback', 'Rolled back to version 1'],
    );
    assert.equal(back.body.content.learnings[0].text, 'first');
    assert.equal(back.body.content.main, null);
    assert.equal((await api.get(`/api/jobs/${id}`)).body.nextMode, 'assisted');
    const zero = await token.post(`/api/jobs/${id}/playbook/rollback`, { version: 0 });
    assert.equal(zero.status, 200, zero.text);
    assert.deepEqual(zero.body.content, {
      learnings: [],
      toolkit: [],
      dockerfile: null,
      setup: null,
      main: null,
      verify: null,
    });
    const j = (await api.get(`/api/jobs/${id}`)).body;
    assert.deepEqual([j.playbookVersion, j.nextMode], [4, 'explore']);
    assert.equal((await api.get(`/api/jobs/${id}/playbook/versions`)).body.total, 4);
    assert.equal((await api.post(`/api/jobs/${id}/playbook/rollback`, { version: 12 })).status, 404);
    assert.equal((await api.post(`/api/jobs/${id}/playbook/rollback`, { version: -1 })).status, 400);
  });

  it('keeps secret values out of stored playbooks', async () => {
    const secret = await api.post('/api/secrets', { name: `PB_${Date.now()}`, value: 'pb-very-secret-value' });
    assert.equal(secret.status, 201, secret.text);
    const id = await job();
    const res = await put(id, {
      learnings: [{ text: 'Log in with pb-very-secret-value' }],
      setup: 'echo pb-very-secret-value',
    });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.content.learnings[0].text, 'Log in with [redacted]');
    assert.doesNotMatch(
      JSON.stringify((await api.get(`/api/jobs/${id}/playbook/versions/1`)).body),
      /pb-very-secret-value/,
    );
  });

  it('merges learning hits and script calls, kept beside the versions, into what it answers', async () => {
    const id = await job();
    await put(id, { learnings: [{ text: 'a' }, { text: 'b' }], toolkit: [tool('fetch')] });
    const s = t.server.services;
    const playbooks = new Playbooks(s.bus, s.stores.events, s.stores.docs, s.engine);
    const ctx = { workspaceId: null, actor: { type: 'system' as const, id: null }, requestId: null };
    const ws = defaultWorkspaceId;
    await playbooks.recordLearningHits(ctx, ws, id, 'run-x', ['l2', 'L2', 'L9']);
    await playbooks.recordScriptCalls(ctx, ws, id, 'run-x', [{ name: 'fetch', calls: 3, failures: 1 }]);
    await s.engine.waitFor(await s.stores.events.headPosition());
    const now = (await api.get(`/api/jobs/${id}/playbook`)).body;
    assert.deepEqual(
      now.content.learnings.map((l: { hits: number }) => l.hits),
      [0, 1],
    );
    assert.deepEqual([now.content.toolkit[0].calls, now.content.toolkit[0].failures], [3, 1]);
    // Statistics are not part of a version: saving the answer back keeps them beside it, at the same values.
    const saved = await put(id, now.content, { baseVersion: 1 });
    assert.equal(saved.status, 200, saved.text);
    assert.equal(saved.body.content.learnings[1].hits, 1);
    assert.equal(saved.body.version, 2);
  });

  it('answers 404 for unknown and archived jobs and 401 without credentials', async () => {
    const id = await job();
    assert.equal((await new Client(t.url).get(`/api/jobs/${id}/playbook`)).status, 401);
    assert.equal((await api.get('/api/jobs/nope/playbook')).status, 404);
    assert.equal((await api.delete(`/api/jobs/${id}`)).status, 204);
    for (const res of [
      await api.get(`/api/jobs/${id}/playbook`),
      await put(id, {}),
      await api.get(`/api/jobs/${id}/playbook/versions`),
      await api.post(`/api/jobs/${id}/playbook/rollback`, { version: 0 }),
    ]) {
      assert.equal(res.status, 404, res.text);
    }
  });
});

describe('playbook in the sandbox', () => {
  it('writes PLAYBOOK.md, executable toolkit scripts and main from the version the run was pinned to', async () => {
    const provider = (await api.post<{ id: string }>('/api/providers', { name: 'Fake', kind: 'fake' })).body.id;
    const model = (await api.get('/api/models')).body.items.find(
      (m: { providerId: string }) => m.providerId === provider,
    ).id;
    assert.equal((await api.patch('/api/settings', { agentModelId: model })).status, 200);
    const id = await job({
      modePin: 'assisted',
      instruction:
        'Look around: `cat /svc/PLAYBOOK.md` then `stat -c "%a %n" /svc/toolkit/fetch /svc/main` then `/svc/toolkit/fetch --site hn`',
    });
    const saved = await put(id, {
      learnings: [{ text: 'Sites are short names' }],
      toolkit: [tool('fetch', '# svc:args {"site": "string"}\n')],
      main: 'exec /svc/toolkit/fetch --site hn',
    });
    assert.equal(saved.status, 200, saved.text);
    const runId = (await api.post(`/api/jobs/${id}/runs`, {})).body.runId as string;
    const { run } = await finishedRun(api, runId);
    assert.equal(run.status, 'succeeded', JSON.stringify(run));
    assert.equal(run.playbookVersion, 1);
    assert.equal(run.mode, 'assisted');
    assert.match(run.summary, /# Playbook/);
    assert.match(run.summary, /- \[L1\] Sites are short names/);
    assert.match(run.summary, /toolkit__fetch: Does fetch/);
    assert.match(run.summary, /755 \/svc\/toolkit\/fetch/);
    assert.match(run.summary, /755 \/svc\/main/);
    assert.match(run.summary, /fetch --site hn/);
  });
});

describe('a Dockerfile in the spec of a new job', () => {
  it('becomes playbook version 1 by compile, and a bad one creates no job', async () => {
    const dockerfile = 'FROM svc-base:bookworm\nRUN apt-get install -y jq\n';
    const created = await api.post('/api/jobs', {
      name: `env ${Math.random()}`,
      instruction: 'x',
      spec: { dockerfile },
    });
    assert.equal(created.status, 201, created.text);
    assert.equal(created.body.playbookVersion, 1);
    const v1 = (await api.get(`/api/jobs/${created.body.id}/playbook/versions/1`)).body;
    assert.equal(v1.author, 'compile');
    assert.equal(v1.summary, 'Environment proposed when the job was created');
    assert.equal(v1.content.dockerfile, dockerfile);

    const before = (await api.get('/api/jobs?pageSize=1')).body.total;
    const bad = await api.post('/api/jobs', { name: 'no FROM', instruction: 'x', spec: { dockerfile: 'RUN true\n' } });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.code, 'validation_failed');
    assert.equal(bad.body.fields[0].field, 'spec.dockerfile');
    assert.equal((await api.get('/api/jobs?pageSize=1')).body.total, before, 'nothing was created');
  });
});
