import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { RunEnd, type PreparedRun, type ProvisionedRun, type RunContext } from '../../app/run/phases/context.js';
import { provision } from '../../app/run/phases/provision.js';
import { prepare } from '../../app/run/phases/prepare.js';
import { setup } from '../../app/run/phases/setup.js';
import { scripted } from '../../app/run/phases/scripted.js';
import { FellShort, verify } from '../../app/run/phases/verify.js';
import { fallBack } from '../../app/run/phases/policy.js';
import { agent } from '../../app/run/phases/agent.js';
import { collect } from '../../app/run/phases/collect.js';
import { finish } from '../../app/run/phases/finish.js';
import { noModelMessage } from '../../app/run/ports.js';
import { stopMessages } from '../../domain/run-stop.js';
import { waitFor } from '../wait.js';
import { phaseWorld, type NewRun } from './phases-fixture.js';

/**
 * Each phase of a run (docs/runs.md) on its own, on a real bwrap sandbox: what it records on the timeline and the
 * run's stream, what it leaves in the run context, what it answers, and how it fails.
 */
const w = phaseWorld('phases');
const text = (b: Buffer) => b.toString('utf8');

async function provisioned(options: NewRun = {}): Promise<ProvisionedRun> {
  const ctx = await w.run(options);
  const ready = await provision(ctx);
  if (ready instanceof RunEnd) throw new Error(`provisioning ended the run: ${ready.error}`);
  return ready;
}

async function prepared(options: NewRun = {}): Promise<PreparedRun> {
  return prepare(await provisioned(options));
}

/** Runs `body` on a run and gives back what the run holds afterwards, whatever happened. */
async function withRun<T extends RunContext>(make: () => Promise<T>, body: (ctx: T) => Promise<void>): Promise<void> {
  const ctx = await make();
  try {
    await body(ctx);
  } finally {
    await w.release(ctx);
  }
}

describe('run phases on a bwrap sandbox', () => {
  it('provision: opens the session, creates the sandbox, arms the deadline and records both', async () => {
    await withRun(provisioned, async (ctx) => {
      assert.equal(ctx.held.sandbox, ctx.sandbox);
      assert.equal(ctx.held.session, ctx.session);
      assert.equal(ctx.user, 'agent');
      assert.equal(ctx.deadline, ctx.startedAt + ctx.limits.timeoutSeconds * 1000);
      assert.equal(ctx.tally.selfImprove, true);
      const id = await ctx.sandbox.exec({ cmd: ['id', '-u'] });
      assert.equal(text(id.output).trim(), '1000');
      const entries = await w.timeline(ctx);
      assert.deepEqual(entries[0]?.payload, { status: 'provisioning' });
      const created = entries.find((e) => e.type === 'sandbox.create');
      assert.equal(created?.payload.sandboxId, ctx.sandbox.id);
      assert.equal(created?.payload.adapter, 'bwrap');
      assert.equal(await w.runStatus(ctx.runId), 'provisioning', 'the run starts only after setup');
    });
  });

  it('provision: ends the run when the sandbox cannot be created, holding the session for finish to close', async () => {
    const ctx = await w.run({ fields: { image: 'elsewhere:latest' } });
    try {
      const end = await provision(ctx);
      assert.ok(end instanceof RunEnd);
      assert.equal(end.status, 'failed');
      assert.match(
        end.error ?? '',
        /^Failed to create the sandbox: the bwrap backend .* cannot run the image elsewhere:latest/,
      );
      assert.equal(ctx.held.sandbox, null);
      assert.ok(ctx.held.session, 'the session was opened before the sandbox');
      const types = (await w.timeline(ctx)).map((e) => e.type);
      assert.ok(!types.includes('sandbox.create'));
    } finally {
      await w.release(ctx);
    }
  });

  it('provision: ends the run without a model before anything is opened', async () => {
    const ctx = await w.run({ noModel: true });
    try {
      const end = await provision(ctx);
      assert.ok(end instanceof RunEnd);
      assert.deepEqual([end.status, end.error], ['failed', noModelMessage]);
      assert.deepEqual(ctx.held, { mcp: null, session: null, sandbox: null });
    } finally {
      await w.release(ctx);
    }
  });

  it('prepare: writes the input, the pinned playbook and the empty /svc directories into the sandbox', async () => {
    const playbook = { main: '#!/bin/sh\necho main\n', learnings: [] };
    await withRun(
      () => prepared({ playbook, input: { city: 'Lyon' } }),
      async (ctx) => {
        assert.equal(ctx.playbook.main, playbook.main);
        const r = await ctx.sandbox.exec({
          cmd: ['sh', '-c', 'cat /svc/input.json; echo; test -x /svc/main && echo main-ok; ls -A /svc/outputs'],
        });
        assert.equal(r.exitCode, 0, text(r.output));
        assert.deepEqual(text(r.output).trim().split('\n'), ['{"city":"Lyon"}', 'main-ok', '.keep']);
      },
    );
  });

  it('setup: runs the setup script, connects, and starts the run', async () => {
    await withRun(
      () => prepared({ playbook: { setup: 'echo ready > /workspace/setup.txt; echo set up' } }),
      async (ctx) => {
        assert.equal(await setup(ctx), null);
        assert.equal(await w.runStatus(ctx.runId), 'running');
        const entries = await w.timeline(ctx);
        const entry = entries.find((e) => e.type === 'sandbox.setup');
        assert.equal(entry?.payload.exitCode, 0);
        assert.match(String(entry?.payload.output), /set up/);
        assert.deepEqual(entries.at(-1)?.payload, { status: 'running' });
        const left = await ctx.sandbox.exec({ cmd: ['cat', '/workspace/setup.txt'] });
        assert.equal(text(left.output).trim(), 'ready');
      },
    );
  });

  it('setup: a failing script ends the run as failed and counts for reflection; the run never starts', async () => {
    await withRun(
      () => prepared({ playbook: { setup: 'echo broken; exit 3' } }),
      async (ctx) => {
        const end = await setup(ctx);
        assert.ok(end instanceof RunEnd);
        assert.deepEqual([end.status, end.error], ['failed', 'The setup script failed with exit code 3']);
        assert.equal(ctx.tally.setupFailed, true);
        assert.equal(await w.runStatus(ctx.runId), 'provisioning');
      },
    );
  });

  it('scripted: skips a run without a main script, and runs main for a scripted one', async () => {
    await withRun(
      () => prepared({ mode: 'explore', playbook: { main: '#!/bin/sh\nexit 0\n' } }),
      async (ctx) => {
        assert.equal(await scripted(ctx), null);
        assert.equal(ctx.main, null, 'an explore run does not run main');
        assert.equal(ctx.tally.workStarted, false);
      },
    );
    await withRun(
      () => prepared({ mode: 'scripted', playbook: { main: '#!/bin/sh\necho from main\nexit 4\n' } }),
      async (ctx) => {
        assert.equal(await setup(ctx), null);
        assert.equal(await scripted(ctx), null);
        assert.deepEqual(
          { exitCode: ctx.main?.exitCode, output: ctx.main?.output.trim(), timedOut: ctx.main?.timedOut },
          { exitCode: 4, output: 'from main', timedOut: false },
        );
        assert.equal(ctx.tally.mainRan, true);
        assert.equal(ctx.tally.workStarted, true);
        const result = (await w.timeline(ctx)).find((e) => e.type === 'tool.result');
        assert.equal(result?.payload.name, 'main');
        assert.deepEqual(result?.payload.meta, { exitCode: 4, timedOut: false });
      },
    );
  });

  it('scripted: a cancel while main runs ends the run as cancelled', async () => {
    const cancel = new AbortController();
    await withRun(
      () =>
        prepared({
          mode: 'scripted',
          playbook: { main: '#!/bin/sh\necho > /workspace/main-started\nsleep 30\n' },
          cancel: cancel.signal,
        }),
      async (ctx) => {
        assert.equal(await setup(ctx), null);
        const started = Date.now();
        const ending = scripted(ctx);
        // Cancelled once main is seen running, so the cancel cuts main off rather than landing before it starts.
        await waitFor(
          'main to start',
          async () => (await ctx.sandbox.readFile('/workspace/main-started', 10)) !== null,
        );
        cancel.abort();
        const end = await ending;
        assert.ok(Date.now() - started < 10_000, 'main was cut off');
        assert.ok(end instanceof RunEnd);
        assert.deepEqual([end.status, end.error], ['cancelled', stopMessages.stopped]);
        assert.equal(ctx.stop.reason, 'cancelled');
      },
    );
  });

  it('verify: passes main with its checks and outputs, and the run succeeds without the model', async () => {
    const main = '#!/bin/sh\nsvc output set answer 42\necho all done\n';
    await withRun(
      () =>
        prepared({
          mode: 'scripted',
          playbook: { main, verify: { checks: ['output.answer == 42'], llm: false, varies: [] } },
        }),
      async (ctx) => {
        assert.equal((await setup(ctx)) ?? (await scripted(ctx)), null);
        const end = await verify(ctx);
        assert.ok(end instanceof RunEnd, `verify answered ${JSON.stringify(end)}`);
        assert.equal(end.status, 'succeeded');
        assert.deepEqual(end.outputs, { answer: 42 });
        assert.match(end.summary ?? '', /all done/);
        assert.equal(await w.runStatus(ctx.runId), 'verifying');
        const verdict = (await w.timeline(ctx)).find((e) => e.type === 'verify.result');
        assert.equal(verdict?.payload.passed, true);
      },
    );
  });

  it('verify: a main that fell short hands over to the agent, told what the script did', async () => {
    await withRun(
      () => prepared({ mode: 'scripted', playbook: { main: '#!/bin/sh\nsvc step upload\nexit 3\n' } }),
      async (ctx) => {
        assert.equal((await setup(ctx)) ?? (await scripted(ctx)), null);
        const short = await verify(ctx);
        assert.ok(short instanceof FellShort, `verify answered ${JSON.stringify(short)}`);
        assert.equal(short.result.reason, 'the check "exit_code == 0" failed: the exit code was 3');
        await fallBack(ctx, short);
        assert.equal(ctx.tally.fellBack, true);
        assert.equal(await w.runStatus(ctx.runId), 'running');
        assert.match(ctx.brief ?? '', /upload/, 'the brief names the last step');
        const entries = await w.timeline(ctx);
        const fallback = entries.find((e) => e.type === 'fallback');
        assert.equal(fallback?.payload.reason, 'The check "exit_code == 0" failed: the exit code was 3');
        assert.deepEqual(
          entries.filter((e) => e.type === 'run.status').map((e) => e.payload.status),
          ['provisioning', 'running', 'verifying', 'running'],
        );
      },
    );
  });

  it('agent: works until finish, counts its turns and cost, collects, and merges the outputs', async () => {
    const model = [
      {
        toolCalls: [{ name: 'bash', args: { command: 'svc output set city Lyon && echo hi > /svc/outputs/note.txt' } }],
      },
      { toolCalls: [{ name: 'finish', args: { status: 'success', summary: 'done', outputs: { answer: 1 } } }] },
    ];
    await withRun(
      () => prepared({ model }),
      async (ctx) => {
        assert.equal(await setup(ctx), null);
        const end = await agent(ctx);
        assert.deepEqual([end.status, end.error, end.summary], ['succeeded', null, 'done']);
        assert.deepEqual(end.outputs, { city: 'Lyon', answer: 1 });
        assert.equal(ctx.tally.turns, 2);
        assert.ok(ctx.tally.agentCost > 0);
        assert.equal(ctx.tally.collected, true);
        const saved = readFileSync(join(w.dataDir, 'runs', ctx.runId, 'artifacts', 'note.txt'), 'utf8');
        assert.equal(saved, 'hi\n');
      },
    );
  });

  it('agent: a model that fails for good fails the run with its error', async () => {
    await withRun(
      () => prepared({ model: [{ error: 'bad key', errorStatus: 401 }] }),
      async (ctx) => {
        assert.equal(await setup(ctx), null);
        const end = await agent(ctx);
        assert.equal(end.status, 'failed');
        assert.equal(end.error, 'model call failed: fake API error (status 401): bad key');
        assert.equal(ctx.tally.turns, 0);
      },
    );
  });

  it('collect: reads nothing before the work started, and the artifacts once, after stopping every process', async () => {
    await withRun(
      () => prepared(),
      async (ctx) => {
        await ctx.sandbox.exec({ cmd: ['sh', '-c', 'echo early > /svc/outputs/a.txt'] });
        await collect(ctx);
        assert.equal(ctx.tally.collected, false, 'nothing is read before the scripted or agent phase');
        ctx.tally.workStarted = true;
        await collect(ctx);
        assert.equal(ctx.tally.collected, true);
        const logged = (await w.timeline(ctx)).filter((e) => e.type === 'log');
        assert.deepEqual(
          logged.map((e) => e.payload.message),
          ['Collected 1 artifact(s)'],
        );
        const after = await ctx.sandbox.exec({ cmd: ['true'] }).catch((err: unknown) => err);
        assert.ok(after instanceof Error, 'no process runs in the sandbox any more');
        await collect(ctx);
        assert.equal((await w.timeline(ctx)).filter((e) => e.type === 'log').length, 1, 'collected once');
      },
    );
  });

  it('collect: an artifact that cannot be saved is a note on the timeline, and the candidates are still read', async () => {
    await withRun(
      () => prepared(),
      async (ctx) => {
        ctx.tally.workStarted = true;
        await ctx.sandbox.exec({
          cmd: ['sh', '-c', 'echo a > /svc/outputs/a.txt; echo "#!/bin/sh" > /svc/candidates/fetch.sh'],
        });
        // The run's directory on the host is a plain file: no artifact of it can be written.
        const runDir = join(w.dataDir, 'runs', ctx.runId);
        mkdirSync(dirname(runDir), { recursive: true });
        writeFileSync(runDir, 'not a directory\n');
        await collect(ctx);
        const logged = (await w.timeline(ctx)).filter((e) => e.type === 'log').map((e) => String(e.payload.message));
        assert.equal(logged.length, 2, JSON.stringify(logged));
        assert.match(logged[0]!, /^Could not collect artifacts: /);
        assert.match(logged[1]!, /^Could not collect candidate scripts: /);
        assert.equal(ctx.tally.collected, true);
      },
    );
  });

  it('finish: releases the sandbox, writes the final status before RunFinished, and finishes the run once', async () => {
    const ctx = await prepared();
    assert.equal(await setup(ctx), null);
    await finish(ctx, new RunEnd('succeeded', null, 'all good', { answer: 42 }));
    assert.equal(await w.runStatus(ctx.runId), 'succeeded');
    const listed = await w.backend.list();
    assert.ok(!listed.some((s) => s.id === ctx.sandbox.id), 'the sandbox is gone');
    const entries = await w.timeline(ctx);
    assert.equal(entries.at(-1)?.type, 'run.status');
    assert.deepEqual(entries.at(-1)?.payload, { status: 'succeeded' });
    assert.ok(entries.some((e) => e.type === 'sandbox.destroy'));
    await assert.rejects(finish(ctx, new RunEnd('failed', 'again')), /not running/, 'a run finishes once');
    ctx.stop.dispose();
  });

  it('finish: a cancel wins over a failure, and a stopped run reads Cancelled', async () => {
    const cancel = new AbortController();
    const ctx = await prepared({ cancel: cancel.signal });
    assert.equal(await setup(ctx), null);
    cancel.abort();
    await finish(ctx, RunEnd.stopped(ctx.stop));
    const entries = await w.timeline(ctx);
    assert.deepEqual(entries.at(-1)?.payload, { status: 'cancelled', error: 'Cancelled' });
    assert.equal(await w.runStatus(ctx.runId), 'cancelled');
    ctx.stop.dispose();
  });
});
