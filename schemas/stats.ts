import Type, { type Static } from 'typebox';
import { Nullable } from './common.js';
import { Mode, RunStatus } from './job.js';

/** One run on a job's chart: cost includes what learning from it cost (reflection and verification). */
export const JobRunPoint = Type.Object(
  {
    runId: Type.String(),
    number: Type.Integer(),
    queuedAt: Type.Integer(),
    status: RunStatus,
    mode: Mode,
    cost: Type.Integer({ description: 'micro-USD: the run, its reflection and its verification' }),
    msTotal: Nullable(Type.Integer()),
    turns: Type.Integer(),
    playbookVersion: Type.Integer(),
  },
  { $id: 'JobRunPoint', additionalProperties: false },
);
export type JobRunPoint = Static<typeof JobRunPoint>;

/** A playbook version saved within the range, to mark on the chart. */
export const VersionMarker = Type.Object(
  { version: Type.Integer(), author: Type.String(), createdAt: Type.Integer() },
  { $id: 'VersionMarker', additionalProperties: false },
);
export type VersionMarker = Static<typeof VersionMarker>;

/** What `GET /api/jobs/{id}/stats` answers for the last 7, 30 or 90 days: the chart's runs and versions, and totals. */
export const JobStatsOutputBody = Type.Object(
  {
    runs: Type.Array(JobRunPoint, { description: 'The newest 500 non-skipped runs of the range, oldest first' }),
    versions: Type.Array(VersionMarker, { description: 'Playbook versions created within the range, by version' }),
    successRate: Type.Number({ description: 'succeeded / (succeeded + failed + timed_out); 0 without finished runs' }),
    avgCost: Type.Integer({ description: 'micro-USD per run, learning included; 0 without runs' }),
    p50Ms: Type.Integer({
      description: 'Median msTotal (offset ⌊(n−1)/2⌋ of the sorted values); 0 without timed runs',
    }),
  },
  { $id: 'JobStatsOutputBody', additionalProperties: false },
);
export type JobStatsOutputBody = Static<typeof JobStatsOutputBody>;

export const jobStatsRanges = { '7d': 7, '30d': 30, '90d': 90 } as const;
export type JobStatsRange = keyof typeof jobStatsRanges;

export const JobStatsQuery = Type.Object(
  {
    range: Type.Optional(
      Type.Union([Type.Literal('7d'), Type.Literal('30d'), Type.Literal('90d')], {
        default: '30d',
        description: 'The last 7, 30 or 90 days',
      }),
    ),
  },
  { additionalProperties: false },
);
export type JobStatsQuery = Static<typeof JobStatsQuery>;
