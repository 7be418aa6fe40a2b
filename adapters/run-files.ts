import { randomUUID } from 'node:crypto';
import { posix } from 'node:path';
import type { Readable } from 'node:stream';
import { BlobIntegrityError, sha256Hex, type BlobStore } from '../store/blob-store.js';

/** A run id as the service makes them; anything else could name another key of the blob store. */
const runIdPattern = /^[0-9A-Za-z-]{1,100}$/;
const payloadName = /^[0-9a-f-]{36}\.json$/;

/** A stored copy of a whole timeline payload: its name under the run's events and its SHA-256. */
export interface StoredPayload {
  name: string;
  sha256: string;
}

/**
 * A run's files in the blob store (docs/design.md, "Large payloads out of line"): `runs/<id>/artifacts/<relative
 * path>` for what the run left in /svc/outputs, `runs/<id>/candidates/<path>` for scripts kept for reflection, and
 * `runs/<id>/events/<uuid>.json` for timeline payloads too large to keep inline. With the embedded store these are
 * the same files under the data directory as before the port existed.
 */
export class RunFiles {
  constructor(private readonly blobs: BlobStore) {}

  private prefix(runId: string, folder: string): string {
    if (!runIdPattern.test(runId)) throw new Error(`not a run id: ${runId}`);
    return `runs/${runId}/${folder}/`;
  }

  /**
   * The key of `relative` inside the run's artifacts, or null when it would leave them. A leading `/` is dropped;
   * `..` that stays inside is resolved, one that would leave is refused.
   */
  artifactKey(runId: string, relative: string): string | null {
    if (!runIdPattern.test(runId)) return null;
    const normal = posix.normalize(relative.replace(/^\/+/, ''));
    if (normal === '.' || normal === '..' || normal.startsWith('../') || normal.endsWith('/') || normal.includes('\0'))
      return null;
    return this.prefix(runId, 'artifacts') + normal;
  }

  /** Removes everything a run left: artifacts, candidates and payloads. A malformed run id removes nothing. */
  async remove(runId: string): Promise<void> {
    if (!runIdPattern.test(runId)) return;
    await this.blobs.deletePrefix(`runs/${runId}/`);
  }

  /** The name workspace erasure knows it by. */
  removeRun(runId: string): Promise<void> {
    return this.remove(runId);
  }

  async saveArtifact(runId: string, relative: string, content: Buffer): Promise<void> {
    const key = this.artifactKey(runId, relative);
    if (!key) throw new Error(`${relative} is outside the run's outputs`);
    await this.blobs.put(key, content);
  }

  /** Every artifact, by path under the outputs (with `/`), depth first and each folder's entries by name. */
  async artifacts(runId: string): Promise<Array<{ name: string; size: number }>> {
    const prefix = this.prefix(runId, 'artifacts');
    const entries = (await this.blobs.list(prefix)).map((b) => ({ name: b.key.slice(prefix.length), size: b.bytes }));
    return entries.sort((a, b) => comparePaths(a.name, b.name));
  }

  /** One artifact as a stream with its size, or null. */
  openArtifact(runId: string, relative: string): Promise<{ stream: Readable; bytes: number } | null> {
    const key = this.artifactKey(runId, relative);
    return key ? this.blobs.open(key) : Promise.resolve(null);
  }

  /** A script the agent left in /svc/candidates, kept for reflection. */
  async saveCandidate(runId: string, relative: string, content: Buffer): Promise<void> {
    const normal = posix.normalize(relative);
    if (normal === '.' || normal === '..' || normal.startsWith('../') || normal.startsWith('/')) return;
    await this.blobs.put(this.prefix(runId, 'candidates') + normal, content);
  }

  /** The run's candidate scripts, by path, in name order; at most `max` of them, each cut to `maxChars`. */
  async candidates(runId: string, max: number, maxChars: number): Promise<Array<{ name: string; content: string }>> {
    const prefix = this.prefix(runId, 'candidates');
    const out: Array<{ name: string; content: string }> = [];
    for (const b of (await this.blobs.list(prefix)).slice(0, max)) {
      const content = await this.blobs.get(b.key);
      if (content) out.push({ name: b.key.slice(prefix.length), content: content.toString('utf8').slice(0, maxChars) });
    }
    return out;
  }

  /** Stores a whole payload; answers its name and hash for `readPayload`. */
  async savePayload(runId: string, json: string): Promise<StoredPayload> {
    const name = `${randomUUID()}.json`;
    const ref = await this.blobs.put(this.prefix(runId, 'events') + name, json);
    return { name, sha256: ref.sha256 };
  }

  /**
   * A whole payload, or null when it is gone (the run's files were removed by retention). With `sha256` (entries
   * written since the blob store) bytes that do not match are refused; older entries carry the name alone.
   */
  async readPayload(runId: string, name: string, sha256?: string): Promise<unknown> {
    if (!payloadName.test(name) || !runIdPattern.test(runId)) return null;
    const key = this.prefix(runId, 'events') + name;
    const content = await this.blobs.get(key);
    if (!content) return null;
    if (sha256 && sha256Hex(content) !== sha256)
      throw new BlobIntegrityError(key, 'does not match the sha256 its timeline entry recorded');
    try {
      return JSON.parse(content.toString('utf8')) as unknown;
    } catch {
      throw new BlobIntegrityError(key, 'is not the JSON that was stored');
    }
  }
}

/** Path order of a depth-first walk that lists each folder's entries by name. */
function comparePaths(a: string, b: string): number {
  const x = a.split('/');
  const y = b.split('/');
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const c = x[i]!.localeCompare(y[i]!);
    if (c !== 0) return c;
  }
  return x.length - y.length;
}
