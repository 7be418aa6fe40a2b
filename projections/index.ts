import { auditProjector } from './audit.js';
import {
  apiTokensProjector,
  invitesProjector,
  membersProjector,
  sessionsProjector,
  usersProjector,
  workspacesProjector,
} from './identity.js';
import { imagesProjector } from './images.js';
import { jobsProjector } from './jobs.js';
import { playbooksProjector } from './playbooks.js';
import { mcpServersProjector } from './mcp-servers.js';
import { notificationsProjector } from './notifications.js';
import { providersProjector } from './providers.js';
import { runsProjector } from './runs.js';
import { secretsProjector } from './secrets.js';
import { statsProjector } from './stats.js';
import type { Projector } from './projector.js';
import { withWorkspaceErasure } from './workspace-erasure.js';

/**
 * Every read model of the service, in the order the engine feeds them; each drops a deleted workspace's documents
 * (docs/design.md, "Workspace erasure").
 */
export const allProjectors: Projector[] = [
  workspacesProjector,
  usersProjector,
  membersProjector,
  apiTokensProjector,
  sessionsProjector,
  invitesProjector,
  providersProjector,
  secretsProjector,
  mcpServersProjector,
  runsProjector,
  statsProjector,
  jobsProjector,
  playbooksProjector,
  imagesProjector,
  notificationsProjector,
  auditProjector,
].map(withWorkspaceErasure);
