import type { paths } from './api-types.js';
import type { Schemas } from './api.js';

// Short names for the API's records, all taken from the generated OpenAPI types (web/src/api-types.ts) so the app
// and the service cannot drift; nothing here is written by hand (docs/design.md, "Web app").
export type { FieldError } from './api.js';
export type ErrorBody = Schemas['ErrorBody'];
export type JobDto = Schemas['JobDto'];
export type JobListDto = Schemas['JobListDto'];
export type JobFields = Schemas['JobFields'];
export type JobPatch = Schemas['JobPatchBody'];
export type LastRun = Schemas['LastRun'];
export type Mode = Schemas['Mode'];
export type Network = JobDto['network'];
export type Concurrency = JobDto['concurrency'];
export type EventDto = Schemas['EventDto'];
export type MeOutputBody = Schemas['MeOutputBody'];
export type SetupOutputBody = Schemas['SetupOutputBody'];
export type SignInProviderDto = Schemas['SignInProviderDto'];
export type PlaybookDto = Schemas['PlaybookDto'];
export type Content = Schemas['Content'];
export type SecretDto = Schemas['SecretDto'];
export type ApiTokenDto = Schemas['ApiTokenDto'];
export type AuditEntryDto = Schemas['AuditEntryDto'];
export type CreateTokenOutputBody = paths['/api/tokens']['post']['responses'][201]['content']['application/json'];
export type WorkspaceDto = Schemas['WorkspaceDto'];
export type MemberDto = Schemas['MemberDto'];
export type InviteDto = Schemas['InviteDto'];
export type InviteLookupOutputBody = Schemas['InviteLookupOutputBody'];
export type CreateInviteOutputBody = Schemas['CreateInviteOutputBody'];
export type AdminUserDto = Schemas['AdminUserDto'];
export type AdminWorkspaceDto = Schemas['AdminWorkspaceDto'];
