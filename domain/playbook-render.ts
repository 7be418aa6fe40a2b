import { isValidScriptName, toolName } from './playbook-header.js';
import type { PlaybookContent } from './playbook-types.js';

/**
 * The playbook as the agent reads it (docs/playbooks.md, "Rendering"): active learnings and the toolkit, in the system
 * prompt and in /svc/PLAYBOOK.md. The Dockerfile, setup, main and verify are not rendered: the agent does not need them
 * to work, and they would eat the budget. Pure.
 */

/** Tokens the rendered playbook may take. */
export const playbookBudget = 3000;

/** The estimate everything uses: one token per four characters, rounded up. */
export const estimateTokens = (text: string) => Math.ceil(text.length / 4);

export const emptyPlaybookText = 'This job has not learned anything yet.\n';
const toolkitIntro =
  'Scripts proven in earlier runs. Call them as tools, or run them as /svc/toolkit/<name> with `--name value` flags.';

function learningLines(c: PlaybookContent): string[] {
  return c.learnings
    .filter((l) => l.status !== 'retired')
    .map((l) => `- [${l.id}] ${l.text}${l.when ? ` (when ${l.when})` : ''}`);
}

function toolkitLines(c: PlaybookContent): string[] {
  return c.toolkit.map(
    (s) =>
      `- ${toolName(s.name)}: ${s.description}${s.sideEffects === 'external' ? ' (has external side effects)' : ''}`,
  );
}

/** Sections as lines: a heading, then one line per item. */
function sections(c: PlaybookContent): string[][] {
  const out: string[][] = [];
  const learnings = learningLines(c);
  if (learnings.length > 0) out.push(['## Learnings', ...learnings]);
  const tools = toolkitLines(c);
  if (tools.length > 0) out.push(['## Toolkit', toolkitIntro, ...tools]);
  return out;
}

const join = (parts: string[][]) => parts.map((s) => s.join('\n')).join('\n\n');

/** The full render, whatever its size: what the budget is measured on. */
export function renderPlaybook(c: PlaybookContent): string {
  return join(sections(c));
}

/** Estimated tokens of the render. */
export const playbookTokens = (c: PlaybookContent) => estimateTokens(renderPlaybook(c));

/**
 * The render cut to the budget. Saves keep every version within it, so this only cuts content made under other
 * rules; items are dropped from the end of each section, with a line saying how many, never mid-line.
 */
export function renderWithinBudget(c: PlaybookContent, budget = playbookBudget, reserve = 0): string {
  const parts = sections(c);
  const limit = budget * 4 - reserve;
  if (join(parts).length <= limit) return join(parts);
  const kept = parts.map((s) => [...s]);
  let dropped = 0;
  const note = () => `\n\n(${dropped} more item(s) left out to stay within the playbook's budget.)`;
  // Drop items (never headings or the toolkit's intro line) from the longest section until it fits.
  while (join(kept).length + note().length > limit) {
    const longest = kept.reduce((a, b) => (b.length > a.length ? b : a));
    const fixed = longest[0] === '## Toolkit' ? 2 : 1;
    if (longest.length <= fixed) break;
    longest.pop();
    dropped++;
  }
  return join(kept.filter((s) => s.length > (s[0] === '## Toolkit' ? 2 : 1))) + note();
}

/** `/svc/PLAYBOOK.md`: a title and the render, or one line when the job has learned nothing yet. */
export function playbookMarkdown(c: PlaybookContent): string {
  const body = renderWithinBudget(c, playbookBudget, '# Playbook\n\n'.length + 1);
  if (body === '') return emptyPlaybookText;
  return `# Playbook\n\n${body}\n`;
}

/** A file for the sandbox, in the shape of the sandbox port's `FileIn`. */
export interface PlaybookFile {
  path: string;
  content: string;
  mode: number;
}

/**
 * The files a run's sandbox gets from its playbook version (docs/sandbox.md, "Layout"): /svc/PLAYBOOK.md always, each
 * toolkit script as an executable /svc/toolkit/<name>, and /svc/main when there is one. Names were validated on save;
 * they are checked again because a file path is built from them.
 */
export function playbookFiles(c: PlaybookContent): PlaybookFile[] {
  const files: PlaybookFile[] = [{ path: '/svc/PLAYBOOK.md', content: playbookMarkdown(c), mode: 0o644 }];
  for (const s of c.toolkit) {
    if (!isValidScriptName(s.name)) continue;
    files.push({ path: `/svc/toolkit/${s.name}`, content: s.content, mode: 0o755 });
  }
  if (c.main !== null) files.push({ path: '/svc/main', content: c.main, mode: 0o755 });
  return files;
}
