import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fastJson from 'fast-json-stringify';
import { serializerSchema, stripIds } from '../../api/validation.js';
import { JobDto, JobListEnvelope } from '../../schemas/job.js';

type Schema = Parameters<typeof fastJson>[0];

/** Every `anyOf` left in a schema, by path. */
function unions(schema: unknown, path = '', out: string[] = []): string[] {
  if (Array.isArray(schema)) schema.forEach((s, i) => unions(s, `${path}[${i}]`, out));
  else if (schema !== null && typeof schema === 'object')
    for (const [k, v] of Object.entries(schema)) {
      if (k === 'anyOf') out.push(path);
      unions(v, `${path}.${k}`, out);
    }
  return out;
}

const lastRun = { id: 'r-1', number: 3, status: 'succeeded', queuedAt: 1795767656946 };
const job = {
  id: '01a21c17-e1f1-7a1a-9058-c19ff9836731',
  name: 'Bench "job" 2\u2028é',
  instruction: 'Count the files in the workspace.',
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
  nextRunAt: null,
  enabled: true,
  playbookVersion: 0,
  hasWebhookToken: false,
  createdAt: 1795767656946,
  updatedAt: 1795767656946,
  lastRun: null,
  demoted: false,
  graduatedVersion: null,
  nextMode: 'explore',
};
const filled = {
  ...job,
  modelId: 'm-1',
  image: 'alpine:3',
  network: 'allowlist',
  allowedDomains: ['example.com'],
  modePin: 'scripted',
  concurrency: 'queue',
  cron: '*/5 * * * *',
  timezone: 'Europe/Paris',
  nextRunAt: 1795767700000,
  lastRun,
  graduatedVersion: 2,
  nextMode: 'scripted',
};

describe('response serializers (docs/design.md, "Validation cost")', () => {
  it('write nullable scalars and enums by their type alone, exactly as the unions wrote them', () => {
    for (const [name, schema, values] of [
      ['JobDto', JobDto, [job, filled]],
      [
        'JobListEnvelope',
        JobListEnvelope,
        [
          { items: [], page: 1, pageSize: 50, total: 0 },
          {
            items: [
              {
                id: 'j',
                name: 'n',
                cron: null,
                timezone: null,
                scheduleHuman: null,
                nextRunAt: null,
                enabled: false,
                modePin: 'assisted',
                createdAt: 1,
                updatedAt: 2,
                lastRun,
                lastMode: null,
                runCount: 4,
                recentRuns: [lastRun],
                nextMode: 'assisted',
                inputs: null,
              },
            ],
            page: 1,
            pageSize: 50,
            total: 1,
          },
        ],
      ],
    ] as const) {
      const before = fastJson(stripIds(schema) as Schema);
      const simplified = serializerSchema(schema);
      const after = fastJson(simplified as Schema);
      for (const v of values) assert.equal(after(v), before(v), name);
      // Only unions of objects or arrays are left for the serializer to choose between.
      for (const path of unions(simplified))
        assert.match(path, /lastRun|allowedDomains|schedule|recentRuns|inputs|spec/, `${name}${path}`);
    }
    // What a job's serializer had to validate before: its nullable strings, integers and enums.
    assert.ok(unions(stripIds(JobDto)).length >= 10);
    assert.ok(unions(serializerSchema(JobDto)).length <= 4);
  });

  it('leaves the schemas themselves as they are (the API document is built from them)', () => {
    const before = JSON.stringify(stripIds(JobDto));
    serializerSchema(JobDto);
    assert.equal(JSON.stringify(stripIds(JobDto)), before);
  });
});
