/**
 * The values a job is made of, as the domain stores them in its events (docs/events.md). They are written here,
 * not derived from the API's schemas: `schemas/job.ts` proves at compile time that the API carries exactly these
 * shapes, so a change to either side is a decision (and, for stored shapes, an upcaster), never a silent drift.
 */

export type Mode = 'explore' | 'assisted' | 'scripted';
export type Network = 'none' | 'internet' | 'allowlist';
export type Concurrency = 'skip' | 'queue' | 'parallel';
export type RunStatus =
  'queued' | 'provisioning' | 'running' | 'verifying' | 'succeeded' | 'failed' | 'timed_out' | 'cancelled' | 'skipped';

/** One declared input or output of a job. */
export interface IOField {
  name: string;
  type: string;
  description?: string;
}

/** An MCP server the job says it needs, and why. */
export interface MCPNeed {
  server: string;
  why: string;
}

export interface SpecSchedule {
  cron: string;
  timezone: string;
  human: string;
}

/** What a job declares about itself; `inputs` are the run inputs it accepts. */
export interface Spec {
  title?: string;
  goal?: string;
  schedule?: SpecSchedule | null;
  successCriteria?: string[];
  inputs?: IOField[];
  outputs?: IOField[];
  mcp?: MCPNeed[];
  network?: 'none' | 'internet';
  dockerfile?: string | null;
  sideEffects?: string[];
  warnings?: string[];
}

/** The range of each run limit; the API's schema and the domain's checks both read it. */
export const limitBounds = {
  timeoutSeconds: { minimum: 30, maximum: 86400 },
  maxTurns: { minimum: 1, maximum: 1000 },
  maxCostUsd: { minimum: 0, maximum: 1_000_000 },
  cpus: { minimum: 0.1, maximum: 64 },
  memoryMb: { minimum: 64, maximum: 262144 },
  pidsLimit: { minimum: 16, maximum: 65536 },
  // At least room for a checkout and a toolchain's caches; at most what a sparse file on one host disk may claim.
  diskMb: { minimum: 64, maximum: 1048576 },
} as const;

/** Effective limits of a run: every field set. */
export interface Limits {
  timeoutSeconds: number;
  maxTurns: number;
  maxCostUsd: number;
  cpus: number;
  memoryMb: number;
  pidsLimit: number;
  diskMb: number;
}

/** Per-job overrides; unset fields fall back to the workspace defaults. */
export type LimitOverrides = Partial<Limits>;

/** What creating a job gives: name and instruction required, the rest defaulted. */
export interface JobFields {
  name: string;
  instruction: string;
  spec?: Spec;
  modelId?: string | null;
  image?: string | null;
  network?: Network;
  allowedDomains?: string[] | null;
  allowPrivateNetwork?: boolean;
  runAsRoot?: boolean;
  limits?: LimitOverrides;
  selfImprove?: boolean;
  modePin?: Mode | null;
  concurrency?: Concurrency;
  cron?: string | null;
  timezone?: string | null;
  enabled?: boolean;
}

/** A change to a job: every field optional; an empty string clears modelId, image, cron, timezone and modePin. */
export interface JobPatch {
  name?: string;
  instruction?: string;
  spec?: Spec;
  modelId?: string;
  image?: string;
  network?: Network;
  allowedDomains?: string[];
  allowPrivateNetwork?: boolean;
  runAsRoot?: boolean;
  limits?: LimitOverrides;
  selfImprove?: boolean;
  modePin?: Mode | '';
  concurrency?: Concurrency;
  cron?: string;
  timezone?: string;
  enabled?: boolean;
}
