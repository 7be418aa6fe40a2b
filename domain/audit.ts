import type { ApiTokenEvent } from './api-token.js';
import type { ImageEvent } from './image.js';
import type { InviteEvent } from './invite.js';
import type { JobStateEvent } from './job-state.js';
import type { JobEvent } from './job.js';
import type { JobMcpEvent } from './mcp-grants.js';
import type { McpOauthEvent } from './mcp-oauth.js';
import type { McpServerEvent } from './mcp-server.js';
import type { MembershipEvent } from './membership.js';
import type { PlaybookEvent } from './playbook.js';
import type { ProviderEvent } from './provider.js';
import type { RunEvent } from './run.js';
import type { JobSecretsEvent, SecretEvent } from './secret.js';
import type { SettingsEvent } from './settings.js';
import { streams } from './streams.js';
import type { StoredEvent } from './stream.js';
import type { WorkspaceEvent } from './workspace.js';

/** Who can cause an event (the `actor` of its metadata, docs/events.md, "Audit trail"). */
export const actorTypes = ['user', 'token', 'run', 'reflection', 'scheduler', 'system'] as const;
export type ActorType = (typeof actorTypes)[number];

/**
 * What the audit trail says about one event (docs/events.md, "Audit trail"): the workspace and job it concerns and
 * a one-line summary. Summaries are written field by field from an allow list, never by dumping a payload, so no
 * secret value, sealed value, token, token hash or key can reach them.
 */
export interface AuditFacts {
  workspaceId: string;
  jobId: string | null;
  summary: string;
}

/** A display name the trail learns from the log: a user's name, a token's name, a run's number and job. */
export interface AuditActorName {
  type: 'user' | 'token' | 'run';
  id: string;
  name: string;
}

type Summary = { jobId: string | null; summary: string } | null;

const maxQuoted = 120;

/** A user-chosen text in quotes, on one line and cut short: summaries stay one readable line. */
function quote(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return `"${line.length > maxQuoted ? `${line.slice(0, maxQuoted - 1)}…` : line}"`;
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

/** Names of the fields a change touched; values are left out on purpose (an instruction may be long, a URL private). */
function fieldList(changes: object): string {
  const keys = Object.keys(changes).filter((k) => (changes as Record<string, unknown>)[k] !== undefined);
  return keys.length === 0 ? 'nothing' : keys.sort().join(', ');
}

function job(e: JobEvent, jobId: string): Summary {
  switch (e.type) {
    case 'JobCreated':
      return { jobId, summary: `Created job ${quote(e.data.config.name)}` };
    case 'JobUpdated': {
      const { name } = e.data.changes;
      const renamed = name !== undefined ? ` (now named ${quote(name)})` : '';
      return { jobId, summary: `Changed ${fieldList(e.data.changes)}${renamed}` };
    }
    case 'JobEnabled':
      return { jobId, summary: 'Enabled the job' };
    case 'JobDisabled':
      return { jobId, summary: 'Disabled the job' };
    case 'JobArchived':
      return { jobId, summary: 'Deleted (archived) the job' };
    case 'JobWebhookTokenSet':
      return { jobId, summary: 'Issued a new webhook token' };
    default:
      return exhaustive(e);
  }
}

function playbook(e: PlaybookEvent): Summary {
  const d = e.data;
  const how = d.rolledBackFrom !== null ? `rolled back from version ${d.rolledBackFrom}` : `by ${d.author}`;
  const graduated = d.graduated ? ', the job graduated' : '';
  return { jobId: d.jobId, summary: `Saved playbook version ${d.version} ${how}${graduated}: ${quote(d.summary)}` };
}

function jobMcp(e: JobMcpEvent): Summary {
  const { grants } = e.data;
  return {
    jobId: e.data.jobId,
    summary:
      grants.length === 0
        ? 'Removed every MCP server grant'
        : `Granted ${plural(grants.length, 'MCP server')}: ${grants.map((g) => g.serverId).join(', ')}`,
  };
}

function jobSecrets(e: JobSecretsEvent): Summary {
  const names = e.data.mappings.map((m) => m.envName).sort();
  return {
    jobId: e.data.jobId,
    summary:
      names.length === 0
        ? 'Removed every secret mapping'
        : `Mapped secrets to ${plural(names.length, 'variable')}: ${names.join(', ')}`,
  };
}

function jobState(e: JobStateEvent, jobId: string): Summary {
  switch (e.type) {
    case 'JobStateSet':
      return { jobId, summary: `Set state key ${quote(e.data.key)} (${e.data.size} bytes)` };
    case 'JobStateDeleted':
      return { jobId, summary: `Deleted state key ${quote(e.data.key)}` };
    default:
      return exhaustive(e);
  }
}

function image(e: ImageEvent): Summary {
  const jobId = e.data.jobId;
  switch (e.type) {
    case 'ImageQueued':
      return { jobId, summary: `Queued an image build (${e.data.reason})` };
    case 'ImageBuilt':
      return { jobId, summary: `Built image ${e.data.ref} (${e.data.sizeBytes} bytes)` };
    case 'ImageBuildFailed':
      return { jobId, summary: 'An image build failed' };
    case 'ImageDeleted':
      return { jobId, summary: 'Removed an unused image' };
    case 'ImageBuildStarted':
    case 'ImageRequeued':
      return null;
    default:
      return exhaustive(e);
  }
}

function run(e: RunEvent): Summary {
  const jobId = e.data.jobId;
  switch (e.type) {
    case 'RunQueued':
      return { jobId, summary: `Queued run #${e.data.number} (${e.data.trigger}, ${e.data.mode})` };
    case 'RunSkipped':
      return { jobId, summary: `Skipped run #${e.data.number} (${e.data.trigger})` };
    case 'RunStarted':
      return { jobId, summary: `Started a run in a ${e.data.sandbox.backend} sandbox` };
    case 'RunCancelRequested':
      return { jobId, summary: 'Asked to cancel a run' };
    case 'RunFinished':
      return {
        jobId,
        summary: `A run finished: ${e.data.status.replace('_', ' ')}${e.data.fellBack ? ', fell back' : ''}`,
      };
    case 'RunReflectionRequested':
      return { jobId, summary: 'Asked to learn from a run' };
    case 'RunReflected':
      return {
        jobId,
        summary:
          e.data.status === 'done'
            ? `Reflected on a run${e.data.version !== null ? `, playbook version ${e.data.version}` : ', no change'}`
            : 'A reflection on a run failed',
      };
    case 'RunPurged':
      return {
        jobId,
        summary: `Removed a run's timeline and files (kept for ${e.data.retentionDays} days)`,
      };
    case 'RunSubmitted':
    case 'RunClaimed':
    case 'RunVerifying':
    case 'RunFellBack':
    case 'RunReflectionStarted':
      return null;
    default:
      return exhaustive(e);
  }
}

function secret(e: SecretEvent, secretId: string): Summary {
  switch (e.type) {
    case 'SecretCreated':
      return { jobId: null, summary: `Created secret ${quote(e.data.name)}` };
    case 'SecretValueChanged':
      return { jobId: null, summary: `Changed the value of secret ${secretId}` };
    case 'SecretDeleted':
      return { jobId: null, summary: `Deleted secret ${secretId}` };
    default:
      return exhaustive(e);
  }
}

function mcpServer(e: McpServerEvent, serverId: string): Summary {
  switch (e.type) {
    case 'McpServerCreated':
      return {
        jobId: null,
        summary: `Registered MCP server ${quote(e.data.config.name)} (${e.data.config.transport})`,
      };
    case 'McpServerChanged':
      return { jobId: null, summary: `Changed MCP server ${quote(e.data.config.name)}` };
    case 'McpServerDeleted':
      return { jobId: null, summary: `Deleted MCP server ${serverId}` };
    case 'McpServerTested':
      return null;
    default:
      return exhaustive(e);
  }
}

function mcpOauth(e: McpOauthEvent): Summary {
  switch (e.type) {
    case 'McpOauthLoggedIn':
      return { jobId: null, summary: `Logged in to MCP server ${e.data.serverId}` };
    case 'McpOauthLoggedOut':
      return {
        jobId: null,
        summary: `Logged out of MCP server ${e.data.serverId} (${e.data.reason.replace('_', ' ')})`,
      };
    case 'McpOauthLoginStarted':
    case 'McpOauthLoginFailed':
    case 'McpOauthTokensRefreshed':
      return null;
    default:
      return exhaustive(e);
  }
}

function membership(e: MembershipEvent, userId: string): Summary {
  switch (e.type) {
    case 'MemberJoined':
      return { jobId: null, summary: `User ${e.data.userId} joined as ${e.data.role}` };
    case 'MemberRoleChanged':
      return { jobId: null, summary: `User ${userId} is now ${e.data.role}` };
    case 'MemberRemoved':
      return { jobId: null, summary: `Removed user ${userId} from the workspace` };
    default:
      return exhaustive(e);
  }
}

function apiToken(e: ApiTokenEvent, tokenId: string): Summary {
  switch (e.type) {
    case 'ApiTokenCreated':
      return { jobId: null, summary: `Created API token ${quote(e.data.name)}` };
    case 'ApiTokenDeleted':
      return { jobId: null, summary: `Deleted API token ${tokenId}` };
    case 'ApiTokenUsed':
      return null;
    default:
      return exhaustive(e);
  }
}

function provider(e: ProviderEvent, providerId: string): Summary {
  switch (e.type) {
    case 'ProviderCreated':
      return { jobId: null, summary: `Added provider ${quote(e.data.name)} (${e.data.kind})` };
    case 'ProviderUpdated': {
      const { name, baseUrl, apiKeySealed } = e.data;
      const parts = [
        ...(name !== undefined ? [`name ${quote(name)}`] : []),
        ...(baseUrl !== undefined ? ['base URL'] : []),
        ...(apiKeySealed !== undefined ? ['API key'] : []),
      ];
      return { jobId: null, summary: `Changed provider ${providerId}: ${parts.join(', ') || 'nothing'}` };
    }
    case 'ProviderDeleted':
      return { jobId: null, summary: `Deleted provider ${providerId}` };
    case 'ModelAdded':
      return { jobId: null, summary: `Added model ${e.data.modelId}${e.data.enabled ? '' : ' (disabled)'}` };
    case 'ModelChanged': {
      const { modelId, ...changes } = e.data;
      const state = e.data.enabled === true ? ' (enabled)' : e.data.enabled === false ? ' (disabled)' : '';
      return { jobId: null, summary: `Changed model ${modelId}${state}: ${fieldList(changes)}` };
    }
    case 'ModelRemoved':
      return { jobId: null, summary: `Removed model ${e.data.modelId}` };
    case 'ProviderSynced': {
      const r = e.data.result;
      return {
        jobId: null,
        summary:
          e.data.error !== null
            ? `Could not sync provider ${providerId}`
            : `Synced provider ${providerId}: ${r.added} added, ${r.updated} updated, ${r.unlisted} unlisted`,
      };
    }
    default:
      return exhaustive(e);
  }
}

function settings(e: SettingsEvent): Summary {
  return { jobId: null, summary: `Changed workspace settings: ${fieldList(e.data.changes)}` };
}

function workspace(e: WorkspaceEvent): Summary {
  switch (e.type) {
    case 'WorkspaceCreated':
      return { jobId: null, summary: `Created workspace ${quote(e.data.name)}` };
    case 'WorkspaceOwnerClaimed':
      return { jobId: null, summary: `User ${e.data.userId} became the owner` };
    case 'WorkspaceRenamed':
      return { jobId: null, summary: `Renamed the workspace to ${quote(e.data.name)}` };
    case 'WorkspaceOwnershipTransferred':
      return { jobId: null, summary: `Transferred ownership to user ${e.data.toUserId}` };
    case 'WorkspaceDeleted':
      return { jobId: null, summary: 'Deleted the workspace' };
    default:
      return exhaustive(e);
  }
}

function invite(e: InviteEvent): Summary {
  switch (e.type) {
    case 'InviteCreated':
      return {
        jobId: null,
        summary: `Invited ${e.data.email ?? 'whoever holds a link'} as ${e.data.role}`,
      };
    case 'InviteAccepted':
      return { jobId: null, summary: `User ${e.data.userId} accepted an invite` };
    case 'InviteRevoked':
      return {
        jobId: null,
        summary: e.data.reason === 'deleted' ? 'Revoked an invite' : 'Revoked an invite: its creator lost access',
      };
    default:
      return exhaustive(e);
  }
}

function exhaustive(e: never): never {
  throw new Error(`no audit summary for ${(e as { type: string }).type}`);
}

/**
 * The trail's entry for an event, or null for an event that is not a change a person audits (a run's internal
 * steps, usage counters, sign-in bookkeeping) or that belongs to no workspace. The workspace comes from the stream
 * where the stream names it, otherwise from the event's metadata.
 */
export function auditFacts(recorded: StoredEvent & { metadata: { workspaceId: string | null } }): AuditFacts | null {
  const facts = summarize(recorded);
  if (!facts) return null;
  const workspaceId = facts.workspaceId ?? recorded.metadata.workspaceId;
  return workspaceId ? { workspaceId, jobId: facts.jobId, summary: facts.summary } : null;
}

function summarize(r: StoredEvent): (NonNullable<Summary> & { workspaceId?: string }) | null {
  const s = streams;
  let d;
  if ((d = s.job.decode(r))) return job(d.event, d.key);
  if ((d = s.playbook.decode(r))) return playbook(d.event);
  if ((d = s.jobMcp.decode(r))) return jobMcp(d.event);
  if ((d = s.jobSecrets.decode(r))) return jobSecrets(d.event);
  if ((d = s.jobState.decode(r))) return jobState(d.event, d.key);
  if ((d = s.jobImages.decode(r))) return image(d.event);
  if ((d = s.run.decode(r))) return run(d.event);
  if ((d = s.jobRuns.decode(r)) && d.event.type === 'RunDeleted') {
    const f = d.event.data.figures;
    return {
      jobId: d.key,
      summary: `Deleted run #${f.number} (${f.status.replace('_', ' ')})`,
      workspaceId: f.workspaceId,
    };
  }
  if ((d = s.secret.decode(r))) return secret(d.event, d.key);
  if ((d = s.mcpServer.decode(r))) return mcpServer(d.event, d.key);
  if ((d = s.mcpOauth.decode(r))) return mcpOauth(d.event);
  if ((d = s.apiToken.decode(r))) return apiToken(d.event, d.key);
  if ((d = s.provider.decode(r))) return provider(d.event, d.key);
  if ((d = s.settings.decode(r))) return settings(d.event);
  const w = s.workspace.decode(r);
  if (w) {
    const out = workspace(w.event);
    return out && { ...out, workspaceId: w.key };
  }
  const erased = s.workspaceErasure.decode(r);
  if (erased) {
    const d = erased.event.data;
    return { jobId: null, summary: `Erased the deleted workspace: ${d.streams} streams`, workspaceId: erased.key };
  }
  const i = s.invite.decode(r);
  if (i) {
    const out = invite(i.event);
    return out && { ...out, workspaceId: i.key[0] };
  }
  const m = s.membership.decode(r);
  if (m) {
    const [workspaceId, userId] = m.key;
    const out = membership(m.event, userId);
    return out && { ...out, workspaceId };
  }
  return null;
}

/** The display name an event teaches about its actor-to-be: a user's profile, a token's name, a run's number. */
export function auditActorName(r: StoredEvent): AuditActorName | null {
  const user = streams.user.decode(r);
  if (user && (user.event.type === 'UserRegistered' || user.event.type === 'UserSignedIn')) {
    const name = user.event.data.name ?? user.event.data.email;
    return name ? { type: 'user', id: user.key, name } : null;
  }
  const token = streams.apiToken.decode(r);
  if (token && token.event.type === 'ApiTokenCreated')
    return { type: 'token', id: token.key, name: token.event.data.name };
  const queued = streams.run.decode(r);
  if (queued && (queued.event.type === 'RunQueued' || queued.event.type === 'RunSkipped')) {
    const d = queued.event.data;
    return { type: 'run', id: queued.key, name: `run #${d.number} of ${quote(d.jobName)}` };
  }
  return null;
}
