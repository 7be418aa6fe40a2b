import type { PlaybookContent } from '../domain/playbook-types.js';
import type { SavePlaybook } from '../domain/playbook.js';

/** A plain save of a playbook version by a person: no ops, no run behind it, nothing rolled back. */
export function plainSave(s: {
  jobId: string;
  workspaceId: string;
  content: PlaybookContent;
  summary: string;
  authorId: string | null;
  now: number;
}): SavePlaybook {
  return {
    type: 'SavePlaybook',
    ...s,
    baseVersion: null,
    author: 'user',
    sourceRunId: null,
    ops: null,
    dockerfileHash: null,
    proposedMain: false,
    rolledBackFrom: null,
  };
}
