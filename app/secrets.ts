import { DomainError } from '../domain/decider.js';
import {
  jobSecretsDecider,
  jobSecretsStreamId,
  reservedEnvName,
  secretDecider,
  secretNameDecider,
  secretNameStreamId,
  secretStreamId,
  staleClaimMs,
  type JobSecretMapping,
} from '../domain/secret.js';
import { jobSecretsCollection, secretsCollection, type JobSecretsDoc, type SecretDoc } from '../projections/secrets.js';
import type { ProjectionEngine } from '../projections/engine.js';
import type { DocumentStore } from '../store/document-store.js';
import type { CommandBus, CommandContext } from './commands.js';
import { newId } from './ids.js';
import type { Keys } from '../adapters/keys.js';

/** The purpose secret values are sealed under (`Keys.encrypt`). */
const purpose = 'secrets';

/** Secrets on the host: sealed at rest, opened only to start a run or to redact what a run stores. */
export class Secrets {
  constructor(
    private readonly bus: CommandBus,
    private readonly docs: DocumentStore,
    private readonly engine: ProjectionEngine,
    private readonly keys: Keys,
  ) {}

  private get secrets() {
    return this.docs.collection<SecretDoc>(secretsCollection);
  }

  async create(ctx: CommandContext, workspaceId: string, name: string, value: string): Promise<string> {
    const id = newId();
    const takeOver = await this.staleOwner(workspaceId, name);
    await this.bus.execute(
      secretNameStreamId(workspaceId, name),
      secretNameDecider,
      { type: 'Claim', secretId: id, name, now: Date.now(), ...(takeOver ? { takeOver } : {}) },
      ctx,
    );
    const r = await this.bus.execute(
      secretStreamId(id),
      secretDecider,
      {
        type: 'CreateSecret',
        secretId: id,
        workspaceId,
        name,
        sealed: this.keys.encrypt(purpose, value),
        now: Date.now(),
      },
      ctx,
    );
    await this.engine.waitFor(r.position);
    return id;
  }

  /** The owner of a claim that no live secret stands behind (see `secretNameDecider`), or null. */
  private async staleOwner(workspaceId: string, name: string): Promise<string | null> {
    const { state } = await this.bus.load(secretNameStreamId(workspaceId, name), secretNameDecider);
    if (!state.owner) return null;
    const owner = (await this.bus.load(secretStreamId(state.owner), secretDecider)).state;
    if (owner.status === 'deleted') return state.owner;
    if (owner.status === 'none' && Date.now() - state.claimedAt > staleClaimMs) return state.owner;
    return null;
  }

  async change(ctx: CommandContext, workspaceId: string, id: string, value: string): Promise<void> {
    const r = await this.bus.execute(
      secretStreamId(id),
      secretDecider,
      (s) => {
        if (s.status !== 'active' || s.workspaceId !== workspaceId) throw DomainError.notFound('Secret');
        return { type: 'ChangeSecret' as const, sealed: this.keys.encrypt(purpose, value), now: Date.now() };
      },
      ctx,
    );
    await this.engine.waitFor(r.position);
  }

  async delete(ctx: CommandContext, workspaceId: string, id: string): Promise<void> {
    const r = await this.bus.execute(
      secretStreamId(id),
      secretDecider,
      (s) => {
        if (s.status !== 'active' || s.workspaceId !== workspaceId) throw DomainError.notFound('Secret');
        return { type: 'DeleteSecret' as const, now: Date.now() };
      },
      ctx,
    );
    const name = (r.state as { name: string }).name;
    await this.bus.execute(
      secretNameStreamId(workspaceId, name),
      secretNameDecider,
      { type: 'Release', secretId: id },
      ctx,
    );
    await this.engine.waitFor(r.position);
  }

  /** A secret of the workspace by name, or null (for settings that name one, such as `notifySecret`). */
  async byName(workspaceId: string, name: string): Promise<{ id: string; name: string } | null> {
    const doc = await this.secrets.findOne({ workspaceId, name });
    return doc ? { id: doc._id, name: doc.name } : null;
  }

  /** The opened value of a secret of the workspace by name, or null when there is none. */
  async valueOf(workspaceId: string, name: string): Promise<string | null> {
    const doc = await this.secrets.findOne({ workspaceId, name });
    return doc ? this.keys.decrypt(purpose, doc.sealed) : null;
  }

  /** The job's mappings with names, dropping secrets deleted since. */
  async mappings(workspaceId: string, jobId: string): Promise<Array<JobSecretMapping & { secretName: string }>> {
    const doc = await this.docs.collection<JobSecretsDoc>(jobSecretsCollection).findOne({ _id: jobId });
    const list = doc?.mappings ?? [];
    if (list.length === 0) return [];
    const found = await this.secrets.find({ _id: { $in: list.map((m) => m.secretId) }, workspaceId });
    const names = new Map(found.map((s) => [s._id, s.name]));
    return list.filter((m) => names.has(m.secretId)).map((m) => ({ ...m, secretName: names.get(m.secretId)! }));
  }

  /** Replaces the job's whole set. Every secret must be a live secret of the workspace (else 404). */
  async setMappings(
    ctx: CommandContext,
    workspaceId: string,
    jobId: string,
    mappings: JobSecretMapping[],
  ): Promise<void> {
    const ids = [...new Set(mappings.map((m) => m.secretId))];
    const found = ids.length ? await this.secrets.find({ _id: { $in: ids }, workspaceId }) : [];
    if (found.length !== ids.length) throw DomainError.notFound('Secret');
    const r = await this.bus.execute(
      jobSecretsStreamId(jobId),
      jobSecretsDecider,
      { type: 'SetJobSecrets', jobId, mappings },
      ctx,
    );
    await this.engine.waitFor(r.position);
  }

  /**
   * Environment variables for a run, opened when the run starts (so changes apply to the next run and deleted
   * secrets drop out). `SVC_*` and proxy variable names are dropped (docs/sandbox.md, "Environment").
   */
  async envFor(workspaceId: string, jobId: string): Promise<Record<string, string>> {
    const env: Record<string, string> = {};
    const mapped = (await this.mappings(workspaceId, jobId)).filter((m) => !reservedEnvName.test(m.envName));
    if (mapped.length === 0) return env;
    const sealed = new Map(
      (await this.secrets.find({ _id: { $in: mapped.map((m) => m.secretId) }, workspaceId })).map((s) => [
        s._id,
        s.sealed,
      ]),
    );
    for (const m of mapped) {
      const value = sealed.get(m.secretId);
      if (value !== undefined) env[m.envName] = this.keys.decrypt(purpose, value);
    }
    return env;
  }

  /** Every value of the workspace, for redaction of what runs store. */
  async valuesFor(workspaceId: string): Promise<string[]> {
    return (await this.secrets.find({ workspaceId })).map((s) => this.keys.decrypt(purpose, s.sealed));
  }
}
