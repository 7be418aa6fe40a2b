import { DomainError } from '../domain/decider.js';
import { jobSecretsStreamId, checkMappings, secretDecider, secretNameDecider, secretNameStreamId, secretStreamId, type JobSecretMapping } from '../domain/secret.js';
import { jobSecretsCollection, secretsCollection, type JobSecretsDoc, type SecretDoc } from '../projections/secrets.js';
import type { ProjectionEngine } from '../projections/engine.js';
import type { DocumentStore } from '../store/document-store.js';
import type { EventStore } from '../store/event-store.js';
import type { CommandBus, CommandContext } from './commands.js';
import { newId } from './ids.js';
import type { Keys } from './keys.js';

const purpose = 'secrets';

/** Secrets on the host: sealed at rest, opened only to start a run or to redact what a run stores. */
export class Secrets {
  constructor(
    private readonly bus: CommandBus,
    private readonly events: EventStore,
    private readonly docs: DocumentStore,
    private readonly engine: ProjectionEngine,
    private readonly keys: Keys,
  ) {}

  private get secrets() {
    return this.docs.collection<SecretDoc>(secretsCollection);
  }

  async create(ctx: CommandContext, workspaceId: string, name: string, value: string): Promise<string> {
    const id = newId();
    await this.bus.execute(secretNameStreamId(workspaceId, name), secretNameDecider, { type: 'Claim', secretId: id }, ctx);
    const r = await this.bus.execute(secretStreamId(id), secretDecider, { type: 'CreateSecret', secretId: id, workspaceId, name, sealed: this.keys.encrypt(purpose, value), now: Date.now() }, ctx);
    await this.engine.waitFor(r.position);
    return id;
  }

  async change(ctx: CommandContext, workspaceId: string, id: string, value: string): Promise<void> {
    const r = await this.bus.execute(secretStreamId(id), secretDecider, (s) => {
      if (s.status !== 'active' || s.workspaceId !== workspaceId) throw DomainError.notFound('Secret');
      return { type: 'ChangeSecret' as const, sealed: this.keys.encrypt(purpose, value), now: Date.now() };
    }, ctx);
    await this.engine.waitFor(r.position);
  }

  async delete(ctx: CommandContext, workspaceId: string, id: string): Promise<void> {
    const r = await this.bus.execute(secretStreamId(id), secretDecider, (s) => {
      if (s.status !== 'active' || s.workspaceId !== workspaceId) throw DomainError.notFound('Secret');
      return { type: 'DeleteSecret' as const, now: Date.now() };
    }, ctx);
    const name = (r.state as { name: string }).name;
    await this.bus.execute(secretNameStreamId(workspaceId, name), secretNameDecider, { type: 'Release', secretId: id }, ctx);
    await this.engine.waitFor(r.position);
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

  async setMappings(ctx: CommandContext, workspaceId: string, jobId: string, mappings: JobSecretMapping[]): Promise<void> {
    checkMappings(mappings);
    const ids = [...new Set(mappings.map((m) => m.secretId))];
    const found = ids.length ? await this.secrets.find({ _id: { $in: ids }, workspaceId }) : [];
    if (found.length !== ids.length) throw DomainError.notFound('Secret');
    const { position } = await this.events.append(jobSecretsStreamId(jobId), [{ type: 'JobSecretsSet', data: { jobId, mappings }, metadata: { workspaceId, actor: ctx.actor, requestId: ctx.requestId, correlationId: ctx.requestId, causationId: null, ts: Date.now(), v: 1 } }], 'any');
    await this.engine.waitFor(position);
  }

  /** Environment variables for a run: read when the run starts, so changes apply to the next run. */
  async envFor(workspaceId: string, jobId: string): Promise<Record<string, string>> {
    const env: Record<string, string> = {};
    const mapped = await this.mappings(workspaceId, jobId);
    if (mapped.length === 0) return env;
    const sealed = new Map((await this.secrets.find({ _id: { $in: mapped.map((m) => m.secretId) } })).map((s) => [s._id, s.sealed]));
    for (const m of mapped) env[m.envName] = this.keys.decrypt(purpose, sealed.get(m.secretId)!);
    return env;
  }

  /** Every value of the workspace, for redaction of what runs store. */
  async valuesFor(workspaceId: string): Promise<string[]> {
    return (await this.secrets.find({ workspaceId })).map((s) => this.keys.decrypt(purpose, s.sealed));
  }
}
