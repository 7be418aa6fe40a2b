import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { jobImagesDecider, jobImagesStreamId } from '../../domain/image.js';
import type { CommandContext } from '../../app/commands.js';
import { Images, noBuilderMessage, RunImageError } from '../../app/images.js';
import { staysFalse, waitFor } from '../wait.js';
import { adminSession, Client, createToken, startTestServer, userSession, type TestServer } from '../api/harness.js';

/**
 * The images routes and the run image resolution on a server without a builder (no runner role): builds stay
 * queued, so what is read and what a run would do can be checked without an engine. Builds themselves are in
 * images-docker.test.ts.
 */
let t: TestServer;
let admin: Client;
let memberToken: Client;
let workspaceId: string;

const dockerfile = 'FROM svc-base:bookworm\nRUN echo hello > /hello\n';

before(async () => {
  t = await startTestServer({ SVC_ROLES: 'api,projector' });
  admin = await adminSession(t);
  const member = (await userSession(t, admin, 'images-member@example.com')).client;
  memberToken = (await createToken(member)).client;
  workspaceId = (await admin.get<{ workspaceId: string }>('/api/users/me')).body.workspaceId;
});
after(async () => t?.stop());

async function newJob(): Promise<string> {
  const res = await admin.post<{ id: string }>('/api/jobs', {
    name: `images ${Math.random()}`,
    instruction: 'Build an image',
  });
  assert.equal(res.status, 201, res.text);
  return res.body.id;
}

const ctx = (): CommandContext => ({ workspaceId, actor: { type: 'system', id: null }, requestId: null });

/** The service layer, as the playbook calls it after a save with a Dockerfile. */
async function ensure(jobId: string, text = dockerfile): Promise<string | null> {
  const { images, engine } = t.server.services;
  const queued = await images.ensureBuild(ctx(), workspaceId, jobId, text);
  await engine.waitFor(queued.position, 2000);
  return queued.imageId;
}

describe('images routes', () => {
  it('answers 404 for an unknown job and an empty envelope for a job without builds', async () => {
    assert.equal((await admin.get('/api/jobs/nope/images')).status, 404);
    const jobId = await newJob();
    const list = await memberToken.get(`/api/jobs/${jobId}/images`);
    assert.equal(list.status, 200, list.text);
    assert.deepEqual(list.body, { items: [], page: 1, pageSize: 25, total: 0 });
  });

  it('lists a queued build once per Dockerfile, with the detail giving the Dockerfile and its (empty) log', async () => {
    const jobId = await newJob();
    const imageId = await ensure(jobId);
    assert.ok(imageId);
    assert.equal(await ensure(jobId, `\n${dockerfile}\n\n`), null, 'the same trimmed Dockerfile queues nothing new');
    const list = await admin.get(`/api/jobs/${jobId}/images`);
    assert.equal(list.body.total, 1);
    const item = list.body.items[0];
    assert.deepEqual(
      Object.keys(item).sort(),
      [
        'baseDigest',
        'createdAt',
        'digest',
        'dockerfileHash',
        'error',
        'finishedAt',
        'id',
        'ref',
        'sizeBytes',
        'startedAt',
        'status',
      ].sort(),
    );
    assert.equal(item.id, imageId);
    assert.equal(item.status, 'queued');
    assert.match(item.dockerfileHash, /^[0-9a-f]{64}$/);
    assert.equal(item.ref, null);

    const detail = await memberToken.get(`/api/jobs/${jobId}/images/${imageId}`);
    assert.equal(detail.status, 200, detail.text);
    assert.equal(detail.body.dockerfile, dockerfile);
    assert.equal(detail.body.log, '');
    assert.equal((await admin.get(`/api/jobs/${jobId}/images/unknown`)).status, 404);
    const otherJob = await newJob();
    assert.equal(
      (await admin.get(`/api/jobs/${otherJob}/images/${imageId}`)).status,
      404,
      'an image is read through its own job only',
    );
  });

  it('filters by status, sorts by createdAt, status and sizeBytes, and refuses other keys', async () => {
    const jobId = await newJob();
    const first = await ensure(jobId, 'FROM svc-base:bookworm\nRUN true\n');
    // Rows of the same millisecond tie on createdAt and fall back to their ids, which are random within a millisecond.
    const firstMs = Date.now();
    await waitFor('the clock to pass the first image', () => Date.now() > firstMs, { intervalMs: 1 });
    const second = await ensure(jobId, 'FROM svc-base:bookworm\nRUN false\n');
    const newest = await admin.get(`/api/jobs/${jobId}/images`);
    assert.deepEqual(
      newest.body.items.map((i: { id: string }) => i.id),
      [second, first],
      'newest first by default',
    );
    const oldest = await admin.get(`/api/jobs/${jobId}/images?sort=createdAt&pageSize=1`);
    assert.deepEqual(
      oldest.body.items.map((i: { id: string }) => i.id),
      [first],
    );
    assert.equal(oldest.body.total, 2);
    assert.equal((await admin.get(`/api/jobs/${jobId}/images?sort=-sizeBytes,status`)).status, 200);
    assert.equal((await admin.get(`/api/jobs/${jobId}/images?status=ready`)).body.total, 0);
    assert.equal((await admin.get(`/api/jobs/${jobId}/images?status=queued,building`)).body.total, 2);
    const badStatus = await admin.get(`/api/jobs/${jobId}/images?status=done`);
    assert.equal(badStatus.status, 400);
    assert.equal(badStatus.body.fields[0].field, 'status');
    const badSort = await admin.get(`/api/jobs/${jobId}/images?sort=name`);
    assert.equal(badSort.status, 400);
    assert.equal(badSort.body.code, 'validation_failed');
    assert.equal(badSort.body.fields[0].field, 'sort');
    assert.equal((await admin.get(`/api/jobs/${jobId}/images?pageSize=101`)).status, 400);
    const hash = newest.body.items[0].dockerfileHash as string;
    const found = await admin.get(`/api/jobs/${jobId}/images?search=${hash.slice(0, 12).toUpperCase()}`);
    assert.deepEqual(
      found.body.items.map((i: { id: string }) => i.id),
      [second],
      'search covers the hash, case-insensitively',
    );
  });

  it('rebuild answers 422 unsupported while the playbook has no Dockerfile, and 404 for an unknown job', async () => {
    const jobId = await newJob();
    const res = await memberToken.post(`/api/jobs/${jobId}/images/rebuild`);
    assert.equal(res.status, 422, res.text);
    assert.equal(res.body.code, 'unsupported');
    assert.match(res.body.message, /no Dockerfile/);
    assert.equal((await admin.post('/api/jobs/nope/images/rebuild')).status, 404);
  });

  it('publishes ImageDto, GetOutputBody and ImageIDOutputBody closed to unknown fields', async () => {
    const doc = (await new Client(t.url).get('/api/openapi.json')).body;
    const schemas = doc.components.schemas;
    assert.deepEqual(
      [...schemas.ImageDto.required].sort(),
      [
        'baseDigest',
        'createdAt',
        'digest',
        'dockerfileHash',
        'error',
        'finishedAt',
        'id',
        'ref',
        'sizeBytes',
        'startedAt',
        'status',
      ].sort(),
    );
    assert.equal(schemas.ImageDto.additionalProperties, false);
    assert.ok(schemas.GetOutputBody.required.includes('dockerfile') && schemas.GetOutputBody.required.includes('log'));
    assert.deepEqual(schemas.ImageIDOutputBody.required, ['id']);
    assert.ok(doc.paths['/api/jobs/{id}/images/{imageId}'].get);
    assert.ok(doc.paths['/api/jobs/{id}/images/rebuild'].post);
  });
});

describe('run image resolution (service layer)', () => {
  /** An Images service whose playbook answers `text` for every job: the source the playbook will supply. */
  const withDockerfile = (text: string | null) =>
    new Images(t.server.services.bus, t.server.services.stores.docs, t.server.services.images.logs, async () => text);
  const request = (
    jobId: string,
    signal: AbortSignal,
    extra: { canBuild?: boolean; onWait?: (m: string) => void } = {},
  ) => ({
    workspaceId,
    jobId,
    playbookVersion: 1,
    fallback: 'job-image:1',
    canBuild: extra.canBuild ?? true,
    signal,
    onWait: extra.onWait,
  });

  it('uses the job image or the workspace default when the playbook has no Dockerfile', async () => {
    const resolved = await withDockerfile(null).resolveRunImage(request(await newJob(), new AbortController().signal));
    assert.deepEqual(resolved, { image: 'job-image:1', build: null });
  });

  it('refuses a Dockerfile on a runner that cannot build images', async () => {
    await assert.rejects(
      withDockerfile(dockerfile).resolveRunImage(
        request(await newJob(), new AbortController().signal, { canBuild: false }),
      ),
      (err: Error) => {
        assert.ok(err instanceof RunImageError);
        assert.equal(err.message, noBuilderMessage);
        return true;
      },
    );
  });

  it('queues the missing build, says once that it waits, and stops waiting when the signal aborts', async () => {
    const jobId = await newJob();
    const abort = new AbortController();
    const waits: string[] = [];
    const resolving = withDockerfile(dockerfile).resolveRunImage(
      request(jobId, abort.signal, { onWait: (m) => waits.push(m) }),
    );
    await waitFor('the first wait message', () => waits.length > 0);
    // "Once" is an absence: the resolver polls every 2 s, so 2.5 s without a second message covers a poll.
    await staysFalse('a second wait message', () => waits.length > 1, 2_500);
    const aborted = Date.now();
    abort.abort(new Error('deadline'));
    await assert.rejects(resolving, /deadline/);
    assert.ok(Date.now() - aborted < 5000, 'the wait ends at once when aborted, not at its next poll');
    assert.equal(waits.length, 1);
    assert.match(waits[0]!, /Waiting for the job image/);
    const { state } = await t.server.services.bus.load(jobImagesStreamId(jobId), jobImagesDecider);
    assert.equal(state.images.length, 1, 'resolution queued the build nobody had asked for');
  });

  it("fails with the latest build's error, and never takes another Dockerfile's ready image", async () => {
    const jobId = await newJob();
    const { bus } = t.server.services;
    // A builder's part, played through the same commands: v1 ready, v2 failed.
    const build = async (text: string, outcome: 'ready' | 'failed') => {
      const imageId = (await ensure(jobId, text))!;
      await bus.execute(
        jobImagesStreamId(jobId),
        jobImagesDecider,
        { type: 'ClaimBuild', imageId, builderId: 'b', now: Date.now() },
        ctx(),
      );
      const command =
        outcome === 'ready'
          ? {
              type: 'CompleteBuild' as const,
              imageId,
              builderId: 'b',
              ref: `svc/job-${jobId}:v1`,
              digest: 'sha256:1',
              baseDigest: null,
              sizeBytes: 1,
              now: Date.now(),
            }
          : {
              type: 'FailBuild' as const,
              imageId,
              builderId: 'b',
              error: "The command '/bin/sh -c exit 3' returned a non-zero code: 3",
              baseDigest: null,
              interrupted: false,
              now: Date.now(),
            };
      await bus.execute(jobImagesStreamId(jobId), jobImagesDecider, command, ctx());
    };
    const v2 = 'FROM svc-base:bookworm\nRUN exit 3\n';
    await build(dockerfile, 'ready');
    await build(v2, 'failed');
    const signal = new AbortController().signal;
    const ready = await withDockerfile(dockerfile).resolveRunImage(request(jobId, signal));
    assert.equal(ready.image, `svc/job-${jobId}:v1`);
    await assert.rejects(withDockerfile(v2).resolveRunImage(request(jobId, signal)), (err: Error) => {
      assert.ok(err instanceof RunImageError);
      assert.equal(
        err.message,
        "Environment build failed: The command '/bin/sh -c exit 3' returned a non-zero code: 3",
      );
      return true;
    });
  });
});
