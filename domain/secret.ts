import { DomainError, type Decider, type DomainEvent } from './decider.js';

/**
 * A workspace secret. The value travels only sealed (AES-256-GCM under the instance key): events and read models
 * never hold it in plain text.
 */
export type SecretEvent =
  | DomainEvent<'SecretCreated', { secretId: string; workspaceId: string; name: string; sealed: string; createdAt: number }>
  | DomainEvent<'SecretValueChanged', { sealed: string; updatedAt: number }>
  | DomainEvent<'SecretDeleted', { deletedAt: number }>;

export type SecretState = { status: 'none' } | { status: 'active' | 'deleted'; workspaceId: string; name: string };

export type SecretCommand =
  | { type: 'CreateSecret'; secretId: string; workspaceId: string; name: string; sealed: string; now: number }
  | { type: 'ChangeSecret'; sealed: string; now: number }
  | { type: 'DeleteSecret'; now: number };

export const secretStreamId = (id: string) => `secret-${id}`;
/** Names are claimed through a stream of their own, so two secrets never share one (DESIGN: uniqueness by stream). */
export const secretNameStreamId = (workspaceId: string, name: string) => `secretname-${workspaceId}-${name}`;
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
      if (!secretNamePattern.test(command.name)) throw DomainError.validation([{ field: 'name', code: 'invalid', message: 'must be 1 to 100 letters, digits, dots, dashes or underscores' }]);
      return [{ type: 'SecretCreated', data: { secretId: command.secretId, workspaceId: command.workspaceId, name: command.name, sealed: command.sealed, createdAt: command.now } }];
    }
    if (state.status !== 'active') throw DomainError.notFound('Secret');
    if (command.type === 'ChangeSecret') return [{ type: 'SecretValueChanged', data: { sealed: command.sealed, updatedAt: command.now } }];
    return [{ type: 'SecretDeleted', data: { deletedAt: command.now } }];
  },
};

/** Name claims: `claim` with the secret id, `release` when it is deleted. */
export type NameEvent = DomainEvent<'SecretNameClaimed', { secretId: string }> | DomainEvent<'SecretNameReleased', { secretId: string }>;
export const secretNameDecider: Decider<{ type: 'Claim' | 'Release'; secretId: string }, NameEvent, { owner: string | null }> = {
  initialState: { owner: null },
  evolve: (_s, e) => ({ owner: e.type === 'SecretNameClaimed' ? e.data.secretId : null }),
  decide(command, state) {
    if (command.type === 'Claim') {
      if (state.owner) throw new DomainError('conflict', 'A secret with this name already exists');
      return [{ type: 'SecretNameClaimed', data: { secretId: command.secretId } }];
    }
    return state.owner === command.secretId ? [{ type: 'SecretNameReleased', data: { secretId: command.secretId } }] : [];
  },
};

/** Job mappings of secrets to environment variables, in the job's own stream of mappings. */
export interface JobSecretMapping {
  secretId: string;
  envName: string;
}
export type JobSecretsEvent = DomainEvent<'JobSecretsSet', { jobId: string; mappings: JobSecretMapping[] }>;
export const jobSecretsStreamId = (jobId: string) => `jobsecrets-${jobId}`;
export const envNamePattern = /^[A-Za-z_][A-Za-z0-9_]*$/;

export function checkMappings(mappings: JobSecretMapping[]): void {
  const seen = new Set<string>();
  const errors = [];
  for (const [i, m] of mappings.entries()) {
    if (!envNamePattern.test(m.envName) || m.envName.length > 100) errors.push({ field: `[${i}].envName`, code: 'invalid', message: 'must be a variable name (letters, digits, _; not starting with a digit), at most 100 characters' });
    if (seen.has(m.envName)) errors.push({ field: `[${i}].envName`, code: 'duplicate', message: `${m.envName} is mapped twice` });
    seen.add(m.envName);
  }
  if (errors.length) throw DomainError.validation(errors);
}
