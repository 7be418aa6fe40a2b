import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { dockerfileHash, jobImagesDecider, jobImagesStreamId } from '../../domain/image.js';
import { dockerClient } from '../../adapters/sandbox/docker.js';
import type { CommandContext } from '../../app/commands.js';
import { Images } from '../../app/images.js';
import { waitFor } from '../wait.js';
import { adminSession, Client, startTestServer, type TestServer } from '../api/harness.js';

/**
 * Job images built by a real Docker engine (docs/design.md, "Images"). The playbook is what calls EnsureBuild after a
 * save; until it exists these tests call the service the same way, and read the results over HTTP. No registry is
 * reachable here, so pinning the base fails and the build must go on from the tag, saying so in its log.
 */
const host = process.env.SVC_DOCKER_HOST;

if (!host) {
  console.log(
    '[images] docker image builds SKIPPED: SVC_DOCKER_HOST is not set (npm test starts dockerd when docker.io is installed)',
  );
  it(
    'job images built by docker',
    { skip: 'SVC_DOCKER_HOST is not set: install docker.io (scripts/prepare-host.sh) so npm test can start dockerd' },
    () => {},
  );
} else {
  let t: TestServer;
  let admin: Client;
  let workspaceId: string;
  const docker = dockerClient(host);
  const refs: string[] = [];

  before(async () => {
    t = await startTestServer({ SVC_ROLES: 'api,projector,runner', SVC_SANDBOX: 'docker', SVC_DOCKER_HOST: host });
    admin = await adminSession(t);
    workspaceId = (await admin.get<{ workspaceId: string }>('/api/users/me')).body.workspaceId;
    const info = await admin.get('/api/system/info');
    assert.equal(info.body.sandbox?.imageBuilds, true);
    assert.equal(info.body.sandbox?.error, null, 'the docker backend is usable');
  });
  after(async () => {
    await t?.stop();
    for (const ref of refs)
      await docker
        .getImage(ref)
        .remove()
        .catch(() => undefined);
  });

  const ctx = (): CommandContext => ({ workspaceId, actor: { type: 'system', id: null }, requestId: null });

  async function newJob(): Promise<string> {
    const res = await admin.post<{ id: string }>('/api/jobs', {
      name: `image ${Math.random()}`,
      instruction: 'Use the job image',
    });
    assert.equal(res.status, 201, res.text);
    return res.body.id;
  }

  async function ensure(jobId: string, dockerfile: string): Promise<string> {
    const queued = await t.server.services.images.ensureBuild(ctx(), workspaceId, jobId, dockerfile);
    assert.ok(queued.imageId, 'a build was queued');
    return queued.imageId;
  }

  /** Reads the image over HTTP until its build has ended. */
  async function settled(jobId: string, imageId: string, timeoutMs = 180_000): Promise<Record<string, any>> {
    const image = await waitFor(
      `the build of image ${imageId} to end`,
      async () => {
        const res = await admin.get(`/api/jobs/${jobId}/images/${imageId}`);
        return res.status === 200 && (res.body.status === 'ready' || res.body.status === 'failed') && res.body;
      },
      { timeoutMs, intervalMs: 250 },
    );
    if (image.ref) refs.push(image.ref);
    return image;
  }

  describe('job images built by docker', () => {
    it('builds a Dockerfile into a tagged image, keeps its log, and notes that the base could not be pinned', async () => {
      const jobId = await newJob();
      const dockerfile = 'FROM svc-base:bookworm\nRUN echo "built by svc" > /built && cat /built\n';
      const imageId = await ensure(jobId, dockerfile);
      const image = await settled(jobId, imageId);
      assert.equal(image.status, 'ready', image.log);
      const hash = dockerfileHash(dockerfile);
      assert.equal(image.dockerfileHash, hash);
      assert.equal(image.ref, `svc/job-${jobId}:${hash.slice(0, 16)}-${imageId.replace(/-/g, '').slice(-12)}`);
      assert.match(image.digest, /^sha256:[0-9a-f]{64}$/);
      assert.ok(image.sizeBytes > 0);
      assert.equal(image.baseDigest, null, 'no registry: nothing to pin to');
      assert.equal(image.error, null);
      assert.ok(image.startedAt >= image.createdAt && image.finishedAt >= image.startedAt);
      assert.equal(image.dockerfile, dockerfile);
      assert.match(image.log, /Resolving svc-base:bookworm/);
      assert.match(image.log, /Could not pin svc-base:bookworm to a digest \(.+\); building from the tag/);
      assert.match(image.log, /built by svc/);
      assert.ok(image.log.includes(`Built ${image.ref} (`), image.log);

      const inspected = await docker.getImage(image.ref).inspect();
      assert.equal(inspected.Id, image.digest);
      assert.equal(inspected.Config.Labels?.['svc.job'], jobId);
      assert.equal(inspected.Config.Labels?.['svc.image'], imageId);

      const list = await admin.get(`/api/jobs/${jobId}/images?status=ready`);
      assert.deepEqual(
        list.body.items.map((i: { id: string }) => i.id),
        [imageId],
      );
      assert.equal(
        await t.server.services.images.ensureBuild(ctx(), workspaceId, jobId, dockerfile).then((r) => r.imageId),
        null,
        'a ready build is not built again',
      );
    });

    it('fails a broken Dockerfile with the engine error and keeps the log; EnsureBuild then queues a new row', async () => {
      const jobId = await newJob();
      const dockerfile = 'FROM svc-base:bookworm\nRUN echo "about to fail" && exit 3\n';
      const first = await ensure(jobId, dockerfile);
      const failed = await settled(jobId, first);
      assert.equal(failed.status, 'failed');
      assert.match(failed.error, /non-zero code: 3/);
      assert.equal(failed.ref, null);
      assert.match(failed.log, /about to fail/);
      assert.match(failed.log, /Build failed: .*non-zero code: 3/);

      const second = await ensure(jobId, dockerfile);
      assert.notEqual(second, first);
      await settled(jobId, second);
      const list = await admin.get(`/api/jobs/${jobId}/images?sort=createdAt`);
      assert.deepEqual(
        list.body.items.map((i: { id: string; status: string }) => [i.id, i.status]),
        [
          [first, 'failed'],
          [second, 'failed'],
        ],
      );
      assert.match(
        (await admin.get(`/api/jobs/${jobId}/images/${first}`)).body.log,
        /about to fail/,
        'the old log stays',
      );
    });

    it('a run waits for its image and then gets this very build', async () => {
      const jobId = await newJob();
      const dockerfile = 'FROM svc-base:bookworm\nRUN sleep 2 && echo slow > /slow\n';
      const images = new Images(
        t.server.services.bus,
        t.server.services.stores.docs,
        t.server.services.images.logs,
        async () => dockerfile,
      );
      const waits: string[] = [];
      const resolved = await images.resolveRunImage({
        workspaceId,
        jobId,
        playbookVersion: 1,
        fallback: 'svc-base:bookworm',
        canBuild: true,
        signal: AbortSignal.timeout(120_000),
        onWait: (m) => waits.push(m),
      });
      assert.equal(waits.length, 1, 'the run said it was waiting');
      assert.ok(resolved.image?.startsWith(`svc/job-${jobId}:${dockerfileHash(dockerfile).slice(0, 16)}-`));
      refs.push(resolved.image!);
      assert.equal(resolved.build?.status, 'ready');
      await docker.getImage(resolved.image!).inspect();
    });

    it('rebuilds a ready image this engine lost, under the same tag, once for concurrent runs', async () => {
      const jobId = await newJob();
      const imageId = await ensure(jobId, 'FROM svc-base:bookworm\nRUN echo again > /again\n');
      const image = await settled(jobId, imageId);
      await docker.getImage(image.ref).remove();
      const { state } = await t.server.services.bus.load(jobImagesStreamId(jobId), jobImagesDecider);
      const row = state.images.find((i) => i.imageId === imageId)!;
      const builder = t.server.services.runner!.imageBuilder!;
      await Promise.all([builder.ensureLocal(row, jobId), builder.ensureLocal(row, jobId)]);
      const inspected = await docker.getImage(image.ref).inspect();
      assert.ok(inspected.Id.startsWith('sha256:'));
    });

    it('says a builder is there, and still answers 422 to a rebuild while the playbook has no Dockerfile', async () => {
      assert.equal(await t.server.services.images.builderAvailable(), true);
      const res = await admin.post(`/api/jobs/${await newJob()}/images/rebuild`);
      assert.equal(res.status, 422);
      assert.match(res.body.message, /no Dockerfile/);
    });

    it('a playbook save with a Dockerfile queues its build, and the next run waits for it and runs inside it', async () => {
      const provider = (
        await admin.post<{ id: string }>('/api/providers', { name: `Fake ${Math.random()}`, kind: 'fake' })
      ).body.id;
      const model = (await admin.get('/api/models')).body.items.find(
        (m: { providerId: string }) => m.providerId === provider,
      ).id;
      await admin.patch('/api/settings', { agentModelId: model });
      const job = await admin.post<{ id: string }>('/api/jobs', {
        name: `image run ${Math.random()}`,
        instruction: 'Report it with `svc output set marker "$(cat /opt/marker)"`.',
        selfImprove: false,
      });
      const saved = await admin.request('PUT', `/api/jobs/${job.body.id}/playbook`, {
        content: { dockerfile: `FROM svc-base:bookworm\nRUN echo built-${Date.now()} > /opt/marker\n` },
      });
      assert.equal(saved.status, 200, saved.text);
      const listed = (await admin.get(`/api/jobs/${job.body.id}/images`)).body.items;
      assert.equal(listed.length, 1, 'the save queued one build');
      const run = await admin.post(`/api/jobs/${job.body.id}/runs`, {});
      const r = await waitFor(
        'the run to end',
        async () => {
          const got = (await admin.get(`/api/runs/${run.body.runId}`)).body;
          return ['succeeded', 'failed', 'timed_out', 'cancelled'].includes(got.status) && got;
        },
        { timeoutMs: 300_000, intervalMs: 250 },
      );
      assert.equal(r.status, 'succeeded', r.error);
      assert.match(String(r.outputs.marker), /^built-\d+$/, 'the run ran inside the job image');
      const image = await settled(job.body.id, listed[0].id);
      assert.equal(image.status, 'ready');
      const events = (await admin.get(`/api/runs/${run.body.runId}/events?limit=2000`)).body as Array<{
        type: string;
        payload: Record<string, any>;
      }>;
      assert.equal(events.find((e) => e.type === 'sandbox.create')!.payload.image, image.ref);
    });

    it('reflection builds a changed Dockerfile before saving it, and rejects one that does not build', async () => {
      const provider = (
        await admin.post<{ id: string }>('/api/providers', { name: `Fake ${Math.random()}`, kind: 'fake' })
      ).body.id;
      const model = (await admin.get('/api/models')).body.items.find(
        (m: { providerId: string }) => m.providerId === provider,
      ).id;
      await admin.patch('/api/settings', { agentModelId: model });
      const job = (
        await admin.post<{ id: string }>('/api/jobs', {
          name: `reflect image ${Math.random()}`,
          instruction: 'Report it with `svc output set answer 42`.',
          selfImprove: false,
        })
      ).body.id;
      const run = (await admin.post(`/api/jobs/${job}/runs`, {})).body.runId as string;
      const settledRun = () =>
        waitFor(
          'the run and its reflection to end',
          async () => {
            const r = (await admin.get(`/api/runs/${run}`)).body;
            const settled =
              !['queued', 'provisioning', 'running', 'verifying'].includes(r.status) && r.reflection !== 'pending';
            return settled && (r as Record<string, any>);
          },
          { timeoutMs: 240_000, intervalMs: 100 },
        );
      await settledRun();
      const dockerfileOp = (content: string) => ({
        op: 'set_dockerfile',
        rationale: 'r',
        id: null,
        kind: null,
        text: null,
        when: null,
        name: null,
        content,
      });
      const answer = (...ops: unknown[]) => ({ text: JSON.stringify({ summary: 's', usedLearnings: [], ops }) });
      await admin.post(`/api/providers/${provider}/script`, {
        responses: [answer(dockerfileOp('FROM svc-base:bookworm\nRUN exit 7\n')), answer()],
        reset: true,
      });
      await admin.post(`/api/runs/${run}/learn`, {});
      const broken = await settledRun();
      assert.equal(broken.reflection, 'done', broken.reflectionError);
      assert.equal(
        (await admin.get(`/api/jobs/${job}/playbook`)).body.version,
        0,
        'a Dockerfile that does not build is not saved',
      );
      assert.equal(broken.reflectionOps.length, 0, 'the second attempt answered no ops');

      const good = `FROM svc-base:bookworm\nRUN echo reflected-${Date.now()} > /opt/reflected\n`;
      await admin.post(`/api/providers/${provider}/script`, { responses: [answer(dockerfileOp(good))], reset: true });
      await admin.post(`/api/runs/${run}/learn`, {});
      const built = await settledRun();
      assert.equal(built.reflection, 'done', built.reflectionError);
      assert.equal(built.reflectionOps[0].status, 'applied');
      assert.equal((await admin.get(`/api/jobs/${job}/playbook`)).body.content.dockerfile, good);
      const images = (await admin.get(`/api/jobs/${job}/images`)).body.items as Array<{
        status: string;
        ref: string | null;
      }>;
      const ready = images.find((i) => i.status === 'ready');
      assert.ok(ready, `the Dockerfile was built before the save: ${JSON.stringify(images)}`);
      if (ready.ref) refs.push(ready.ref);
    });

    it('image GC removes builds no recent playbook version uses, engine image first, and keeps the ones in use', async () => {
      const jobId = await newJob();
      const stray = await settled(jobId, await ensure(jobId, `FROM svc-base:bookworm\nRUN echo stray-${Date.now()}\n`));
      assert.equal(stray.status, 'ready');
      const kept = `FROM svc-base:bookworm\nRUN echo kept-${Date.now()}\n`;
      assert.equal(
        (await admin.request('PUT', `/api/jobs/${jobId}/playbook`, { content: { dockerfile: kept } })).status,
        200,
      );
      const keptId = (await admin.get(`/api/jobs/${jobId}/images?status=queued,building,ready`)).body.items.find(
        (i: { id: string }) => i.id !== stray.id,
      ).id as string;
      const keptImage = await settled(jobId, keptId);
      const gc = t.server.services.runner!.imageGc!;
      const removed = await gc.collect();
      assert.ok(removed.builds >= 1);
      assert.equal((await admin.get(`/api/jobs/${jobId}/images/${stray.id}`)).status, 404, 'the unused build is gone');
      assert.equal(
        await docker
          .getImage(stray.ref)
          .inspect()
          .then(
            () => true,
            () => false,
          ),
        false,
        'and its engine image',
      );
      assert.equal(
        (await admin.get(`/api/jobs/${jobId}/images/${keptImage.id}`)).body.status,
        'ready',
        'the build in use stays',
      );
      assert.equal(
        await docker
          .getImage(keptImage.ref)
          .inspect()
          .then(
            () => true,
            () => false,
          ),
        true,
      );
    });

    // Last: it stops this server's builder.
    it('puts a build interrupted by a shutdown back in the queue for another runner', async () => {
      const jobId = await newJob();
      const imageId = await ensure(jobId, 'FROM svc-base:bookworm\nRUN sleep 60\n');
      await waitFor(
        'the build to start',
        async () => (await admin.get(`/api/jobs/${jobId}/images/${imageId}`)).body.status === 'building',
        { timeoutMs: 60_000, intervalMs: 100 },
      );
      const stopping = Date.now();
      await t.server.services.runner!.imageBuilder!.stop();
      assert.ok(Date.now() - stopping < 20_000, 'the build was stopped, not waited for');
      const { state } = await t.server.services.bus.load(jobImagesStreamId(jobId), jobImagesDecider);
      const row = state.images.find((i) => i.imageId === imageId)!;
      assert.equal(row.status, 'queued');
      assert.equal(row.attempts, 1);
      assert.match(
        await t.server.services.images.logs.read(imageId),
        /Build interrupted: the build was interrupted by a shutdown/,
      );
      assert.equal(await t.server.services.images.builderAvailable(), false, 'a stopped builder no longer counts');
    });
  });
}
