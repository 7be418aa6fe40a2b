import { randomUUID } from 'node:crypto';
import type { Dirent } from 'node:fs';
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join, relative, resolve, sep } from 'node:path';

/**
 * A run's files on the host: `runs/<id>/artifacts/<relative path>` for what the run left in
 * /svc/outputs, `runs/<id>/events/<uuid>.json` for timeline payloads too large to keep inline.
 */
export class RunFiles {
  constructor(private readonly root: string) {}

  /** The run's artifacts directory (it may not exist). */
  artifactsDir(runId: string): string {
    return resolve(this.root, 'runs', runId, 'artifacts');
  }

  /** `relative` inside the run's artifacts, or null when it would leave them. */
  artifactPath(runId: string, relative: string): string | null {
    const base = this.artifactsDir(runId);
    const target = resolve(base, relative);
    return target.startsWith(base + sep) ? target : null;
  }

  /** Removes everything a run left on disk (its artifacts, candidates and payloads). */
  async removeRun(runId: string): Promise<void> {
    await rm(resolve(this.root, 'runs', runId), { recursive: true, force: true });
  }

  async saveArtifact(runId: string, relative: string, content: Buffer): Promise<void> {
    const target = this.artifactPath(runId, relative);
    if (!target) throw new Error(`${relative} is outside the run's outputs`);
    await mkdir(join(target, '..'), { recursive: true });
    await writeFile(target, content);
  }

  /** A script the agent left in /svc/candidates, kept for reflection. */
  async saveCandidate(runId: string, relative: string, content: Buffer): Promise<void> {
    const base = resolve(this.root, 'runs', runId, 'candidates');
    const target = resolve(base, relative);
    if (!target.startsWith(base + sep)) return;
    await mkdir(join(target, '..'), { recursive: true });
    await writeFile(target, content);
  }

  /** The run's candidate scripts, by path, in name order; at most `max` of them, each cut to `maxChars`. */
  async candidates(runId: string, max: number, maxChars: number): Promise<Array<{ name: string; content: string }>> {
    const base = resolve(this.root, 'runs', runId, 'candidates');
    let names: string[];
    try {
      names = ((await readdir(base, { recursive: true, withFileTypes: true })) as Dirent[])
        .filter((d) => d.isFile())
        .map((d) => relative(base, join(d.parentPath ?? d.path, d.name)))
        .sort();
    } catch {
      return [];
    }
    const out: Array<{ name: string; content: string }> = [];
    for (const name of names.slice(0, max))
      out.push({ name, content: (await readFile(join(base, name), 'utf8')).slice(0, maxChars) });
    return out;
  }

  /**
   * Removes everything the run left on disk: artifacts, candidates and large timeline payloads. A run id that would
   * point outside the runs folder removes nothing.
   */
  async remove(runId: string): Promise<void> {
    const base = resolve(this.root, 'runs');
    const dir = resolve(base, runId);
    if (!dir.startsWith(base + sep) || dir.slice(base.length + 1).includes(sep)) return;
    await rm(dir, { recursive: true, force: true });
  }

  /** Stores a whole payload; answers its name for `readPayload`. */
  async savePayload(runId: string, json: string): Promise<string> {
    const name = `${randomUUID()}.json`;
    const dir = resolve(this.root, 'runs', runId, 'events');
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, name), json);
    return name;
  }

  async readPayload(runId: string, name: string): Promise<unknown | null> {
    if (!/^[0-9a-f-]{36}\.json$/.test(name)) return null;
    try {
      return JSON.parse(await readFile(resolve(this.root, 'runs', runId, 'events', name), 'utf8')) as unknown;
    } catch {
      return null;
    }
  }
}
