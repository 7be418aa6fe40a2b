import { posix } from 'node:path';
import type { Readable } from 'node:stream';
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
  list(): Promise<ArtifactEntry[]> {
    return this.files.artifacts(this.run._id);
  }

  /**
   * One file from the blob store, or `not_found` ("Artifact not found"). Confined to the run's own artifacts: a
   * leading `/` is dropped, and `..` or an absolute path never leaves them.
   */
  async file(path: string): Promise<{ name: string; size: number; stream: Readable }> {
    const opened = await this.files.openArtifact(this.run._id, path);
    if (!opened) throw DomainError.notFound('Artifact');
    return { name: posix.basename(path), size: opened.bytes, stream: opened.stream };
  }
}
