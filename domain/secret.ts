import { DomainError, type Decider, type DomainEvent } from './decider.js';
import { streamCategory, workspaceScopedCategory } from './stream.js';

/**
 * A workspace secret. The value travels only sealed (AES-256-GCM under the instance key): events and read models
 * never hold it in plain text.
 */
export type SecretEvent =
  | DomainEvent<
      'SecretCreated',
      { secretId: string; workspaceId: string; name: string; sealed: string; createdAt: number }
    >
  | DomainEvent<'SecretValueChanged', { sealed: string; updatedAt: number }>
  | DomainEvent<'SecretDeleted', { deletedAt: number }>;

export type SecretState = { status: 'none' } | { status: 'active' | 'deleted'; workspaceId: string; name: string };

export type SecretCommand =
  | { type: 'CreateSecret'; secretId: string; workspaceId: string; name: string; sealed: string; now: number }
  | { type: 'ChangeSecret'; sealed: string; now: number }
  | { type: 'DeleteSecret'; now: number };

export const secretStream = streamCategory<SecretEvent>('secret');
export const secretStreamId = secretStream.id;
/**
 * Names are claimed through a stream of their own, so two secrets never share one (docs/design.md, "Events and read
 * models": uniqueness through streams).
 */
export const secretNameStream = workspaceScopedCategory<NameEvent>('secretname');
export const secretNameStreamId = (workspaceId: string, name: string) => secretNameStream.id([workspaceId, name]);
export const secretNamePattern = /^[A-Za-z0-9_.-]{1,100}$/;

export const secretDecider: Decider<SecretCommand, SecretEvent, SecretState> = {
  initialState: { status: 'none' },
  evolve(state, event) {
    switch (event.type) {
      case 'SecretCreated':
        return { status: 'active', workspaceId: event.data.workspaceId, name: event.data.name };
      case 'SecretValueChanged':
        return state;
      case 'SecretDeleted':
        return state.status === 'none' ? state : { ...state, status: 'deleted' };
    }
  },
  decide(command, state) {
    if (command.type === 'CreateSecret') {
      if (state.status !== 'none') throw new DomainError('conflict', 'The secret already exists');
      if (!secretNamePattern.test(command.name))
        throw DomainError.validation([
          { field: 'name', code: 'invalid', message: 'must be 1 to 100 letters, digits, dots, dashes or underscores' },
        ]);
      return [
        {
          type: 'SecretCreated',
          data: {
            secretId: command.secretId,
            workspaceId: command.workspaceId,
            name: command.name,
            sealed: command.sealed,
            createdAt: command.now,
          },
        },
      ];
    }
    if (state.status !== 'active') throw DomainError.notFound('Secret');
    if (command.type === 'ChangeSecret')
      return [{ type: 'SecretValueChanged', data: { sealed: command.sealed, updatedAt: command.now } }];
    return [{ type: 'SecretDeleted', data: { deletedAt: command.now } }];
  },
};

/**
 * Name claims: `Claim` with the secret id, `Release` when it is deleted. Creating a secret is two appends (claim,
 * then the secret's own stream), so a crash between them, or between a delete and its release, can leave a claim
 * whose owner never existed or is gone. The handler checks the owner and passes it as `takeOver`; the claim moves
 * only if the stream still names that owner (optimistic concurrency does the rest).
 */
export type NameEvent =
  | DomainEvent<'SecretNameClaimed', { secretId: string; claimedAt?: number }>
  | DomainEvent<'SecretNameReleased', { secretId: string }>;
export type NameCommand =
  | { type: 'Claim'; secretId: string; name: string; now: number; takeOver?: string }
  | { type: 'Release'; secretId: string };
export type NameState = { owner: string | null; claimedAt: number };
/** How long a claim whose secret never appeared is held before another create may take the name. */
export const staleClaimMs = 60_000;

export const secretNameDecider: Decider<NameCommand, NameEvent, NameState> = {
  initialState: { owner: null, claimedAt: 0 },
  evolve: (_s, e) =>
    e.type === 'SecretNameClaimed'
      ? { owner: e.data.secretId, claimedAt: e.data.claimedAt ?? 0 }
      : { owner: null, claimedAt: 0 },
  decide(command, state) {
    if (command.type === 'Claim') {
      if (state.owner && state.owner !== command.takeOver)
        throw new DomainError('conflict', `The name ${command.name} is already in use by another secret`);
      return [{ type: 'SecretNameClaimed', data: { secretId: command.secretId, claimedAt: command.now } }];
    }
    return state.owner === command.secretId
      ? [{ type: 'SecretNameReleased', data: { secretId: command.secretId } }]
      : [];
  },
};

/** Job mappings of secrets to environment variables, in the job's own stream of mappings. */
export interface JobSecretMapping {
  secretId: string;
  envName: string;
}
export type JobSecretsEvent = DomainEvent<'JobSecretsSet', { jobId: string; mappings: JobSecretMapping[] }>;
export const jobSecretsStream = streamCategory<JobSecretsEvent>('jobsecrets');
export const jobSecretsStreamId = jobSecretsStream.id;
export const envNamePattern = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Variables a mapping may not set (docs/sandbox.md, "Environment"): the service's own `SVC_*` and the proxy variables.
 * Every sandbox that has a network goes through the egress proxy (docs/design.md, "Runs"), so the proxy names are kept
 * off for every job.
 */
export const reservedEnvName =
  /^(SVC_.*|HTTPS?_PROXY|https?_proxy|NO_PROXY|no_proxy|NODE_USE_ENV_PROXY|ALL_PROXY|all_proxy)$/;

export function checkMappings(mappings: JobSecretMapping[]): void {
  const seen = new Set<string>();
  const errors = [];
  for (const [i, m] of mappings.entries()) {
    if (!envNamePattern.test(m.envName) || m.envName.length > 100)
      errors.push({
        field: `[${i}].envName`,
        code: 'invalid',
        message: 'must be a variable name (letters, digits, _; not starting with a digit), at most 100 characters',
      });
    if (seen.has(m.envName))
      errors.push({ field: `[${i}].envName`, code: 'duplicate', message: `${m.envName} is mapped twice` });
    seen.add(m.envName);
  }
  if (errors.length) throw DomainError.validation(errors);
}

/** A PUT replaces the whole set; the same set again appends nothing. */
export const jobSecretsDecider: Decider<
  { type: 'SetJobSecrets'; jobId: string; mappings: JobSecretMapping[] },
  JobSecretsEvent,
  JobSecretMapping[]
> = {
  initialState: [],
  evolve: (_s, e) => e.data.mappings,
  decide(command, state) {
    checkMappings(command.mappings);
    return JSON.stringify(state) === JSON.stringify(command.mappings)
      ? []
      : [{ type: 'JobSecretsSet', data: { jobId: command.jobId, mappings: command.mappings } }];
  },
};
