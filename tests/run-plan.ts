import type { RunPlan } from '../domain/run.js';

/** A manual run's plan in explore mode, without input or a model: what the tests that queue runs by command share. */
export function manualPlan(
  fields: Pick<RunPlan, 'runId' | 'jobId' | 'workspaceId' | 'number' | 'queuedAt'> & Partial<RunPlan>,
): RunPlan {
  return {
    jobName: `job ${fields.jobId}`,
    trigger: 'manual',
    triggeredBy: null,
    input: {},
    instructions: null,
    mode: 'explore',
    playbookVersion: 0,
    modelId: null,
    ...fields,
  };
}
