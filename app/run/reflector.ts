import { PassLoop } from '../pass-loop.js';
import type { JobConfig } from '../../domain/job.js';
import { mainRelatedOps, shadowDue, shadowSkipReason, type SkipFacts } from '../../domain/shadow.js';
import type { ShadowOutcome, ShadowRequest } from './shadow.js';
import { Subscription, merge } from 'rxjs';
import { DomainError } from '../../domain/decider.js';
import { graduationBlocker, type GraduationRun, type ToolCallRecord } from '../../domain/graduation.js';
import { jobDecider, jobStreamId } from '../../domain/job.js';
import { emptyContent, type PlaybookContent } from '../../domain/playbook.js';
import { applyOps, tokensOverBudget, type PlaybookOp } from '../../domain/playbook-ops.js';
import { redactor } from '../../domain/redact.js';
import {
  isInstallCommand,
  parseReflectionAnswer,
  reflectionPrompt,
  type EnvironmentTiming,
  reflectionSchema,
  reflectionSchemaName,
  reflectionSystem,
  secondAttemptMessage,
  type GraduationSection,
  type PromptRun,
  type ReflectionAnswer,
} from '../../domain/reflection.js';
import { maxReflectionAttempts, runDecider, runStreamId, type ReflectionResult } from '../../domain/run.js';
import { dailySpendError, utcDayStart } from '../../domain/spend.js';
import { jobsCollection, type JobDoc } from '../../projections/jobs.js';
import { runsCollection, type RunDoc } from '../../projections/runs.js';
import type { AppliedOp } from '../../schemas/playbook.js';
import type { CommandBus, CommandContext } from '../commands.js';
import { versionContent, type Playbooks } from '../playbooks.js';
import type { Runs } from '../runs.js';
import { timelineStreamId } from '../timeline.js';
import type { DocumentStore } from '../../store/document-store.js';
import type { EventStore, RecordedEvent } from '../../store/event-store.js';
import {
  costOf,
  ModelError,
  type Message,
  type ModelClient,
  type Price,
  type Usage,
} from '../../adapters/models/types.js';
import { errorMessage } from '../../domain/error-message.js';

export interface ReflectionModel {
  client: ModelClient;
  name: string;
  price: Price;
}

export interface ReflectorPorts {
  bus: CommandBus;
  events: EventStore;
  docs: DocumentStore;
  runs: Runs;
  playbooks: Playbooks;
  runnerId: string;
  /** Whether the runner that started a reflection is gone (then another may take it over). */
  runnerGone(runnerId: string): Promise<boolean>;
  reflectionModel(workspaceId: string, jobModelId: string | null): Promise<ReflectionModel | null>;
  settings(workspaceId: string): Promise<{ dailySpendLimitUsd: number; defaultImage: string | null }>;
  secretValues(workspaceId: string): Promise<string[]>;
  log: { error(obj: object, msg: string): void; info(obj: object, msg: string): void };
  /** Tries a proposed main in a shadow run; absent when this runner has no usable sandbox backend. */
  shadow: ((request: ShadowRequest) => Promise<ShadowOutcome>) | null;
  /** Builds a changed Dockerfile before reflection saves it (20 minutes at most); absent when no backend builds images. */
  buildImage:
    | ((workspaceId: string, jobId: string, dockerfile: string) => Promise<{ ref: string | null } | { error: string }>)
    | null;
  /** Scripts the run left in /svc/candidates (at most 10, each cut to 16,000 characters). */
  candidates?(runId: string): Promise<Array<{ name: string; content: string }>>;
  clock?: () => number;
  /** Pause before retrying a transient model failure (5 s, 20 s, 60 s by default). */
  retryDelaysMs?: readonly number[];
}

const callTimeoutMs = 5 * 60_000;
const transcriptChars = 40_000;
export const noReflectionModel = 'no model is configured for reflection';

/**
 * Takes pending reflections one at a time, one reflector per runner (docs/design.md, "Learning: scripted runs,
 * reflection, shadow runs"): claims the request on the run's stream with an expected-revision append, asks the
 * reflection model for ops, applies them to the playbook on a scratch copy, saves a version and records the result on
 * the run. A request whose reflector died is taken over, at most three times.
 */
export class Reflector {
  private subscription: Subscription | null = null;
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  private readonly clock: () => number;
  private readonly loop: PassLoop;

  constructor(private readonly ports: ReflectorPorts) {
    this.clock = ports.clock ?? Date.now;
    this.loop = new PassLoop(
      () => this.pass(),
      (err) => this.ports.log.error({ err }, 'reflection pass failed'),
    );
  }

  start(): void {
    this.subscription = merge(this.ports.runs.reflectable, this.ports.runs.startable).subscribe(() => this.poke());
    this.timer = setInterval(() => this.poke(), 2000);
    this.poke();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.subscription?.unsubscribe();
    if (this.timer) clearInterval(this.timer);
    await this.loop.stop();
  }

  /** Runs a pass now, or once more after the current one. */
  poke(): void {
    this.loop.poke();
  }

  private async pass(): Promise<void> {
    const pending = await this.ports.docs
      .collection<RunDoc>(runsCollection)
      .find({ reflection: 'pending' }, { sort: [['reflectionRequestedAt', 1]], limit: 20 });
    for (const doc of pending) {
      if (this.stopped) return;
      const owner = doc.reflectionRunnerId ?? null;
      if (owner !== null && (owner === this.ports.runnerId || !(await this.ports.runnerGone(owner)))) continue;
      await this.take(doc);
    }
  }

  private async take(doc: RunDoc): Promise<void> {
    const ctx: CommandContext = {
      workspaceId: doc.workspaceId,
      // The audit trail names the run reflected on (docs/events.md, "Audit trail").
      actor: { type: 'reflection', id: doc._id },
      requestId: null,
      correlationId: doc._id,
    };
    const { state } = await this.ports.bus.load(runStreamId(doc._id), runDecider);
    if (state.status === 'none' || state.reflection !== 'pending' || state.reflectionKey === null) return;
    const key = state.reflectionKey;
    if (state.reflectionAttempts >= maxReflectionAttempts) {
      await this.finish(
        doc._id,
        key,
        {
          status: 'failed',
          error: `the reflection was interrupted ${state.reflectionAttempts} times`,
          summary: null,
          ops: null,
          version: null,
          cost: 0,
          tokens: 0,
        },
        ctx,
      );
      return;
    }
    try {
      await this.ports.bus.execute(
        runStreamId(doc._id),
        runDecider,
        { type: 'StartReflection', key, now: this.clock(), runnerId: this.ports.runnerId },
        ctx,
      );
    } catch (err) {
      if (err instanceof DomainError && err.code === 'conflict') return; // another reflector took it first
      throw err;
    }
    let result: ReflectionResult;
    try {
      result = await this.reflect(doc, ctx);
    } catch (err) {
      this.ports.log.error({ err, runId: doc._id }, 'reflection failed unexpectedly');
      result = {
        status: 'failed',
        error: `the reflection failed unexpectedly: ${errorMessage(err)}`,
        summary: null,
        ops: null,
        version: null,
        cost: 0,
        tokens: 0,
      };
    }
    await this.finish(doc._id, key, result, ctx);
  }

  private async finish(runId: string, key: string, result: ReflectionResult, ctx: CommandContext): Promise<void> {
    try {
      await this.ports.bus.execute(runStreamId(runId), runDecider, { type: 'FinishReflection', key, result }, ctx);
    } catch (err) {
      // A newer request replaced this one meanwhile: its own reflection will record the outcome.
      if (!(err instanceof DomainError && err.code === 'conflict')) throw err;
    }
  }

  /** One reflection on one run, in steps; never throws for a failure it can word. */
  private async reflect(doc: RunDoc, ctx: CommandContext): Promise<ReflectionResult> {
    const ready = await this.preflight(doc);
    if ('status' in ready) return ready;
    const facts = await this.gather(doc, ready.job);
    const graduation = graduationOf(doc, facts);
    const prompt = await this.prompt(doc, facts, graduation.section);
    const chat = new Conversation((messages) => this.call(ready.model, messages), prompt);
    const opContext = {
      runId: doc._id,
      secretValues: facts.secretValues,
      declaresInputs: (facts.spec.inputs ?? []).length > 0,
      jobImage: ready.job.image ?? ready.settings.defaultImage,
      graduationBlocked: graduation.blocker,
    };
    const shadowFacts = this.shadowFacts(ready.job, facts.timeline);
    // Apply on a scratch copy, then try a new or changed main in a shadow run before anything is saved.
    const attempt = async (ops: PlaybookOp[]): Promise<Applied> => {
      const result = await this.verifyDockerfile(doc, facts.original, applyOps(facts.original, ops, opContext));
      const shadow = await this.verifyMain(doc, ready.job, facts.original, facts.baseVersion, result, shadowFacts);
      chat.cost += shadow.cost;
      chat.tokens += shadow.tokens;
      return { ...result, content: shadow.content, results: shadow.results, shadowOutput: shadow.output };
    };
    const proposed = await propose(chat, attempt);
    if ('error' in proposed) return failedReflection(proposed.error, chat);
    return this.keep(ctx, doc, proposed, {
      baseVersion: facts.baseVersion,
      opContext,
      cost: chat.cost,
      tokens: chat.tokens,
    });
  }

  /** The job, the reflection model and the daily spend cap: what must hold before anything is spent. */
  private async preflight(
    doc: RunDoc,
  ): Promise<
    | { job: JobConfig; model: ReflectionModel; settings: { dailySpendLimitUsd: number; defaultImage: string | null } }
    | ReflectionResult
  > {
    const ws = doc.workspaceId;
    const { state: job } = await this.ports.bus.load(jobStreamId(doc.jobId), jobDecider);
    if (job.status === 'none') return failedReflection('the job does not exist any more');
    const model = await this.ports.reflectionModel(ws, job.config.modelId);
    if (!model) return failedReflection(noReflectionModel);
    const settings = await this.ports.settings(ws);
    if (settings.dailySpendLimitUsd > 0) {
      const spent = await this.ports.runs.spentSince(ws, utcDayStart(this.clock()));
      const over = dailySpendError(settings.dailySpendLimitUsd, spent);
      if (over) return failedReflection(over);
    }
    return { job: job.config, model, settings };
  }

  /** What reflection reads: the playbook it starts from, the run's timeline and the runs before it. */
  private async gather(doc: RunDoc, job: JobConfig): Promise<ReflectionFacts> {
    const ws = doc.workspaceId;
    const secretValues = await this.ports.secretValues(ws).catch(() => []);
    const baseVersion = await this.ports.playbooks.latestVersion(doc.jobId);
    const original = (await versionContent(this.ports.events, ws, doc.jobId, baseVersion)) ?? emptyContent();
    const jobDoc = await this.ports.docs.collection<JobDoc>(jobsCollection).findOne({ _id: doc.jobId });
    const runDocs = this.ports.docs.collection<RunDoc>(runsCollection);
    const earlier = await runDocs.find(
      { jobId: doc.jobId, number: { $lt: doc.number } },
      { sort: [['number', -1]], limit: 5 },
    );
    const [latest] = await runDocs.find({ jobId: doc.jobId }, { sort: [['number', -1]], limit: 1 });
    const timeline = await this.timelineOf(doc._id);
    const graduationRuns: GraduationRun[] = [];
    for (const r of [doc, ...earlier.slice(0, 2)]) {
      const events = r._id === doc._id ? timeline : await this.timelineOf(r._id);
      graduationRuns.push({ number: r.number, status: r.status, mode: r.mode, toolCalls: toolCalls(events) });
    }
    return {
      secretValues,
      baseVersion,
      original,
      demoted: jobDoc?.demoted ?? false,
      earlier,
      latestNumber: latest?.number ?? doc.number,
      timeline,
      graduationRuns,
      spec: job.spec as ReflectionFacts['spec'],
      job,
    };
  }

  private timelineOf(runId: string): Promise<RecordedEvent[]> {
    return this.ports.events.readStream(timelineStreamId(runId), { fromRevision: 0 });
  }

  /** The reflection prompt, redacted of the workspace's secret values. */
  private async prompt(doc: RunDoc, facts: ReflectionFacts, graduation: GraduationSection): Promise<string> {
    const { job, spec, timeline } = facts;
    const text = reflectionPrompt({
      job: {
        instruction: job.instruction,
        successCriteria: spec.successCriteria ?? [],
        inputs: spec.inputs ?? [],
        outputs: spec.outputs ?? [],
        image: job.image,
      },
      playbook: facts.original,
      run: asPromptRun(doc),
      notes: payloads(timeline, 'tool.call')
        .filter((p) => p.name === 'remember')
        .map((p) => String((p.args as { note?: unknown } | undefined)?.note ?? '')),
      environment: await this.environment(doc, timeline, facts.earlier.slice(0, 2)),
      graduation,
      candidates: (await this.ports.candidates?.(doc._id)) ?? [],
      earlier: facts.earlier.map(asPromptRun),
      transcript: transcript(timeline),
    });
    return redactor(facts.secretValues)(text);
  }

  /** What decides whether a shadow run can say anything about a proposed main. */
  private shadowFacts(job: JobConfig, timeline: readonly RecordedEvent[]): SkipFacts {
    return {
      backendUsable: this.ports.shadow !== null,
      specSideEffects: (job.spec as { sideEffects?: string[] }).sideEffects ?? [],
      runWroteState: timeline.some((e) => {
        const p = (e.data as { payload?: Record<string, unknown> }).payload ?? {};
        return (
          (e.type === 'tool.call' && p.name === 'state_set') ||
          (e.type === 'broker.call' && String(p.endpoint ?? '').startsWith('PUT /v1/state'))
        );
      }),
    };
  }

  /** Records the learnings the model used and saves a version when an op was applied. */
  private async keep(
    ctx: CommandContext,
    doc: RunDoc,
    proposed: { answer: ReflectionAnswer; applied: Applied },
    s: { baseVersion: number; opContext: Parameters<typeof applyOps>[2]; cost: number; tokens: number },
  ): Promise<ReflectionResult> {
    const { answer, applied } = proposed;
    const ws = doc.workspaceId;
    await this.ports.playbooks
      .recordLearningHits(ctx, ws, doc.jobId, doc._id, [...new Set(answer.usedLearnings)])
      .catch((err: unknown) => this.ports.log.error({ err, runId: doc._id }, 'could not record learning hits'));
    const summary = answer.summary.trim() || `Learned from run #${doc.number}`;
    const done = (version: number | null): ReflectionResult => ({
      status: 'done',
      error: null,
      summary,
      ops: applied.results,
      version,
      cost: s.cost,
      tokens: s.tokens,
    });
    if (!applied.results.some((r) => r.status === 'applied')) return done(null);
    const version = await this.save(ctx, ws, doc, {
      content: applied.content,
      results: applied.results,
      summary,
      baseVersion: s.baseVersion,
      acceptedOps: answer.ops.filter((_, i) => applied.results[i]!.status === 'applied'),
      opContext: s.opContext,
    });
    return done(version);
  }

  /**
   * A changed Dockerfile is built before it is saved (docs/design.md, "Learning: scripted runs, reflection, shadow
   * runs"); when it does not build, the last applied set_dockerfile is rejected with the build's error and the
   * Dockerfile goes back to what it was.
   */
  private async verifyDockerfile(
    doc: RunDoc,
    original: PlaybookContent,
    applied: { content: PlaybookContent; results: AppliedOp[] },
  ): Promise<{ content: PlaybookContent; results: AppliedOp[]; image?: string | null }> {
    const dockerfile = applied.content.dockerfile;
    if (dockerfile === null || dockerfile === original.dockerfile) return applied;
    const last = applied.results.map((r) => r.op === 'set_dockerfile' && r.status === 'applied').lastIndexOf(true);
    if (last < 0) return applied;
    const built = this.ports.buildImage
      ? await this.ports.buildImage(doc.workspaceId, doc.jobId, dockerfile)
      : { error: 'no sandbox backend of this service builds images (the docker backend does)' };
    if (!('error' in built)) return { ...applied, image: built.ref };
    const results = [...applied.results];
    results[last] = {
      ...results[last]!,
      status: 'rejected',
      reason: `the image did not build: ${built.error.slice(-2500)}`,
    };
    return { content: { ...applied.content, dockerfile: original.dockerfile }, results };
  }

  /**
   * The shadow run of a proposal (./shadow.ts): when main, verify, setup, the Dockerfile or a script changed and main
   * exists, the shadow run's result goes on the primary op; a failure rejects every applied main-related op and reverts
   * those parts.
   */
  private async verifyMain(
    doc: RunDoc,
    job: JobConfig,
    original: PlaybookContent,
    baseVersion: number,
    applied: { content: PlaybookContent; results: AppliedOp[]; image?: string | null },
    facts: SkipFacts,
  ): Promise<{ content: PlaybookContent; results: AppliedOp[]; output: string | null; cost: number; tokens: number }> {
    const unchanged = { content: applied.content, results: applied.results, output: null, cost: 0, tokens: 0 };
    if (!shadowDue(original, applied.content)) return unchanged;
    const isApplied = (r: AppliedOp, ops: readonly string[]) => r.status === 'applied' && ops.includes(r.op);
    let primary = applied.results.findIndex((r) => isApplied(r, ['propose_main', 'update_main']));
    if (primary < 0) primary = applied.results.findIndex((r) => isApplied(r, mainRelatedOps));
    if (primary < 0) return unchanged;
    const results = [...applied.results];
    const skip = shadowSkipReason(applied.content, facts);
    if (skip || !this.ports.shadow) {
      results[primary] = {
        ...results[primary]!,
        test: { status: 'skipped', detail: skip ?? 'no sandbox backend is available to run it' },
      };
      return { ...unchanged, results };
    }
    const outcome = await this.ports.shadow({
      workspaceId: doc.workspaceId,
      jobId: doc.jobId,
      job,
      proposed: applied.content,
      baseVersion,
      dockerfileChanged: applied.content.dockerfile !== original.dockerfile,
      image: applied.image,
      reflected: {
        number: doc.number,
        input: doc.input,
        instructions: doc.instructions,
        status: doc.status,
        finishedAt: doc.finishedAt,
        outputs: doc.outputs,
      },
    });
    results[primary] = { ...results[primary]!, test: outcome.test };
    if (outcome.test.status !== 'failed')
      return { content: applied.content, results, output: null, cost: outcome.cost, tokens: outcome.tokens };
    const reason = `main failed its shadow run: ${outcome.test.detail}`;
    for (let i = 0; i < results.length; i++)
      if (isApplied(results[i]!, mainRelatedOps)) results[i] = { ...results[i]!, status: 'rejected', reason };
    const content = {
      ...applied.content,
      main: original.main,
      verify: original.verify,
      toolkit: original.toolkit,
      setup: original.setup,
      dockerfile: original.dockerfile,
    };
    return { content, results, output: outcome.test.output ?? null, cost: outcome.cost, tokens: outcome.tokens };
  }

  /**
   * Setup and hand-install times of this run and the two before it (the install rule of docs/design.md,
   * "Learning: scripted runs, reflection, shadow runs").
   */
  private async environment(
    doc: RunDoc,
    timeline: readonly RecordedEvent[],
    earlier: readonly RunDoc[],
  ): Promise<EnvironmentTiming[]> {
    const out: EnvironmentTiming[] = [];
    for (const r of [doc, ...earlier]) {
      const events =
        r._id === doc._id ? timeline : await this.ports.events.readStream(timelineStreamId(r._id), { fromRevision: 0 });
      const setup = events.find((e) => e.type === 'sandbox.setup');
      const commands = new Map<string, string>();
      let installMs = 0;
      const installs: string[] = [];
      for (const e of events) {
        const data = e.data as { payload?: Record<string, unknown>; ms?: number | null };
        const p = data.payload ?? {};
        if (
          e.type === 'tool.call' &&
          p.name === 'bash' &&
          typeof (p.args as { command?: unknown })?.command === 'string'
        )
          commands.set(String(p.callId), (p.args as { command: string }).command);
        if (e.type === 'tool.result' && p.name === 'bash') {
          const command = commands.get(String(p.callId));
          if (command && isInstallCommand(command)) {
            installMs += data.ms ?? 0;
            installs.push(command);
          }
        }
      }
      out.push({
        number: r.number,
        setupMs: setup ? ((setup.data as { ms?: number | null }).ms ?? 0) : null,
        installMs,
        installs,
      });
    }
    return out;
  }

  /** Saves the version; when a hand edit came first, re-applies only the accepted ops to it, once. */
  private async save(
    ctx: CommandContext,
    ws: string,
    doc: RunDoc,
    s: {
      content: PlaybookContent;
      results: AppliedOp[];
      summary: string;
      baseVersion: number;
      acceptedOps: PlaybookOp[];
      opContext: Parameters<typeof applyOps>[2];
    },
  ): Promise<number> {
    const proposedMain = s.results.some((r) => r.op === 'propose_main' && r.status === 'applied');
    const request = {
      content: s.content,
      baseVersion: s.baseVersion,
      summary: s.summary,
      author: 'reflection' as const,
      sourceRunId: doc._id,
      ops: s.results,
      proposedMain,
    };
    try {
      return await this.ports.playbooks.save(ctx, ws, doc.jobId, request);
    } catch (err) {
      if (!(err instanceof DomainError && err.code === 'conflict')) throw err;
      const base = await this.ports.playbooks.latestVersion(doc.jobId);
      const current = (await versionContent(this.ports.events, ws, doc.jobId, base)) ?? emptyContent();
      const again = applyOps(current, s.acceptedOps, s.opContext);
      return this.ports.playbooks.save(ctx, ws, doc.jobId, {
        ...request,
        content: again.content,
        baseVersion: base,
        ops: again.results,
      });
    }
  }

  /** One structured call; a transient model error is repeated after 5 s, 20 s and 60 s. */
  private async call(model: ReflectionModel, messages: Message[]): Promise<ModelAnswer> {
    const delays = this.ports.retryDelaysMs ?? [5000, 20_000, 60_000];
    for (let attempt = 0; ; attempt++) {
      try {
        const res = await model.client.complete({
          model: model.name,
          system: [reflectionSystem()],
          messages,
          tools: [],
          maxTokens: 16_000,
          effort: 'medium',
          jsonSchema: { name: reflectionSchemaName, schema: reflectionSchema },
          signal: AbortSignal.timeout(callTimeoutMs),
        });
        return { text: res.text, cost: costOf(res.usage, model.price), tokens: tokensOf(res.usage) };
      } catch (err) {
        const transient = err instanceof ModelError && err.transient;
        if (!transient || attempt >= delays.length || this.stopped)
          return { error: `the reflection model call failed: ${errorMessage(err)}`, cost: 0, tokens: 0 };
        await new Promise((r) => setTimeout(r, delays[attempt]));
      }
    }
  }
}

function payloads(events: readonly RecordedEvent[], type: string): Array<Record<string, unknown>> {
  return events
    .filter((e) => e.type === type)
    .map((e) => (e.data as { payload: Record<string, unknown> }).payload ?? {});
}

/** The tool calls of a run's timeline, in order, with bash commands (for graduation). */
export function toolCalls(events: readonly RecordedEvent[]): ToolCallRecord[] {
  return payloads(events, 'tool.call').map((p) => {
    const name = String(p.name ?? '');
    const command = (p.args as { command?: unknown } | undefined)?.command;
    return name === 'bash' && typeof command === 'string' ? { name, command } : { name };
  });
}

/** The run as the reflection model reads it: what the model said and did, and what came back, clipped. */
function transcript(events: readonly RecordedEvent[]): string {
  const lines: string[] = [];
  const clip = (v: unknown, n: number) => {
    const s = typeof v === 'string' ? v : (JSON.stringify(v) ?? '');
    return s.length <= n ? s : `${s.slice(0, n)}…`;
  };
  for (const e of events) {
    const p = (e.data as { payload: Record<string, unknown> }).payload ?? {};
    switch (e.type) {
      case 'llm.call':
        if (typeof p.text === 'string' && p.text.trim()) lines.push(`[model] ${clip(p.text, 1500)}`);
        if (p.error) lines.push(`[model error] ${clip(p.error, 500)}`);
        break;
      case 'tool.call':
        lines.push(`[call ${String(p.name)}] ${clip(p.args, 1500)}`);
        break;
      case 'tool.result':
        lines.push(`[result ${String(p.name)}${p.isError ? ', error' : ''}] ${clip(p.content, 2000)}`);
        break;
      case 'fallback':
      case 'verify.result':
      case 'error':
      case 'log':
      case 'run.status':
        lines.push(`[${e.type}] ${clip(p, 1000)}`);
        break;
      default:
        break;
    }
  }
  const text = lines.join('\n');
  return text.length <= transcriptChars
    ? text
    : `${text.slice(0, transcriptChars / 4)}\n[… ${text.length - transcriptChars} characters left out …]\n${text.slice(-(transcriptChars * 3) / 4)}`;
}

/** What one reflection reads of the job, its playbook and its runs. */
interface ReflectionFacts {
  job: JobConfig;
  secretValues: string[];
  baseVersion: number;
  original: PlaybookContent;
  demoted: boolean;
  earlier: RunDoc[];
  latestNumber: number;
  timeline: RecordedEvent[];
  /** This run and the two before it, for graduation. */
  graduationRuns: GraduationRun[];
  spec: {
    successCriteria?: string[];
    inputs?: Array<{ name: string; type: string; description?: string }>;
    outputs?: Array<{ name: string; type: string; description?: string }>;
  };
}

/** The ops applied on a scratch copy, with the shadow run's output when main failed it. */
interface Applied {
  content: PlaybookContent;
  results: AppliedOp[];
  shadowOutput: string | null;
}

function failedReflection(error: string, spent = { cost: 0, tokens: 0 }): ReflectionResult {
  return { status: 'failed', error, summary: null, ops: null, version: null, cost: spent.cost, tokens: spent.tokens };
}

const asPromptRun = (r: RunDoc): PromptRun => ({
  number: r.number,
  status: r.status,
  mode: r.mode,
  turns: r.turns,
  msTotal: r.msTotal,
  cost: r.cost,
  input: r.input,
  error: r.error,
  summary: r.summary,
  outputs: r.outputs,
});

/** Whether the job may graduate from this run, and the prompt's graduation section saying so. */
function graduationOf(doc: RunDoc, f: ReflectionFacts): { blocker: string | null; section: GraduationSection } {
  const [run, ...previous] = f.graduationRuns;
  const hasMain = f.original.main !== null;
  const blocker = graduationBlocker({ hasMain, demoted: f.demoted, run: run!, latestNumber: f.latestNumber, previous });
  const fallbackReason = payloads(f.timeline, 'fallback')[0]?.reason;
  if (hasMain && doc.fellBack && !f.demoted)
    return {
      blocker,
      section: { kind: 'main_failed', reason: String(fallbackReason ?? doc.error ?? 'it fell short') },
    };
  if (f.demoted && blocker !== null) {
    const last = fallbackReason ? ` (the last: ${String(fallbackReason)})` : '';
    return {
      blocker,
      section: { kind: 'demoted', reason: `The job is demoted: its last two scripted runs fell back${last}` },
    };
  }
  if (blocker === null) {
    const steps = run!.toolCalls.map((c) => (c.name === 'bash' ? `bash: ${c.command ?? ''}` : c.name));
    return { blocker, section: { kind: 'eligible', steps } };
  }
  return { blocker, section: { kind: 'off', reason: `Graduation is not possible yet: ${blocker}` } };
}

/** One reflection model call: its text or error, and what it spent. */
type ModelAnswer = { text: string; cost: number; tokens: number } | { error: string; cost: number; tokens: number };

/** Every token a call used, cached ones included, as a run's `tokIn + tokOut` counts them. */
const tokensOf = (u: Usage) => u.input + u.output + u.cacheRead + u.cacheWrite;

/** The exchange with the reflection model: its messages and what it has spent so far (shadow runs included). */
class Conversation {
  readonly messages: Message[];
  cost = 0;
  tokens = 0;

  constructor(
    private readonly call: (messages: Message[]) => Promise<ModelAnswer>,
    prompt: string,
  ) {
    this.messages = [{ role: 'user', text: prompt }];
  }

  async ask(): Promise<ReflectionAnswer | { error: string }> {
    const answer = await this.call(this.messages);
    this.cost += answer.cost;
    this.tokens += answer.tokens;
    if ('error' in answer) return answer;
    this.messages.push({ role: 'assistant', text: answer.text, toolCalls: [] });
    return parseReflectionAnswer(answer.text);
  }
}

/**
 * The model's ops applied; when they are over the token budget or some were rejected, the model is told why and
 * asked once more, and that second answer stands (over budget then fails the reflection).
 */
async function propose(
  chat: Conversation,
  attempt: (ops: PlaybookOp[]) => Promise<Applied>,
): Promise<{ answer: ReflectionAnswer; applied: Applied } | { error: string }> {
  const answer = await chat.ask();
  if ('error' in answer) return answer;
  const applied = await attempt(answer.ops);
  const over = tokensOverBudget(applied.content);
  if (over <= 0 && !applied.results.some((r) => r.status === 'rejected')) return { answer, applied };
  chat.messages.push({ role: 'user', text: secondAttemptMessage(applied.results, over, applied.shadowOutput) });
  const second = await chat.ask();
  if ('error' in second) return second;
  const again = await attempt(second.ops);
  const stillOver = tokensOverBudget(again.content);
  if (stillOver > 0) return { error: `the playbook would be ${stillOver} tokens over its budget` };
  return { answer: second, applied: again };
}
