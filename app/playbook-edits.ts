import { validateContent } from '../domain/playbook.js';
import { redactor, redactValue } from '../domain/redact.js';
import type { JobDoc } from '../projections/jobs.js';
import type { ContentInput } from '../schemas/playbook.js';
import type { CommandContext } from './commands.js';
import type { Playbooks } from './playbooks.js';
import type { Secrets } from './secrets.js';

export interface HandEdit {
  content: ContentInput;
  /** The version the edit started from; a playbook changed since answers 409. Null: no check. */
  baseVersion: number | null;
  summary: string | null;
}

/** A person's edit of a job's playbook, saved as a new version. */
export class PlaybookEditor {
  constructor(
    private readonly playbooks: Playbooks,
    private readonly secrets: Secrets,
  ) {}

  /**
   * Redacts the workspace's secret values first, so a pasted value never reaches a stored playbook
   * (docs/security.md); then reads the content again (script headers, inputs the job declares) and saves it.
   */
  async edit(ctx: CommandContext, job: JobDoc, edit: HandEdit): Promise<void> {
    const redact = redactor(await this.secrets.valuesFor(job.workspaceId));
    const input = redactValue(edit.content, redact) as ContentInput;
    const content = validateContent(input, { declaresInputs: (job.spec.inputs ?? []).length > 0 });
    await this.playbooks.save(ctx, job.workspaceId, job._id, {
      content,
      baseVersion: edit.baseVersion,
      summary: edit.summary?.trim() || 'Edited by hand',
      author: 'user',
    });
  }
}
