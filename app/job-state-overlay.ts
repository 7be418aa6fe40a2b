import { checkKey, decideDelete, decideSet, type StateUsage } from '../domain/job-state.js';
import type { CommandContext } from './commands.js';
import type { JobStateAccess, StateEntry } from './job-state.js';

/**
 * A shadow run's job state (docs/learning.md, "Shadow runs"): a copy-on-write overlay. Reads fall through to the real
 * state, writes and deletes stay here and are decided against the real usage plus the overlay's own changes, so the
 * limits hold as they would for a real run. Nothing reaches the job's stream.
 */
export class JobStateOverlay implements JobStateAccess {
  /** By key: the overlay's value, or null for a key it deleted. */
  private readonly changes = new Map<string, StateEntry | null>();

  constructor(
    private readonly real: JobStateAccess,
    private readonly clock: () => number = Date.now,
  ) {}

  /** Whether the shadow run wrote or deleted anything. */
  get touched(): boolean {
    return this.changes.size > 0;
  }

  async get(workspaceId: string, jobId: string, key: string): Promise<StateEntry | null> {
    if (this.changes.has(key)) return this.changes.get(key) ?? null;
    return this.real.get(workspaceId, jobId, key);
  }

  async list(workspaceId: string, jobId: string): Promise<StateEntry[]> {
    const merged = new Map((await this.real.list(workspaceId, jobId)).map((e) => [e.key, e]));
    for (const [key, entry] of this.changes) {
      if (entry) merged.set(key, entry);
      else merged.delete(key);
    }
    return [...merged.values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  async usage(workspaceId: string, jobId: string): Promise<StateUsage> {
    const entries = await this.list(workspaceId, jobId);
    return { keys: entries.length, bytes: entries.reduce((n, e) => n + e.size, 0) };
  }

  async set(_ctx: CommandContext, workspaceId: string, jobId: string, key: string, value: string): Promise<StateEntry> {
    const old = await this.get(workspaceId, jobId, key);
    const next = decideSet(key, value, await this.usage(workspaceId, jobId), old?.size ?? null);
    const entry = { key, value, size: next.size, updatedAt: this.clock() };
    this.changes.set(key, entry);
    return entry;
  }

  async delete(_ctx: CommandContext, workspaceId: string, jobId: string, key: string): Promise<boolean> {
    checkKey(key);
    const old = await this.get(workspaceId, jobId, key);
    if (!old) return false;
    decideDelete(await this.usage(workspaceId, jobId), old.size);
    this.changes.set(key, null);
    return true;
  }
}
