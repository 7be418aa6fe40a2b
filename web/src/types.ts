// The API's own record types, taken from the server's TypeBox schemas so the app and the service cannot drift
// (type-only imports: nothing of the server is bundled; docs/design.md, "Web app").
export type { ErrorBody, FieldError } from '../../schemas/common.js';
export type {
  JobDto,
  JobListDto,
  JobListEnvelope,
  JobFields,
  JobPatch,
  LastRun,
  RunStatus,
  Mode,
  Network,
  Concurrency,
} from '../../schemas/job.js';
export type { RunDto, RunListEnvelope, EventDto, ArtifactDto, TriggerRunOutput } from '../../schemas/run.js';
export type { MeOutputBody } from '../../schemas/user.js';
export type {
  PlaybookDto,
  PlaybookVersionEnvelope,
  PlaybookVersionDetailDto,
  Content,
} from '../../schemas/playbook.js';
export type { SecretDto } from '../../schemas/secret.js';
export type { ApiTokenDto, CreateTokenOutputBody } from '../../schemas/token.js';
export type { JobStatsOutputBody } from '../../schemas/stats.js';
