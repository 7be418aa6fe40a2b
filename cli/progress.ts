import type { ReplayProgress } from '../projections/engine.js';

const count = (n: number) => n.toLocaleString('en-US');

/**
 * Progress of a long replay for the terminal: nothing for the first `everyMs`, then one line every `everyMs` with the
 * events done (of the total, when the store counts it), the share and the rate so far (docs/design.md, "Replay").
 */
export function replayProgressLines(write: (line: string) => void, label: string, everyMs = 3000) {
  let next = everyMs;
  return (p: ReplayProgress): void => {
    if (p.elapsedMs < next) return;
    next = p.elapsedMs + everyMs;
    const rate = Math.round(p.done / (p.elapsedMs / 1000));
    const of =
      p.total !== null && p.total > 0 ? ` of ${count(p.total)} (${Math.floor((p.done / p.total) * 100)}%)` : '';
    write(`${label}: ${count(p.done)}${of} events, ${count(rate)} events/s\n`);
  };
}
