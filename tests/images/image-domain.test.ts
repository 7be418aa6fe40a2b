import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DomainError } from '../../domain/decider.js';
import {
  dockerfileHash,
  firstExternalBase,
  imageTag,
  imagesToCollect,
  jobImagesDecider,
  pinnedDockerfile,
  runImageChoice,
  staleAfterMs,
  type ImageCommand,
  type ImageRow,
  type JobImagesState,
} from '../../domain/image.js';
import { nextGcAt } from '../../runner/image-gc.js';

const base = { jobId: 'job-1', workspaceId: 'ws' };
const v1 = 'FROM svc-base:bookworm\nRUN echo one\n';
const v2 = 'FROM svc-base:bookworm\nRUN echo two\n';

function run(state: JobImagesState, command: ImageCommand) {
  const events = jobImagesDecider.decide(command, state);
  return { events, state: events.reduce(jobImagesDecider.evolve, state) };
}
const ensure = (state: JobImagesState, imageId: string, dockerfile: string, now = 1000) =>
  run(state, { type: 'EnsureBuild', imageId, ...base, dockerfile, reason: 'playbook', now });
const claim = (state: JobImagesState, imageId: string, builderId = 'b1', now = 2000) =>
  run(state, { type: 'ClaimBuild', imageId, builderId, now }).state;
const complete = (state: JobImagesState, imageId: string, builderId = 'b1') =>
  run(state, {
    type: 'CompleteBuild',
    imageId,
    builderId,
    ref: `svc/job-job-1:${imageId}`,
    digest: 'sha256:abc',
    baseDigest: null,
    sizeBytes: 10,
    now: 3000,
  }).state;
const fail = (state: JobImagesState, imageId: string, interrupted = false, builderId = 'b1') =>
  run(state, {
    type: 'FailBuild',
    imageId,
    builderId,
    error: 'RUN exited with 3',
    baseDigest: null,
    interrupted,
    now: 3000,
  }).state;
const code = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    return (err as DomainError).code;
  }
  return null;
};
const empty = jobImagesDecider.initialState;

describe('job image names', () => {
  it('hashes the trimmed Dockerfile, so surrounding whitespace makes no new image', () => {
    assert.equal(dockerfileHash(`\n  ${v1}  \n`), dockerfileHash(v1));
    assert.match(dockerfileHash(v1), /^[0-9a-f]{64}$/);
    assert.notEqual(dockerfileHash(v1), dockerfileHash(v2));
  });

  it('tags svc/job-<jobId>:<hash[:16]>-<last 12 hex of the image id>', () => {
    const hash = dockerfileHash(v1);
    const tag = imageTag('0190a0b0-0000-7000-8000-00000000abcd', hash, '0190a0b1-1111-7222-8333-444455556666');
    assert.equal(tag, `svc/job-0190a0b0-0000-7000-8000-00000000abcd:${hash.slice(0, 16)}-444455556666`);
  });

  it('pins the first external FROM only, keeping --platform and stage names', () => {
    const text = 'FROM --platform=linux/amd64 debian:bookworm AS build\nRUN make\nFROM build\nFROM alpine:3\n';
    assert.deepEqual(firstExternalBase(text), { image: 'debian:bookworm', line: 0 });
    const pinned = pinnedDockerfile(text, 'sha256:1234');
    assert.equal(pinned.split('\n')[0], 'FROM --platform=linux/amd64 debian@sha256:1234 AS build');
    assert.equal(pinned.split('\n')[3], 'FROM alpine:3');
    assert.equal(pinnedDockerfile(text, null), text);
  });

  it('does not pin a base that has a digest, scratch, a build argument, or a registry port mistaken for a tag', () => {
    assert.equal(firstExternalBase('FROM debian@sha256:aa\n'), null);
    assert.equal(firstExternalBase('FROM scratch\nCOPY a b\n'), null);
    assert.equal(firstExternalBase('ARG B=debian\nFROM $B\n'), null);
    assert.equal(pinnedDockerfile('FROM localhost:5000/tools\n', 'sha256:ff'), 'FROM localhost:5000/tools@sha256:ff\n');
  });
});

describe('job images decider', () => {
  it('EnsureBuild queues once per Dockerfile, and nothing more while it is queued, building or ready', () => {
    let { events, state } = ensure(empty, 'i1', v1);
    assert.deepEqual(
      events.map((e) => e.type),
      ['ImageQueued'],
    );
    assert.equal(ensure(state, 'i2', `${v1}\n\n`).events.length, 0);
    state = claim(state, 'i1');
    assert.equal(ensure(state, 'i2', v1, 2500).events.length, 0);
    state = complete(state, 'i1');
    assert.equal(ensure(state, 'i2', v1).events.length, 0);
    ({ events } = ensure(state, 'i3', v2));
    assert.equal(events[0]?.type, 'ImageQueued', 'another Dockerfile gets its own build');
  });

  it('EnsureBuild queues a new row after a failure; the failed row stays', () => {
    let { state } = ensure(empty, 'i1', v1);
    state = fail(claim(state, 'i1'), 'i1');
    const again = ensure(state, 'i2', v1, 4000);
    assert.equal(again.events[0]?.type, 'ImageQueued');
    assert.deepEqual(
      again.state.images.map((i) => [i.imageId, i.status]),
      [
        ['i1', 'failed'],
        ['i2', 'queued'],
      ],
    );
  });

  it('EnsureBuild resubmits a build with no progress for 25 minutes', () => {
    let { state } = ensure(empty, 'i1', v1, 0);
    state = claim(state, 'i1', 'b1', 1000);
    assert.equal(ensure(state, 'x', v1, 1000 + staleAfterMs).events.length, 0);
    const stale = ensure(state, 'x', v1, 1001 + staleAfterMs);
    assert.deepEqual(
      stale.events.map((e) => e.type),
      ['ImageRequeued'],
    );
    assert.equal(stale.state.images[0]?.status, 'queued');
    // The old builder's late answer is refused: the image is someone else's now.
    assert.equal(
      code(() =>
        jobImagesDecider.decide(
          {
            type: 'CompleteBuild',
            imageId: 'i1',
            builderId: 'b1',
            ref: 'r',
            digest: 'd',
            baseDigest: null,
            sizeBytes: 1,
            now: 5,
          },
          stale.state,
        ),
      ),
      'conflict',
    );
  });

  it('claims once: a second claimant is refused', () => {
    const { state } = ensure(empty, 'i1', v1);
    const claimed = claim(state, 'i1', 'b1');
    assert.equal(claimed.images[0]?.status, 'building');
    assert.equal(
      code(() => claim(claimed, 'i1', 'b2')),
      'conflict',
    );
    assert.equal(
      code(() => claim(claimed, 'nope', 'b2')),
      'not_found',
    );
  });

  it('retries an interrupted build once, then fails it; an engine error fails at once', () => {
    let { state } = ensure(empty, 'i1', v1);
    state = fail(claim(state, 'i1'), 'i1', true);
    assert.equal(state.images[0]?.status, 'queued');
    state = fail(claim(state, 'i1', 'b2'), 'i1', true, 'b2');
    assert.equal(state.images[0]?.status, 'failed');
    assert.equal(state.images[0]?.attempts, 2);

    let other = ensure(empty, 'k1', v2).state;
    other = fail(claim(other, 'k1'), 'k1', false);
    assert.equal(other.images[0]?.status, 'failed');
    assert.equal(other.images[0]?.error, 'RUN exited with 3');
  });

  it('Rebuild always queues a fresh row, and refuses an empty Dockerfile as unsupported', () => {
    let { state } = ensure(empty, 'i1', v1);
    state = complete(claim(state, 'i1'), 'i1');
    const rebuilt = run(state, { type: 'Rebuild', imageId: 'i2', ...base, dockerfile: v1, now: 9000 });
    assert.equal(rebuilt.state.images.length, 2);
    assert.equal(
      code(() => run(state, { type: 'Rebuild', imageId: 'i3', ...base, dockerfile: '  ', now: 9000 })),
      'unsupported',
    );
  });
});

describe('run image choice', () => {
  it('uses the latest ready build of the hash, else an older ready one, never another Dockerfile', () => {
    let { state } = ensure(empty, 'old', v1);
    state = complete(claim(state, 'old'), 'old');
    state = run(state, { type: 'Rebuild', imageId: 'new', ...base, dockerfile: v1, now: 5000 }).state;
    let choice = runImageChoice(state, dockerfileHash(v1));
    assert.equal(choice.kind === 'use' && choice.image.imageId, 'old', 'a rebuild in progress does not hold runs back');
    state = complete(claim(state, 'new'), 'new');
    choice = runImageChoice(state, dockerfileHash(v1));
    assert.equal(choice.kind === 'use' && choice.image.imageId, 'new');
    assert.equal(runImageChoice(state, dockerfileHash(v2)).kind, 'missing', 'the ready v1 image is no answer for v2');
  });

  it('answers the failure when no build of the hash is ready, and waits while one is on its way', () => {
    let { state } = ensure(empty, 'a', v2);
    assert.equal(runImageChoice(state, dockerfileHash(v2)).kind, 'wait');
    state = claim(state, 'a');
    assert.equal(runImageChoice(state, dockerfileHash(v2)).kind, 'wait');
    state = fail(state, 'a');
    const choice = runImageChoice(state, dockerfileHash(v2));
    assert.equal(choice.kind, 'failed');
    assert.equal(choice.kind === 'failed' && choice.image.error, 'RUN exited with 3');
  });

  it('prefers an older ready build of the same hash over a later failure', () => {
    let { state } = ensure(empty, 'ok', v1);
    state = complete(claim(state, 'ok'), 'ok');
    state = run(state, { type: 'Rebuild', imageId: 'broken', ...base, dockerfile: v1, now: 5000 }).state;
    state = fail(claim(state, 'broken'), 'broken');
    const choice = runImageChoice(state, dockerfileHash(v1));
    assert.equal(choice.kind === 'use' && choice.image.imageId, 'ok');
  });
});

describe('image GC', () => {
  const row = (imageId: string, hash: string, status: ImageRow['status']): ImageRow => ({
    imageId,
    dockerfileHash: hash,
    dockerfile: 'FROM x',
    status,
    ref: status === 'ready' ? `svc/job-j:${imageId}` : null,
    digest: null,
    baseDigest: null,
    sizeBytes: null,
    error: null,
    createdAt: 0,
    startedAt: null,
    finishedAt: null,
    attempts: 0,
    builderId: null,
    progressAt: 0,
  });

  it('keeps the newest ready and the latest build of each recent Dockerfile, never a live build', () => {
    const rows = [
      row('a1', 'A', 'ready'),
      row('a2', 'A', 'ready'),
      row('a3', 'A', 'failed'),
      row('b1', 'B', 'ready'),
      row('c1', 'C', 'building'),
      row('d1', 'D', 'failed'),
    ];
    assert.deepEqual(
      imagesToCollect(rows, new Set(['A'])).map((r) => r.imageId),
      ['a1', 'b1', 'd1'],
    );
    assert.deepEqual(
      imagesToCollect(rows, new Set(['A', 'B', 'D'])).map((r) => r.imageId),
      ['a1'],
    );
  });

  it('runs daily at 04:43 UTC with up to 10 minutes of jitter', () => {
    const before = Date.UTC(2026, 10, 23, 3, 0);
    assert.equal(
      nextGcAt(before, () => 0),
      Date.UTC(2026, 10, 23, 4, 43),
    );
    assert.equal(
      nextGcAt(Date.UTC(2026, 10, 23, 5, 0), () => 0.5),
      Date.UTC(2026, 10, 24, 4, 43) + 5 * 60_000,
    );
  });
});
