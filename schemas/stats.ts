import Type, { type Static } from 'typebox';
import { Nullable, type Agrees, type Same } from './common.js';
import type * as domain from '../domain/stats.js';
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

/** Totals of a period over its non-skipped runs. */
export const Totals = Type.Object(
  {
    runs: Type.Integer({ description: 'Runs queued in the period, skipped ones left out' }),
    succeeded: Type.Integer(),
    failed: Type.Integer({ description: 'failed + timed_out' }),
    successRate: Type.Number({ description: 'succeeded / (succeeded + failed); 0 without finished runs' }),
    p50Ms: Type.Integer({ description: 'msTotal at offset ⌊(n−1)·0.5⌋ of the ascending values; 0 without any' }),
    p95Ms: Type.Integer({ description: 'msTotal at offset ⌊(n−1)·0.95⌋ of the ascending values; 0 without any' }),
    runCost: Type.Integer({ description: 'micro-USD: Σ cost' }),
    learningCost: Type.Integer({ description: 'micro-USD: Σ (reflection + verification)' }),
    runTokens: Type.Integer({ description: 'Σ (tokIn + tokOut)' }),
    learningTokens: Type.Integer({ description: 'Tokens of reflection and verification' }),
  },
  { $id: 'Totals', additionalProperties: false },
);
export type Totals = Static<typeof Totals>;

/** One bucket of the chart (an hour or a UTC day), skipped runs included. */
export const DayBucket = Type.Object(
  {
    day: Type.Integer({ description: 'Start of the bucket (Unix ms)' }),
    succeeded: Type.Integer(),
    failed: Type.Integer(),
    cancelled: Type.Integer(),
    timedOut: Type.Integer(),
    skipped: Type.Integer(),
    other: Type.Integer({ description: 'Runs still queued or running' }),
    cost: Type.Integer({ description: 'micro-USD: Σ (cost + reflection + verification)' }),
    tokens: Type.Integer(),
  },
  { $id: 'DayBucket', additionalProperties: false },
);
export type DayBucket = Static<typeof DayBucket>;

export const JobCost = Type.Object(
  {
    day: Type.Integer({ description: 'Start of the bucket (Unix ms)' }),
    jobId: Type.String(),
    jobName: Type.String(),
    cost: Type.Integer(),
    tokens: Type.Integer(),
  },
  { $id: 'JobCost', additionalProperties: false },
);
export type JobCost = Static<typeof JobCost>;

export const RunRef = Type.Object(
  {
    id: Type.String(),
    jobId: Type.String(),
    jobName: Type.String(),
    number: Type.Integer(),
    status: RunStatus,
    mode: Mode,
    queuedAt: Type.Integer(),
    startedAt: Nullable(Type.Integer()),
    error: Nullable(Type.String()),
    summary: Nullable(Type.String()),
  },
  { $id: 'RunRef', additionalProperties: false },
);
export type RunRef = Static<typeof RunRef>;

export const CheaperJob = Type.Object(
  {
    jobId: Type.String(),
    jobName: Type.String(),
    firstCost: Type.Integer({ description: 'Average cost of the first 3 succeeded runs of the last 90 days' }),
    recentCost: Type.Integer({ description: 'Average cost of the latest 3' }),
    dropPct: Type.Number({ description: '1 − recentCost / firstCost' }),
    runs: Type.Integer({ description: 'Succeeded runs of the last 90 days' }),
  },
  { $id: 'CheaperJob', additionalProperties: false },
);
export type CheaperJob = Static<typeof CheaperJob>;

export const LeanerJob = Type.Object(
  {
    jobId: Type.String(),
    jobName: Type.String(),
    firstTokens: Type.Integer(),
    recentTokens: Type.Integer(),
    tokenDropPct: Type.Number({ description: '1 − recentTokens / firstTokens (may be negative)' }),
    runs: Type.Integer(),
  },
  { $id: 'LeanerJob', additionalProperties: false },
);
export type LeanerJob = Static<typeof LeanerJob>;

const OverviewRange = Type.Union([Type.Literal('24h'), Type.Literal('7d'), Type.Literal('30d'), Type.Literal('90d')]);

export const OverviewQuery = Type.Object(
  {
    range: Type.Optional(
      Type.Union([Type.Literal('24h'), Type.Literal('7d'), Type.Literal('30d'), Type.Literal('90d')], {
        default: '7d',
        description: '24 hourly buckets, or 7, 30 or 90 UTC days including today',
      }),
    ),
  },
  { additionalProperties: false },
);
export type OverviewQuery = Static<typeof OverviewQuery>;

export const OverviewOutputBody = Type.Object(
  {
    range: OverviewRange,
    bucket: Type.Union([Type.Literal('hour'), Type.Literal('day')]),
    bucketMs: Type.Integer(),
    from: Type.Integer({ description: 'Start of the first bucket' }),
    to: Type.Integer({ description: 'End of the bucket holding the present (exclusive)' }),
    current: Totals,
    previous: Totals,
    perDay: Type.Array(DayBucket, { description: 'One bucket per hour or day of the period, oldest first' }),
    costByJob: Type.Array(JobCost),
    running: Type.Array(RunRef, { description: 'Live runs, oldest first' }),
    recentFailures: Type.Array(RunRef, { description: 'The last 5 failed or timed-out runs, newest first' }),
    gettingCheaper: Type.Array(CheaperJob),
    gettingLeaner: Type.Array(LeanerJob),
    hasRuns: Type.Boolean({ description: 'Whether the workspace has had any run' }),
  },
  { $id: 'OverviewOutputBody', additionalProperties: false },
);
export type OverviewOutputBody = Static<typeof OverviewOutputBody>;

/** The rules' results are computed in the domain; the API carries them as they are (docs/events.md, "Stored shapes"). */
export type StatsSchemasAgree = [
  Agrees<Same<CheaperJob, domain.CheaperJob>>,
  Agrees<Same<LeanerJob, domain.LeanerJob>>,
  Agrees<Same<OverviewOutputBody['range'], domain.OverviewRange>>,
];
