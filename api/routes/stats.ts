import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { StatsRunDoc } from '../../projections/stats.js';
import { IdParams } from '../../schemas/common.js';
import {
  JobStatsOutputBody,
  JobStatsQuery,
  jobStatsRanges,
  OverviewOutputBody,
  OverviewQuery,
  type JobRunPoint,
} from '../../schemas/stats.js';
import { principalOf } from '../auth.js';
import type { AppDeps } from '../deps.js';

const dayMs = 24 * 60 * 60 * 1000;
/** The chart shows at most this many runs: the newest of the range. */
export const maxRunPoints = 500;

type RunFacts = Pick<
  StatsRunDoc,
  | '_id'
  | 'number'
  | 'queuedAt'
  | 'status'
  | 'mode'
  | 'cost'
  | 'reflectionCost'
  | 'verifyCost'
  | 'msTotal'
  | 'turns'
  | 'playbookVersion'
>;

/**
 * A job's statistics over its non-skipped runs of the range, oldest first (docs/api.md). Pure, so the rules can be
 * read in one place: success rate over finished outcomes, cost with learning included, the median at ⌊(n−1)/2⌋.
 */
export function summarizeJobRuns(runs: readonly RunFacts[]): Omit<JobStatsOutputBody, 'versions'> {
  const total = (r: RunFacts) => r.cost + r.reflectionCost + r.verifyCost;
  const succeeded = runs.filter((r) => r.status === 'succeeded').length;
  const failed = runs.filter((r) => r.status === 'failed' || r.status === 'timed_out').length;
  const durations = runs
    .map((r) => r.msTotal)
    .filter((ms): ms is number => ms !== null)
    .sort((a, b) => a - b);
  const points: JobRunPoint[] = runs.slice(-maxRunPoints).map((r) => ({
    runId: r._id,
    number: r.number,
    queuedAt: r.queuedAt,
    status: r.status,
    mode: r.mode,
    cost: total(r),
    msTotal: r.msTotal,
    turns: r.turns,
    playbookVersion: r.playbookVersion,
  }));
  return {
    runs: points,
    successRate: succeeded + failed === 0 ? 0 : succeeded / (succeeded + failed),
    avgCost: runs.length === 0 ? 0 : Math.round(runs.reduce((sum, r) => sum + total(r), 0) / runs.length),
    p50Ms: durations.length === 0 ? 0 : durations[Math.floor((durations.length - 1) / 2)]!,
  };
}

/**
 * `GET /api/stats/overview`: the workspace's dashboard; `GET /api/jobs/{id}/stats`: one job's runs over the last 7,
 * 30 or 90 days, with its playbook versions as markers. Both read the stats read model (docs/design.md, "Stats").
 */
export default function statsRoutes(fastify: FastifyInstance, deps: AppDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.get(
    '/api/stats/overview',
    {
      schema: {
        summary: "The workspace's overview",
        description:
          'Whole buckets (24 hours, or 7, 30 or 90 UTC days including today): totals over non-skipped runs against the previous period cut at the same point, per-bucket counts by status with cost and tokens, cost by job, live runs, the last 5 failures, and the jobs getting cheaper or leaner over the last 90 days.',
        tags: ['stats'],
        querystring: OverviewQuery,
        response: { 200: OverviewOutputBody },
      },
    },
    async (request) =>
      deps.queries.forPrincipal(principalOf(request)).stats.overview(request.query.range ?? '7d', Date.now()),
  );

  app.get(
    '/api/jobs/:id/stats',
    {
      schema: {
        summary: "A job's statistics",
        description:
          'Over the non-skipped runs queued in the range (default 30d): success rate, average cost with learning included, median duration, the newest 500 runs oldest first, and the playbook versions saved in the range.',
        tags: ['jobs'],
        params: IdParams,
        querystring: JobStatsQuery,
        response: { 200: JobStatsOutputBody },
      },
    },
    async (request) => {
      const from = Date.now() - jobStatsRanges[request.query.range ?? '30d'] * dayMs;
      const stats = deps.queries.forPrincipal(principalOf(request)).stats;
      const { runs, versions } = await stats.jobHistory(request.params.id, from);
      return {
        ...summarizeJobRuns(runs),
        versions: versions.map((v) => ({ version: v.version, author: v.author, createdAt: v.createdAt })),
      };
    },
  );
}
