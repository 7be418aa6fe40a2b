import { isEmptyPlaybook } from '../../../domain/playbook.js';
import { renderWithinBudget } from '../../../domain/playbook-render.js';
import { stopMessages, stopReasons } from '../../../domain/run-stop.js';
import { runAgent, type AgentRunResult } from '../agent/loop.js';
import { firstMessage, systemPrompt } from '../agent/prompt.js';
import { toolkitTools } from '../agent/toolkit.js';
import { builtinTools, mcpAgentTools, type Tool, type ToolContext } from '../agent/tools.js';
import { collect } from './collect.js';
import { RunEnd, type PreparedRun } from './context.js';

/**
 * The agent phase (docs/runs.md): the model works in the sandbox until it calls finish or a limit stops it. What the
 * sandbox left is collected before the outcome is read, since a process left running may still set outputs until
 * it is stopped. It always ends the run.
 */
export async function agent(ctx: PreparedRun): Promise<RunEnd> {
  ctx.tally.workStarted = true;
  const result = await runAgent({
    client: ctx.model.client,
    model: { name: ctx.model.name, price: ctx.model.price, contextWindow: ctx.model.contextWindow },
    system: systemPrompt(ctx.job.instruction, ctx.job.spec, playbookPrompt(ctx)),
    firstMessage: [ctx.brief, opening(ctx)].filter(Boolean).join('\n\n'),
    tools: tools(ctx),
    toolContext: toolContext(ctx),
    maxTurns: ctx.limits.maxTurns,
    maxCost: Math.round(ctx.limits.maxCostUsd * 1e6),
    deadline: ctx.deadline,
    signal: ctx.stop.signal,
    extraSpend: () => ctx.session.llmSpend,
    timeline: ctx.timeline,
    clock: ctx.services.clock,
  });
  ctx.tally.agentCost = result.cost;
  ctx.tally.usage = result.usage;
  ctx.tally.turns = result.turns;
  await collect(ctx);
  return agentEnd(ctx, result);
}

/** The agent's result as the run's end; outputs set with `svc output set` count too, the agent's finish wins a key. */
export function agentEnd(ctx: PreparedRun, result: AgentRunResult): RunEnd {
  const session = ctx.session;
  const outputs = { ...session.outputs, ...result.outputs };
  if (result.status === 'succeeded' && session.failReason) {
    ctx.timeline.record('error', { message: session.failReason });
    return new RunEnd('failed', session.failReason, result.summary, outputs);
  }
  return new RunEnd(result.status, result.error, result.summary, outputs);
}

/** The playbook as the system prompt shows it; none for a playbook with nothing in it. */
function playbookPrompt(ctx: PreparedRun): string | null {
  const p = ctx.playbook;
  return isEmptyPlaybook(p) && p.dockerfile === null && p.setup === null ? null : renderWithinBudget(p);
}

function opening(ctx: PreparedRun): string {
  const { run, job } = ctx;
  return firstMessage({
    trigger: run.trigger,
    now: ctx.services.clock(),
    timezone: job.timezone,
    input: run.input,
    instructions: run.instructions,
  });
}

/** The built-in tools, the playbook's toolkit (whose calls are counted for the playbook) and the MCP servers' tools. */
function tools(ctx: PreparedRun): Tool[] {
  const counts = ctx.tally.scriptCalls;
  const counted = (name: string, failed: boolean) =>
    counts.set(name, {
      calls: (counts.get(name)?.calls ?? 0) + 1,
      failures: (counts.get(name)?.failures ?? 0) + (failed ? 1 : 0),
    });
  return [...builtinTools, ...toolkitTools(ctx.playbook.toolkit, counted), ...mcpAgentTools(ctx.mcp)];
}

function toolContext(ctx: PreparedRun): ToolContext {
  const { ports, clock } = ctx.services;
  const { workspaceId: ws, run } = ctx;
  return {
    sandbox: ctx.sandbox,
    user: ctx.user,
    env: {},
    signal: ctx.stop.signal,
    stopReason: () => (ctx.stop.reason === stopReasons.timeout ? stopMessages.timeout : stopMessages.toolStopped),
    remainingMs: () => ctx.deadline - clock(),
    state: {
      get: (key) => ports.jobState.get(ws, run.jobId, key),
      set: (key, value) => ports.jobState.set(ctx.command, ws, run.jobId, key, value),
    },
    // Notes the agent keeps with `remember` reach reflection through the timeline's tool calls.
    remember: () => undefined,
    onOutput: (callId, text) => ctx.timeline.delta({ type: 'tool_output', callId, text: text.slice(0, 3000) }),
  };
}
