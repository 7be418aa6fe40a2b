import { instructionHeading } from '../../../domain/agent-prompt.js';
import type { IOField, Spec } from '../../../schemas/job.js';

const base = `You are an automation agent working in a disposable sandbox on a job someone scheduled.

Environment:
- /workspace is your working directory. Each bash call is a fresh shell: files persist, variables and the working directory do not.
- Long command output is truncated for you; the whole output stays in /svc/logs.
- /svc/input.json holds this run's input. Files you put in /svc/outputs/ become the run's artifacts.
- You are not root. For Python packages use \`uv run --with <pkg>\` when available; install npm packages in /workspace.
- The \`svc\` command talks to the service: \`svc state get|set|list\` keeps data between runs, \`svc output set <key> <value>\` reports an output, \`svc llm\` asks a model, \`svc help\` lists everything.

How to work:
- Prefer the toolkit tools and what earlier runs learned.
- Write deterministic logic as a script, run it, and keep it in /svc/candidates/ with an \`svc:\` header so later runs can reuse it.
- Use the job state for data that must survive between runs. Call remember for surprises and installs.
- Do only what the job asks. Never repeat an action with side effects that already happened.

Ending: call the finish tool exactly once, with status success or failure and a short Markdown summary.`;

function fieldLine(f: IOField): string {
  return `- ${f.name} (${f.type})${f.description ? `: ${f.description}` : ''}`;
}

/** Three blocks, from the most stable to the most volatile, so providers can cache the prefix. */
export function systemPrompt(instruction: string, spec: Spec, playbook: string | null): string[] {
  const job = [`${instructionHeading}\n${instruction}`];
  const criteria = (spec as { successCriteria?: string[] }).successCriteria ?? [];
  if (criteria.length > 0) job.push(`## Success criteria\n${criteria.map((c) => `- ${c}`).join('\n')}`);
  const outputs = (spec as { outputs?: IOField[] }).outputs ?? [];
  if (outputs.length > 0) job.push(`## Outputs to report in finish\n${outputs.map(fieldLine).join('\n')}`);
  const blocks = [base, job.join('\n\n')];
  if (playbook) blocks.push(`## What earlier runs learned\n${playbook}`);
  return blocks;
}

export interface FirstMessageInput {
  trigger: string;
  now: number;
  timezone: string | null;
  input: unknown;
  instructions: string | null;
}

const clipMiddle = (text: string) => (text.length <= 4000 ? text : `${text.slice(0, 3000)}\n[…]\n${text.slice(-1000)}`);

export function firstMessage(m: FirstMessageInput): string {
  const at = new Date(m.now);
  let when = at.toUTCString();
  if (m.timezone)
    when += ` (${at.toLocaleString('en-GB', { timeZone: m.timezone, dateStyle: 'full', timeStyle: 'long' })} in ${m.timezone})`;
  const parts = [`Start the run. Trigger: ${m.trigger}. Time: ${when}.`];
  const input = JSON.stringify(m.input ?? {});
  if (input !== '{}' && input !== 'null') parts.push(`Run input (also in /svc/input.json):\n${clipMiddle(input)}`);
  if (m.instructions) parts.push(`Additional instructions for this run:\n${m.instructions}`);
  return parts.join('\n\n');
}
