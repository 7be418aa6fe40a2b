import { apiTokenStream } from './api-token.js';
import { inviteStream } from './invite.js';
import { jobImagesStream } from './image.js';
import { jobRunsStream } from './job-runs.js';
import { jobStateStream } from './job-state.js';
import { jobStream } from './job.js';
import { jobMcpStream } from './mcp-grants.js';
import { mcpOauthStream } from './mcp-oauth.js';
import { mcpNameStream, mcpServerStream } from './mcp-server.js';
import { membershipStream } from './membership.js';
import { notificationStream } from './notification-stream.js';
import { playbookStatsStream } from './playbook-stats.js';
import { playbookStream } from './playbook.js';
import { providerStream } from './provider.js';
import { runStream } from './run.js';
import { scheduleStream } from './schedule.js';
import { jobSecretsStream, secretNameStream, secretStream } from './secret.js';
import { sessionStream } from './session.js';
import { settingsStream } from './settings.js';
import { signInLinkStream } from './sign-in-link.js';
import { identityStream, userStream } from './user.js';
import { workspaceErasureStream, workspaceStream } from './workspace.js';

/**
 * Every stream category of the log, with the events its streams hold (docs/events.md, "Streams"). Services build
 * stream ids and projectors decode events through these, so a category is named in exactly one place.
 */
export const streams = {
  apiToken: apiTokenStream,
  identity: identityStream,
  invite: inviteStream,
  job: jobStream,
  jobImages: jobImagesStream,
  jobMcp: jobMcpStream,
  jobRuns: jobRunsStream,
  jobSecrets: jobSecretsStream,
  jobState: jobStateStream,
  mcpName: mcpNameStream,
  mcpOauth: mcpOauthStream,
  mcpServer: mcpServerStream,
  membership: membershipStream,
  notification: notificationStream,
  playbook: playbookStream,
  playbookStats: playbookStatsStream,
  provider: providerStream,
  run: runStream,
  schedule: scheduleStream,
  secret: secretStream,
  secretName: secretNameStream,
  session: sessionStream,
  settings: settingsStream,
  signInLink: signInLinkStream,
  user: userStream,
  workspace: workspaceStream,
  workspaceErasure: workspaceErasureStream,
} as const;
