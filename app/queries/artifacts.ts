import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { DomainError } from '../../domain/decider.js';
import type { RunDoc } from '../../projections/runs.js';
import type { RunFiles } from '../../adapters/run-files.js';

export interface ArtifactEntry {
  /** Path under the run's outputs, with `/` between folders. */
  name: string;
  size: number;
}

/** The files a run left in its outputs; made only for a run found in the caller's workspace (docs/api.md). */
export class RunArtifacts {
  constructor(
    private readonly files: RunFiles,
    readonly run: RunDoc,
  ) {}

  /** Every file, depth first, each folder's entries by name. */
  list(): ArtifactEntry[] {
    const root = this.files.artifactsDir(this.run._id);
    if (!existsSync(root)) return [];
    const out: ArtifactEntry[] = [];
    const walk = (dir: string) => {
      for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
        const full = join(dir, entry.name);
        if (entry.isDirectory()) walk(full);
        else if (entry.isFile())
          out.push({ name: relative(root, full).split(sep).join('/'), size: statSync(full).size });
      }
    };
    walk(root);
    return out;
  }

  /**
   * One file on disk, or `not_found` ("Artifact not found"). Confined to the run's own folder: a leading `/` is
   * dropped, and `..` or an absolute path never leaves it.
   */
  file(path: string): { path: string; size: number } {
    const file = this.files.artifactPath(this.run._id, path.replace(/^\/+/, ''));
    if (!file || !existsSync(file)) throw DomainError.notFound('Artifact');
    const stat = statSync(file);
    if (!stat.isFile()) throw DomainError.notFound('Artifact');
    return { path: file, size: stat.size };
  }
}
