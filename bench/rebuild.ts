// Replay (issue 16): `svc admin rebuild-projections` over a realistic log against the raw store reading the same log,
// in events per second, with the command's peak RSS. Results: docs/performance.md, "Replay".
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { cpuTimesMs } from './proc-stat.js';
import { CommandBus, type CommandContext } from '../app/commands.js';
import { TimelineWriter } from '../app/timeline.js';
import { jobDecider, jobStreamId } from '../domain/job.js';
import { jobRunsDecider, jobRunsStreamId } from '../domain/job-runs.js';
import { emptyContent, playbookDecider, playbookStreamId } from '../domain/playbook.js';
import { emptyOutcome, runDecider, runStreamId, type RunPlan } from '../domain/run.js';
import { ProjectionEngine } from '../projections/engine.js';
import { allProjectors } from '../projections/index.js';
import type { DocumentStore } from '../store/document-store.js';
import type { EventStore, Position } from '../store/event-store.js';
import { openSqliteDocumentStore } from '../store/sqlite-document-store.js';
import { openSqliteEventStore } from '../store/sqlite-event-store.js';
import { plainSave } from '../tests/playbook-save.js';

const quiet = { error: () => {}, info: () => {} };
const hourMs = 3_600_000;
const timelineTypes = ['model.call', 'tool.call', 'tool.result', 'model.reply', 'output'];

/**
 * A log as a busy instance writes it, through the product's deciders: jobs created and edited (a third on a
 * schedule), playbook versions saved, and runs admitted, queued, claimed, started, finished and released, each with
 * a timeline of `entries` entries. Timelines are most of the log, as on a real instance.
 */
export async function fill(events: EventStore, runs: number, entries: number): Promise<void> {
  const t0 = Date.UTC(2026, 0, 1);
  let now = t0;
  const bus = new CommandBus(events, () => now);
  const jobs = Math.max(1, Math.round(runs / 4));
  const ctx: CommandContext = { workspaceId: 'w1', actor: { type: 'user', id: 'u1' }, requestId: null };
  const system: CommandContext = { workspaceId: 'w1', actor: { type: 'system', id: null }, requestId: null };
  const jobIds: string[] = [];
  for (let j = 0; j < jobs; j++) {
    const jobId = `bench-job-${j}`;
    jobIds.push(jobId);
    const workspaceId = j % 5 === 4 ? 'w2' : 'w1';
    await bus.execute(
      jobStreamId(jobId),
      jobDecider,
      {
        type: 'CreateJob',
        jobId,
        workspaceId,
        fields: {
          name: `Job ${j}`,
          instruction: `Check the ${j}th report and write a summary of what changed since yesterday.`,
          ...(j % 3 === 0 ? { cron: '*/15 * * * *' } : {}),
        },
        now,
      },
      { ...ctx, workspaceId },
    );
    now += 1000;
    await bus.execute(
      jobStreamId(jobId),
      jobDecider,
      { type: 'PatchJob', patch: { instruction: `Check report ${j} and summarise what changed.` }, now },
      { ...ctx, workspaceId },
    );
  }
  for (let i = 0; i < runs; i++) {
    const jobId = jobIds[i % jobs]!;
    const workspaceId = (i % jobs) % 5 === 4 ? 'w2' : 'w1';
    const wctx = { ...system, workspaceId };
    now = t0 + Math.floor((i / runs) * 30 * 24 * hourMs);
    const runId = `bench-run-${i}`;
    const admitted = await bus.execute(
      jobRunsStreamId(jobId),
      jobRunsDecider,
      { type: 'AdmitRun', runId, concurrency: 'parallel' },
      wctx,
    );
    const number = (admitted.events[0]!.data as { number: number }).number;
    const plan: RunPlan = {
      runId,
      jobId,
      jobName: `Job ${i % jobs}`,
      workspaceId,
      number,
      trigger: i % 3 === 0 ? 'schedule' : 'manual',
      triggeredBy: null,
      input: { day: i % 30 },
      instructions: null,
      mode: 'explore',
      playbookVersion: 0,
      modelId: null,
      queuedAt: now,
    };
    const stream = runStreamId(runId);
    await bus.execute(stream, runDecider, { type: 'QueueRun', plan, submitted: true }, wctx);
    await bus.execute(stream, runDecider, { type: 'ClaimRun', runnerId: 'runner-1', now: now + 20 }, wctx);
    await bus.execute(stream, runDecider, { type: 'StartRun', sandbox: { id: `sb-${i}`, backend: 'bwrap' } }, wctx);
    const timeline = new TimelineWriter(events, runId, workspaceId, undefined, () => now);
    for (let e = 0; e < entries; e++) {
      const type = timelineTypes[e % timelineTypes.length]!;
      timeline.record(
        type,
        { step: e, text: `step ${e} of run ${i}: `.padEnd(160 + ((i * 31 + e * 17) % 240), 'x') },
        { ms: (e * 37) % 900, spanId: `s${e}`, parentSpanId: e > 0 ? `s${e - 1}` : null },
      );
    }
    await timeline.flush();
    await bus.execute(
      stream,
      runDecider,
      {
        type: 'FinishRun',
        outcome: {
          ...emptyOutcome(now + 60_000),
          status: i % 11 === 0 ? 'failed' : 'succeeded',
          cost: 1000 + (i % 5000),
          turns: 3,
          tokIn: 2000 + (i % 700),
          tokOut: 300,
        },
      },
      wctx,
    );
    await bus.execute(jobRunsStreamId(jobId), jobRunsDecider, { type: 'ReleaseRun', runId }, wctx);
    // Every eighth run, its job learns something: a new playbook version.
    if (i % 8 === 0) {
      const { state } = await bus.load(playbookStreamId(jobId), playbookDecider);
      const content = { ...emptyContent(), ...state.content };
      content.learnings = [
        ...content.learnings,
        {
          id: `L${content.learnings.length + 1}`,
          kind: 'fact',
          text: `Run ${i} learnt a thing.`,
          hits: 0,
          status: 'active',
          sources: [runId],
        },
      ];
      // A reflection's save: the plain save with the run it learnt from.
      const save = plainSave({ jobId, workspaceId, content, summary: `learning from run ${i}`, authorId: null, now });
      await bus.execute(
        playbookStreamId(jobId),
        playbookDecider,
        { ...save, author: 'reflection', sourceRunId: runId },
        wctx,
      );
    }
  }
}

/** Every document of every read model, by collection, for the comparison of the rebuild with what was there. */
async function snapshot(docs: DocumentStore): Promise<string> {
  const out: Record<string, unknown[]> = {};
  for (const name of allProjectors.flatMap((p) => p.collections))
    out[name] = await docs.collection(name).find({}, { sort: [['_id', 1]] });
  return JSON.stringify(out);
}

/** The rebuild as an operator runs it: `svc admin rebuild-projections` in its own process; its peak RSS from /proc. */
async function rebuildCommand(
  dataDir: string,
): Promise<{ ms: number; cpuSecs: number; peakRssMb: number; progressLines: number }> {
  const cli = existsSync('dist/cli/main.js') ? ['dist/cli/main.js'] : ['--import', 'tsx', 'cli/main.ts'];
  const child = spawn(process.execPath, [...cli, 'admin', 'rebuild-projections', '--data-dir', dataDir], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  let peakKb = 0;
  let cpuMs = 0;
  const sample = () => {
    try {
      const hwm = /VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'));
      if (hwm) peakKb = Math.max(peakKb, Number(hwm[1]));
      cpuMs = Math.max(cpuMs, cpuTimesMs(child.pid!).own);
    } catch {
      // The process has just ended: the last sample stands.
    }
  };
  const timer = setInterval(sample, 20);
  const [code] = (await once(child, 'exit')) as [number | null];
  clearInterval(timer);
  const ms = /in (\d+) ms/.exec(out);
  if (code !== 0 || !ms) throw new Error(`rebuild-projections failed (${code}): ${out}${err}`);
  return {
    ms: Number(ms[1]),
    // Counted in clock ticks of 10 ms (Linux's USER_HZ); the process's start is included.
    cpuSecs: cpuMs / 1000,
    peakRssMb: Math.round(peakKb / 1024),
    progressLines: err.split('\n').filter((l) => l.startsWith('rebuild-projections:')).length,
  };
}

export async function rebuildBenchmark(root: string, quick: boolean) {
  const runs = Number(process.env.SVC_BENCH_REBUILD_RUNS ?? (quick ? 500 : 2500));
  const entries = 20;
  const dataDir = join(root, 'rebuild');
  mkdirSync(dataDir, { recursive: true });
  let events = openSqliteEventStore(join(dataDir, 'events.db'));
  let docs = openSqliteDocumentStore(join(dataDir, 'read.db'));
  await fill(events, runs, entries);
  // The live path first: the read models as the tailing projection leaves them.
  const live = new ProjectionEngine(events, docs, allProjectors, quiet);
  await live.start();
  await live.catchUp(3_600_000);
  await live.stop();
  const before = await snapshot(docs);
  await events.close();
  await docs.close();

  // (a) The raw store: every event read in pages of 1,000 and parsed, nothing else.
  events = openSqliteEventStore(join(dataDir, 'events.db'));
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let n = 0;
  let after: Position | null = null;
  for (;;) {
    const page = await events.readAll({ after, limit: 1000 });
    if (page.length === 0) break;
    n += page.length;
    after = page[page.length - 1]!.position;
  }
  const rawSecs = (performance.now() - t0) / 1000;
  const rawCpu = process.cpuUsage(cpu0);
  await events.close();

  // (b) Every projector rebuilt from the log by the command itself.
  const rebuilt = await rebuildCommand(dataDir);
  docs = openSqliteDocumentStore(join(dataDir, 'read.db'));
  const equal = (await snapshot(docs)) === before;
  await docs.close();
  if (!equal) throw new Error('the rebuilt read models differ from the live ones');
  const rawPerSec = Math.round(n / rawSecs);
  const rebuildPerSec = Math.round(n / (rebuilt.ms / 1000));
  return {
    events: n,
    runs,
    timelineEntriesPerRun: entries,
    rawReadEventsPerSec: rawPerSec,
    rawReadCpuSecs: Math.round((rawCpu.user + rawCpu.system) / 10_000) / 100,
    rebuildSecs: Math.round(rebuilt.ms / 10) / 100,
    rebuildEventsPerSec: rebuildPerSec,
    rebuildCommandCpuSecs: rebuilt.cpuSecs,
    // The machine is shared: CPU time is what compares across runs; wall time is what an operator waits.
    rawReadEventsPerCpuSec: Math.round(n / ((rawCpu.user + rawCpu.system) / 1e6)),
    rebuildEventsPerCpuSec: Math.round(n / rebuilt.cpuSecs),
    rebuildPeakRssMb: rebuilt.peakRssMb,
    rebuildProgressLines: rebuilt.progressLines,
    rebuildToRawRatio: Math.round((rebuildPerSec / rawPerSec) * 1000) / 1000,
    readModelsEqualLive: equal,
  };
}
