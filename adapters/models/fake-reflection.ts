import { graduationMarker } from '../../domain/reflection.js';
import type { ModelRequest } from './types.js';

/**
 * The fake provider's reflection when its script queue is empty: deterministic, read
 * from the reflection prompt. After a successful run it adds one toolkit script that runs the instruction's quoted
 * commands, and a learning; once the server says the job is eligible, it proposes a main script that calls that
 * script, with `exit_code == 0` as its check. So a job's whole life can be shown and tested offline.
 */

export const fakeScriptName = 'steps';

interface PromptFacts {
  instruction: string;
  /** Candidate scripts the run left, with a header that describes them. */
  candidates: Array<{ name: string; content: string }>;
  status: string;
  graduation: string;
  playbook: {
    toolkit?: Array<{ name: string }>;
    learnings?: Array<{ id: string; status: string }>;
    main?: string | null;
  };
}

function between(text: string, start: string, end: string): string {
  const a = text.indexOf(start);
  if (a < 0) return '';
  const b = text.indexOf(end, a + start.length);
  return text.slice(a + start.length, b < 0 ? undefined : b);
}

function facts(prompt: string): PromptFacts {
  let playbook: PromptFacts['playbook'] = {};
  try {
    playbook = JSON.parse(between(prompt, ' tokens)\n', '\n\n## This run')) as PromptFacts['playbook'];
  } catch {
    // an unreadable playbook section reads as an empty playbook
  }
  return {
    instruction: between(prompt, '## The job\nInstruction:\n', '\n\nSuccess criteria:'),
    candidates: [
      ...between(prompt, '## Candidate scripts the run left in /svc/candidates\n', '\n\n## Earlier runs').matchAll(
        /^### (\S+)\n```\n([\s\S]*?)\n```$/gm,
      ),
    ]
      .filter((m) => /svc:description/.test(m[2]!))
      .map((m) => ({ name: m[1]!.replace(/^.*\//, '').replace(/\.[a-z]+$/, ''), content: `${m[2]!}\n` })),
    status: /^Run #\d+: (\w+),/m.exec(prompt)?.[1] ?? '',
    graduation: new RegExp(`^${graduationMarker} ([a-z ]+)\\.`, 'm').exec(prompt)?.[1] ?? '',
    playbook,
  };
}

const op = (
  fields: Partial<Record<'op' | 'rationale' | 'id' | 'kind' | 'text' | 'when' | 'name' | 'content', string>>,
) => ({
  op: '',
  rationale: '',
  id: null,
  kind: null,
  text: null,
  when: null,
  name: null,
  content: null,
  ...fields,
});

export function fakeReflection(req: ModelRequest, quotedCommands: (instruction: string) => string[]): string {
  const prompt = req.messages.map((m) => (m.role === 'user' ? m.text : '')).join('\n');
  const f = facts(prompt);
  const commands = quotedCommands(f.instruction);
  const ops: Array<ReturnType<typeof op>> = [];
  const hasScript = (f.playbook.toolkit ?? []).some((s) => s.name === fakeScriptName);
  if (f.status === 'succeeded' && !hasScript && commands.length > 0) {
    ops.push(
      op({
        op: 'upsert_script',
        name: fakeScriptName,
        rationale:
          'The run succeeded with these commands; keeping them as a script makes the next runs repeat them exactly.',
        content: `#!/bin/sh\n# svc:name ${fakeScriptName}\n# svc:description Runs the job's commands in order\n# svc:side-effects none\nset -e\n${commands.join('\n')}\n`,
      }),
    );
    ops.push(
      op({
        op: 'add_learning',
        kind: 'procedure',
        rationale: 'Tells the agent the script exists.',
        text: `The job's commands are in the toolkit script ${fakeScriptName}; running it does the whole job.`,
      }),
    );
  }
  for (const c of f.status === 'succeeded' ? f.candidates : []) {
    ops.push(
      op({
        op: 'upsert_script',
        name: /svc:name\s+(\S+)/.exec(c.content)?.[1] ?? c.name,
        rationale: 'The run wrote and used this script; it belongs in the toolkit.',
        content: c.content,
      }),
    );
  }
  const main = `#!/bin/sh\n# Does the job without the model. Inputs, when the job declares any, are in /svc/input.json.\nset -e\n/svc/toolkit/${fakeScriptName}\n`;
  if (f.graduation === 'eligible' && (hasScript || ops.length > 0)) {
    ops.push(
      op({
        op: f.playbook.main ? 'update_main' : 'propose_main',
        rationale: 'Three runs did the same steps; the script can do them alone.',
        content: main,
      }),
    );
    ops.push(
      op({
        op: 'set_verify',
        rationale: 'The script exits non-zero when a command fails.',
        content: '{"checks":["exit_code == 0"],"llm":false,"varies":[]}',
      }),
    );
  } else if ((f.graduation === 'main failed' || f.graduation === 'demoted') && f.playbook.main) {
    ops.push(op({ op: 'update_main', rationale: 'Repair the main script with the proven steps.', content: main }));
  }
  const used = (f.playbook.learnings ?? []).filter((l) => l.status === 'active').map((l) => l.id);
  const summary =
    ops.length === 0
      ? 'Nothing new to learn from this run.'
      : ops.some((o) => o.op === 'propose_main')
        ? 'The job can run as a script now.'
        : `Learned from the run: ${ops.map((o) => o.op).join(', ')}.`;
  return JSON.stringify({ summary, usedLearnings: used, ops });
}
