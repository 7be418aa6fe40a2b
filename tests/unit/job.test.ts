import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DomainError } from '../../domain/decider.js';
import { jobDecider, type JobCommand, type JobEvent, type JobState } from '../../domain/job.js';
import type { JobFields, JobPatch } from '../../schemas/job.js';

const fold = (events: JobEvent[]): JobState => events.reduce(jobDecider.evolve, jobDecider.initialState);
const create = (fields: Partial<JobFields> = {}): JobCommand => ({
  type: 'CreateJob',
  jobId: 'j1',
  workspaceId: 'w1',
  fields: { name: 'Job', instruction: 'Do it', ...fields },
  now: 1000,
});
const patch = (p: JobPatch, now = 2000): JobCommand => ({ type: 'PatchJob', patch: p, now });
const created = (fields: Partial<JobFields> = {}) => jobDecider.decide(create(fields), jobDecider.initialState);

/** The field names of the validation error a decision throws. */
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

describe('job decider: create', () => {
  it('creates with the defaults, trimming text', () => {
    const [event] = created({ name: '  Report  ' });
    assert.equal(event!.type, 'JobCreated');
    assert.deepEqual(event!.data, {
      jobId: 'j1',
      workspaceId: 'w1',
      createdAt: 1000,
      config: {
        name: 'Report',
        instruction: 'Do it',
        spec: {},
        modelId: null,
        image: null,
        network: 'internet',
        allowedDomains: null,
        allowPrivateNetwork: false,
        runAsRoot: false,
        limits: {},
        selfImprove: true,
        modePin: null,
        concurrency: 'skip',
        cron: null,
        timezone: null,
        enabled: true,
      },
    });
  });

  it('reports every failing field at once', () => {
    const fields = refused(() =>
      created({
        name: ' ',
        instruction: 'x'.repeat(20001),
        image: 'i'.repeat(501),
        cron: '61 * * * *',
        timezone: 'Mars/Olympus',
        limits: { timeoutSeconds: 29, maxTurns: 1001 },
      }),
    );
    assert.deepEqual(fields.sort(), [
      'cron',
      'image',
      'instruction',
      'limits.maxTurns',
      'limits.timeoutSeconds',
      'name',
      'timezone',
    ]);
  });

  it('checks every limit at and just beyond its edges', () => {
    const edges: Array<[string, number, number, number, number]> = [
      ['timeoutSeconds', 30, 86400, 29, 86401],
      ['maxTurns', 1, 1000, 0, 1001],
      ['cpus', 0.1, 64, 0.09, 64.5],
      ['memoryMb', 64, 262144, 63, 262145],
      ['pidsLimit', 16, 65536, 15, 65537],
      ['diskMb', 64, 1048576, 63, 1048577],
    ];
    for (const [key, lo, hi, below, above] of edges) {
      assert.equal(created({ limits: { [key]: lo } }).length, 1, `${key}=${lo}`);
      assert.equal(created({ limits: { [key]: hi } }).length, 1, `${key}=${hi}`);
      assert.deepEqual(
        refused(() => created({ limits: { [key]: below } })),
        [`limits.${key}`],
      );
      assert.deepEqual(
        refused(() => created({ limits: { [key]: above } })),
        [`limits.${key}`],
      );
    }
    assert.equal(created({ limits: { maxCostUsd: 0 } }).length, 1);
    assert.deepEqual(
      refused(() => created({ limits: { maxCostUsd: -0.01 } })),
      ['limits.maxCostUsd'],
    );
    assert.deepEqual(
      refused(() => created({ limits: { maxTurns: 2.5 } })),
      ['limits.maxTurns'],
    );
  });

  it('normalises allowed domains and refuses addresses and URLs', () => {
    const [e] = created({
      network: 'allowlist',
      allowedDomains: [' API.Example.COM. ', '*.example.org', 'api.example.com'],
    });
    assert.deepEqual((e as Extract<JobEvent, { type: 'JobCreated' }>).data.config.allowedDomains, [
      'api.example.com',
      '*.example.org',
    ]);
    assert.deepEqual(
      refused(() =>
        created({
          allowedDomains: ['10.0.0.1', 'https://a.com', 'a.com:443', 'localhost', '-bad.com', '[::1]', 'ok.com'],
        }),
      ),
      [
        'allowedDomains[0]',
        'allowedDomains[1]',
        'allowedDomains[2]',
        'allowedDomains[3]',
        'allowedDomains[4]',
        'allowedDomains[5]',
      ],
    );
    assert.deepEqual(
      refused(() => created({ network: 'allowlist' })),
      ['allowedDomains'],
    );
  });

  it('refuses duplicate input and output names in the spec', () => {
    assert.deepEqual(
      refused(() =>
        created({
          spec: {
            inputs: [
              { name: 'a', type: 'string' },
              { name: ' a ', type: 'number' },
            ],
            outputs: [
              { name: 'x', type: 'string' },
              { name: 'x', type: 'string' },
            ],
          },
        }),
      ),
      ['spec.inputs', 'spec.outputs'],
    );
  });

  it('refuses to create a job twice', () => {
    assert.throws(
      () => jobDecider.decide(create(), fold(created())),
      (e: unknown) => e instanceof DomainError && e.code === 'conflict',
    );
  });
});

describe('job decider: patch and archive', () => {
  const base = created({
    cron: '0 9 * * *',
    timezone: 'Europe/Berlin',
    image: 'debian',
    modePin: 'assisted',
    modelId: 'm1',
    network: 'allowlist',
    allowedDomains: ['a.com'],
  });
  const state = fold(base);

  it('emits only the changed fields, and nothing for a no-op', () => {
    const events = jobDecider.decide(patch({ name: 'Job', instruction: 'New', image: 'debian' }), state);
    assert.deepEqual(events, [{ type: 'JobUpdated', data: { changes: { instruction: 'New' }, updatedAt: 2000 } }]);
    assert.deepEqual(jobDecider.decide(patch({ name: 'Job' }), state), []);
  });

  it('clears optional text with an empty string', () => {
    const [e] = jobDecider.decide(patch({ cron: '', timezone: '', image: '', modePin: '', modelId: '' }), state);
    assert.deepEqual((e as Extract<JobEvent, { type: 'JobUpdated' }>).data.changes, {
      cron: null,
      timezone: null,
      image: null,
      modePin: null,
      modelId: null,
    });
  });

  it('toggles enabled with events of its own, after the other changes', () => {
    const events = jobDecider.decide(patch({ enabled: false, concurrency: 'queue' }), state);
    assert.deepEqual(
      events.map((e) => e.type),
      ['JobUpdated', 'JobDisabled'],
    );
    const off = fold([...base, ...events]);
    assert.equal(off.status === 'active' && off.config.enabled, false);
    assert.deepEqual(
      jobDecider.decide(patch({ enabled: true }), off).map((e) => e.type),
      ['JobEnabled'],
    );
  });

  it('keeps the allow-list rule on the merged state', () => {
    assert.deepEqual(
      refused(() => jobDecider.decide(patch({ allowedDomains: [] }), state)),
      ['allowedDomains'],
    );
    const open = fold(created());
    assert.deepEqual(
      refused(() => jobDecider.decide(patch({ network: 'allowlist' }), open)),
      ['allowedDomains'],
    );
    assert.equal(jobDecider.decide(patch({ network: 'allowlist', allowedDomains: ['b.com'] }), open).length, 1);
  });

  it('replaces the limits overrides whole', () => {
    const withLimits = fold(created({ limits: { timeoutSeconds: 60, maxTurns: 5 } }));
    const [e] = jobDecider.decide(patch({ limits: { maxTurns: 7 } }), withLimits);
    assert.deepEqual((e as Extract<JobEvent, { type: 'JobUpdated' }>).data.changes, { limits: { maxTurns: 7 } });
  });

  it('archives; an archived or missing job is not found for every command', () => {
    const archived = fold([...base, ...jobDecider.decide({ type: 'ArchiveJob', now: 3000 }, state)]);
    assert.equal(archived.status, 'archived');
    for (const s of [archived, jobDecider.initialState]) {
      for (const cmd of [patch({ name: 'x' }), { type: 'ArchiveJob', now: 4000 } as JobCommand]) {
        assert.throws(
          () => jobDecider.decide(cmd, s),
          (e: unknown) => e instanceof DomainError && e.code === 'not_found',
        );
      }
    }
  });
});
