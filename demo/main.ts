// npm run demo: one job's life in the terminal, from an empty data directory, with the fake provider at a nominal
// price ($3 / $15 per million tokens): explore, assisted runs, the shadow run, graduation, scripted runs.
import { dollars, jobLife, type LifeRow } from './life.js';

const line = (r: LifeRow) => {
  const head = `run #${String(r.number).padEnd(2)} ${r.mode.padEnd(9)} ${r.status.padEnd(9)} ${dollars(r.cost).padStart(9)}  ${(r.msTotal / 1000).toFixed(2).padStart(5)} s  ${String(r.turns).padStart(2)} turns${r.fellBack ? '  fell back' : ''}`;
  const notes = [
    r.shadow && `shadow run ${r.shadow}`,
    r.learned,
    r.reflectionCost > 0 && `reflection ${dollars(r.reflectionCost)}`,
  ].filter(Boolean);
  return notes.length ? `${head}\n          ${notes.join('\n          ')}` : head;
};

process.stdout.write(
  'A job learns from its runs and graduates to a script (fake model at $3 / $15 per 1M tokens).\n\n',
);
const rows = await jobLife({
  runs: 7,
  price: { in: 3_000_000, out: 15_000_000 },
  onRow: (r) => process.stdout.write(`${line(r)}\n`),
});
const first = rows[0]!;
const last = rows[rows.length - 1]!;
const drop = first.cost > 0 ? Math.round((1 - last.cost / first.cost) * 100) : 0;
process.stdout.write(
  `\nFirst run ${dollars(first.cost)} in ${(first.msTotal / 1000).toFixed(2)} s (${first.mode}); last run ${dollars(last.cost)} in ${(last.msTotal / 1000).toFixed(2)} s (${last.mode}): ${drop}% cheaper on the model.\n`,
);
if (last.mode !== 'scripted' || last.cost !== 0) {
  process.stderr.write('the job did not graduate to a scripted run that costs nothing on the model\n');
  process.exit(1);
}
