// One job's life, from its first run to graduation and scripted runs, through the public API of a real server with
// the fake provider at a nominal price. `npm run demo` prints it; `npm run bench` measures it.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../app/config.js';
import { createLogger, startServer } from '../server/start.js';
import { signIn, useFakeModel, type Json } from './session.js';

export interface LifeRow {
  number: number;
  mode: string;
  status: string;
  /** micro-USD: the run's own cost plus its verification. */
  cost: number;
  reflectionCost: number;
  msTotal: number;
  turns: number;
  fellBack: boolean;
  /** What reflection did after the run: "added …", "graduated", or nothing. */
  learned: string | null;
  /** The shadow run's verdict on a new main, when there was one. */
  shadow: string | null;
  playbookVersion: number;
}

export interface LifeOptions {
  runs: number;
  /** Nominal model price, micro-USD per 1M tokens (input, output). */
  price: { in: number; out: number };
  onRow?: (row: LifeRow) => void;
}

/** Lives a job's life on a fresh data directory and answers one row per run. */
export async function jobLife(options: LifeOptions): Promise<LifeRow[]> {
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-demo-'));
  const server = await startServer(
    loadConfig({ port: 0, dataDir, roles: 'api,projector,runner' }, { NODE_ENV: 'production' }),
    createLogger('silent'),
    () => {},
  );
  try {
    const { call } = await signIn(server, 'demo@example.com');
    const model = await useFakeModel(call);
    await call('PATCH', `/api/models/${model.id}`, {
      price: { in: options.price.in, out: options.price.out, cacheRead: 0, cacheWrite: 0 },
    });
    const job = await call('POST', '/api/jobs', {
      name: 'Word count',
      instruction:
        'Count the words of the sample with `printf "the quick brown fox jumps" | wc -w > /svc/outputs/count.txt` and report the count with `svc output set words "$(cat /svc/outputs/count.txt)"`.',
      spec: { outputs: [{ name: 'words', type: 'integer', description: 'How many words the sample has' }] },
    });

    const rows: LifeRow[] = [];
    for (let i = 0; i < options.runs; i++) {
      const { runId } = await call('POST', `/api/jobs/${job.id}/runs`, {});
      let run: Json = {};
      for (let wait = 0; wait < 2400; wait++) {
        run = await call('GET', `/api/runs/${runId}`);
        if (!['queued', 'provisioning', 'running', 'verifying'].includes(run.status) && run.reflection !== 'pending')
          break;
        await new Promise((r) => setTimeout(r, 25));
      }
      const ops = (run.reflectionOps ?? []) as Array<{
        op: string;
        status: string;
        target?: string;
        test?: { status: string; detail: string };
      }>;
      const applied = ops.filter((o) => o.status === 'applied');
      const shadowed = ops.find((o) => o.test);
      const row: LifeRow = {
        number: run.number,
        mode: run.mode,
        status: run.status,
        cost: run.cost + run.verifyCost,
        reflectionCost: run.reflectionCost,
        msTotal: run.msTotal ?? 0,
        turns: run.turns,
        fellBack: run.fellBack,
        learned: applied.some((o) => o.op === 'propose_main')
          ? `graduated: main script and checks saved as version ${run.reflectionVersion}`
          : applied.length > 0
            ? `learned ${applied.map((o) => `${o.op.replace('_', ' ')}${o.target ? ` ${o.target}` : ''}`).join(', ')} (version ${run.reflectionVersion})`
            : null,
        shadow: shadowed?.test ? `${shadowed.test.status}: ${shadowed.test.detail}` : null,
        playbookVersion: run.playbookVersion,
      };
      rows.push(row);
      options.onRow?.(row);
    }
    return rows;
  } finally {
    await server.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

export const dollars = (micro: number) => `$${(micro / 1e6).toFixed(4)}`;
