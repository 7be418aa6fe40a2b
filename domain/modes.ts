import type { Mode } from './job-types.js';

export interface ModeInputs {
  /** No active learning, an empty toolkit and no main script. */
  playbookEmpty: boolean;
  hasMain: boolean;
  modePin: Mode | null;
  demoted: boolean;
}

/** The mode the next run starts in (docs/learning.md, "Modes"): a pin can force it, but never past a missing main. */
export function nextMode({ playbookEmpty, hasMain, modePin, demoted }: ModeInputs): Mode {
  if (playbookEmpty || modePin === 'explore') return 'explore';
  if (!hasMain || modePin === 'assisted') return 'assisted';
  if (modePin === 'scripted' || !demoted) return 'scripted';
  return 'assisted';
}
