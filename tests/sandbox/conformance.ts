import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer as createHttpServer, type IncomingMessage, type Server as HttpServer } from 'node:http';
import { createServer as createTcpServer, type Server as TcpServer } from 'node:net';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';
import type { Sandbox, SandboxBackend, SandboxSpec } from '../../adapters/sandbox/types.js';
import { hostProcessesNamed, testSpec } from './fixture.js';
import { waitFor } from '../wait.js';

/**
 * The one conformance suite every sandbox backend passes (docs/sandbox.md). `factory` makes a backend instance
 * on `root`, a fresh directory (mode 0711, under os.tmpdir()) that also holds the broker's Unix socket; it is called
 * again for the "second instance" test, which must see the first one's sandboxes.
 */
export function sandboxConformance(
  name: string,
  factory: (root: string) => SandboxBackend | Promise<SandboxBackend>,
): void {
  describe(`sandbox conformance: ${name}`, () => {
    let root: string;
    let backend: SandboxBackend;
    let brokerSocket: string;
    let broker: HttpServer;
    const seen: Array<{ method: string; url: string; authorization: string | undefined; body: string }> = [];
    const created: Sandbox[] = [];
    let sb: Sandbox;

    const spec = (overrides: Partial<SandboxSpec> = {}): SandboxSpec =>
      testSpec(
        'conf',
        brokerSocket,
        { cpus: 1, memoryMb: 512, pidsLimit: 256, diskMb: 1024 },
        { labels: { runId: 'run-1', jobId: 'job-1', workspaceId: 'ws-1' }, ...overrides },
      );
    const make = async (overrides: Partial<SandboxSpec> = {}): Promise<Sandbox> => {
      const s = await backend.create(spec(overrides));
      created.push(s);
      return s;
    };
    const sh = (box: Sandbox, script: string, extra: Partial<Parameters<Sandbox['exec']>[0]> = {}) =>
      box.exec({ cmd: ['sh', '-c', script], timeoutMs: 20_000, ...extra });
    const text = (b: Buffer) => b.toString('utf8');

    before(async () => {
      root = mkdtempSync(join(tmpdir(), `svc-sandbox-${name}-`));
      // The agent user (uid 1000) must reach the socket and the sandbox directories, but not list them.
      chmodSync(root, 0o711);
      brokerSocket = join(root, 'broker.sock');
      broker = createHttpServer((req: IncomingMessage, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          seen.push({
            method: req.method ?? '',
            url: req.url ?? '',
            authorization: req.headers.authorization,
            body: Buffer.concat(chunks).toString('utf8'),
          });
          const body = JSON.stringify({ key: 'k', value: 'value from the broker', found: true });
          res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
          res.end(body);
        });
      });
      await new Promise<void>((resolve, reject) => broker.once('error', reject).listen(brokerSocket, resolve));
      chmodSync(brokerSocket, 0o666);
      backend = await factory(root);
      await backend.prepare();
      const t0 = performance.now();
      sb = await make({ env: { FROM_SPEC: 'spec-value', OVERRIDDEN: 'spec' } });
      const first = await sb.exec({ cmd: ['true'] });
      const ms = performance.now() - t0;
      assert.equal(first.exitCode, 0, text(first.output));
      console.log(
        `[sandbox ${name}] create + first exec: ${ms.toFixed(1)} ms; limits enforced: ${JSON.stringify(backend.info().capabilities.limits)}`,
      );
    });

    after(async () => {
      for (const s of created) await s.destroy().catch(() => undefined);
      await new Promise<void>((resolve) => (broker ? broker.close(() => resolve()) : resolve()));
      broker?.closeAllConnections();
      if (root) rmSync(root, { recursive: true, force: true });
    });

    it('runs commands as uid 1000 by default and as uid 0 with runAsRoot', async () => {
      const agent = await sb.exec({ cmd: ['id', '-u'] });
      assert.equal(agent.exitCode, 0, text(agent.output));
      assert.equal(text(agent.output).trim(), '1000');
      const rootBox = await make({ runAsRoot: true });
      const asRoot = await rootBox.exec({ cmd: ['id', '-u'] });
      assert.equal(text(asRoot.output).trim(), '0');
      await rootBox.destroy();
    });

    it('has /workspace as the writable cwd, a writable /svc, and svc at /usr/local/bin/svc on PATH', async () => {
      const r = await sh(
        sb,
        'pwd; echo w > /workspace/w.txt && cat /workspace/w.txt; echo s > /svc/s.txt && cat /svc/s.txt; command -v svc; test -x /usr/local/bin/svc && echo exec-ok; for d in /svc/outputs /svc/logs; do test -d $d && test -w $d && echo "$d ok"; done',
      );
      assert.equal(r.exitCode, 0, text(r.output));
      assert.deepEqual(text(r.output).trim().split('\n'), [
        '/workspace',
        'w',
        's',
        '/usr/local/bin/svc',
        'exec-ok',
        '/svc/outputs ok',
        '/svc/logs ok',
      ]);
      const elsewhere = await sh(sb, 'pwd', { cwd: '/svc' });
      assert.equal(text(elsewhere.output).trim(), '/svc');
      const readOnly = await sh(sb, 'touch /usr/x 2>/dev/null || echo usr-ro; touch /etc/x 2>/dev/null || echo etc-ro');
      assert.equal(text(readOnly.output).trim(), 'usr-ro\netc-ro');
    });

    it('passes the spec env and the exec env (exec wins), with HOME=/workspace', async () => {
      const r = await sh(sb, 'echo "$FROM_SPEC|$FROM_EXEC|$OVERRIDDEN|$HOME"', {
        env: { FROM_EXEC: 'exec-value', OVERRIDDEN: 'exec' },
      });
      assert.equal(text(r.output).trim(), 'spec-value|exec-value|exec|/workspace');
    });

    it('reports exit codes: plain, killed by a signal, command not found', async () => {
      assert.equal((await sh(sb, 'exit 3')).exitCode, 3);
      assert.equal((await sh(sb, 'exit 0')).exitCode, 0);
      const killed = await sh(sb, 'kill -9 $$');
      assert.equal(killed.exitCode, 137);
      assert.equal(killed.oomKilled, false, 'a kill that is not out of memory is not oomKilled');
      const missing = await sb.exec({ cmd: ['no-such-command-anywhere'] });
      assert.equal(missing.exitCode, 127, text(missing.output));
    });

    it('feeds stdin when given and /dev/null otherwise; output is stdout and stderr combined, capped by maxOutputBytes', async () => {
      const cat = await sb.exec({ cmd: ['cat'], stdin: 'line one\nline two\n' });
      assert.equal(text(cat.output), 'line one\nline two\n');
      const none = await sb.exec({ cmd: ['wc', '-c'] });
      assert.equal(text(none.output).trim(), '0');
      const both = await sh(sb, 'echo out; echo err >&2');
      assert.equal(text(both.output).split('\n').sort().join(','), ',err,out');
      const big = await sh(sb, 'head -c 100000 /dev/zero', { maxOutputBytes: 1000 });
      assert.equal(big.output.length, 1000);
      assert.equal(big.bytes, 100000);
    });

    it('streams stdin to a running command when given a stream, and closes it when the stream ends', async () => {
      const input = new PassThrough();
      let seen = '';
      const running = sb.exec({
        cmd: ['sh', '-c', 'while read -r line; do echo "got $line"; done; echo eof'],
        stdin: input,
        timeoutMs: 20_000,
        onOutput: (c) => (seen += c.toString('utf8')),
      });
      input.write('one\n');
      await waitFor('the answer to the first line while the command still runs', () => seen.includes('got one'));
      assert.equal(seen, 'got one\n', 'the first line was answered while the command still ran');
      input.write('two\n');
      input.end();
      const r = await running;
      assert.equal(r.exitCode, 0);
      assert.equal(text(r.output), 'got one\ngot two\neof\n');
    });

    it('delivers output live through onOutput before the command ends', async () => {
      // The command cannot end before it reads a line, and the line is only written once "first" has arrived: output
      // held back until the end would never arrive, and the wait below fails.
      const input = new PassThrough();
      let live = '';
      const running = sb.exec({
        cmd: ['sh', '-c', 'echo first; read -r _; echo second'],
        stdin: input,
        timeoutMs: 60_000,
        onOutput: (chunk) => (live += chunk.toString('utf8')),
      });
      await waitFor('"first" while the command still runs', () => live.includes('first'));
      assert.equal(live, 'first\n');
      input.end('go\n');
      const r = await running;
      assert.equal(r.exitCode, 0);
      assert.equal(r.timedOut, false);
      assert.equal(live, 'first\nsecond\n');
    });

    it('a timeout kills the whole process tree after the grace, reports timedOut, and the sandbox stays usable', async () => {
      const marker = `conf-sleeper-${randomUUID().slice(0, 8)}`;
      // bash's exec -a names the sleepers, so the host can check that none of them survives.
      const script = `trap '' TERM; for i in 1 2 3; do (exec -a ${marker} sleep 1000) & done; sleep 1000; wait`;
      const t0 = Date.now();
      const r = await sb.exec({ cmd: ['bash', '-c', script], timeoutMs: 500 });
      const ms = Date.now() - t0;
      assert.equal(r.timedOut, true);
      assert.equal(r.cancelled, false);
      assert.notEqual(r.exitCode, 0);
      // 500 ms and the 1.5 s grace take 2 s; the bound leaves room for engine round trips on a loaded machine, and is
      // still far below the sleeps' 1000 s.
      assert.ok(ms < 500 + 1500 + 15_000, `the exec ended ${ms} ms after it started (timeout 500 ms)`);
      console.log(`[sandbox ${name}] timeout 500 ms: the exec ended after ${ms} ms`);
      assert.deepEqual(await settled(() => hostProcessesNamed(marker)), [], 'no sleeper of the killed tree survives');
      const next = await sb.exec({ cmd: ['echo', 'still here'] });
      assert.equal(next.exitCode, 0);
      assert.equal(text(next.output), 'still here\n');
    });

    it('a timeout first sends SIGTERM, so a command can clean up before it is killed', async () => {
      const r = await sb.exec({
        cmd: ['bash', '-c', "trap 'echo cleaned up; exit 7' TERM; echo started; sleep 1000 & wait"],
        timeoutMs: 500,
      });
      assert.equal(r.timedOut, true);
      assert.equal(text(r.output), 'started\ncleaned up\n');
      // Held for the whole grace it would take 500 + 1500 ms at least.
      assert.ok(r.ms < 2000, `a command that ends on SIGTERM is not held for the whole grace (${r.ms} ms)`);
    });

    it('aborting the signal kills the command and reports cancelled', async () => {
      const ac = new AbortController();
      let out = '';
      const running = sb.exec({
        cmd: ['sh', '-c', 'echo started; exec sleep 1000'],
        signal: ac.signal,
        onOutput: (c) => (out += c.toString('utf8')),
      });
      await waitFor('the command to start', () => out.includes('started'));
      const t0 = Date.now();
      ac.abort();
      const r = await running;
      assert.equal(r.cancelled, true);
      assert.equal(r.timedOut, false);
      // The 1.5 s grace, plus room for a loaded machine; the sleep would take 1000 s.
      assert.ok(Date.now() - t0 < 1500 + 15_000, `ended ${Date.now() - t0} ms after the abort`);
      const pre = new AbortController();
      pre.abort();
      const already = await sb.exec({ cmd: ['sleep', '1000'], signal: pre.signal });
      assert.equal(already.cancelled, true);
    });

    it('an abort at any moment of the start still ends the command, and leaves nothing running', async () => {
      // A cancel landing while the sandbox was starting once killed the launcher before it had tied the command to
      // itself: the command ran to its end unseen (9 of 400 aborts within 20 ms of the start, on this machine).
      // bwrap's window is a few instructions wide and wants many tries; an engine's exec is slower to start and stop.
      const tries = backend.kind === 'bwrap' ? 120 : 20;
      for (let i = 0; i < tries; i++) {
        const marker = `conf-start-${randomUUID().slice(0, 8)}`;
        const ac = new AbortController();
        const t0 = Date.now();
        const running = sb.exec({
          cmd: ['bash', '-c', `exec -a ${marker} sleep 1000`],
          signal: ac.signal,
          timeoutMs: 30_000,
        });
        setTimeout(() => ac.abort(), i % 20);
        const r = await running;
        assert.equal(r.cancelled, true);
        assert.ok(
          Date.now() - t0 < 1500 + 15_000,
          `an abort after ${i % 20} ms ended the exec after ${Date.now() - t0} ms`,
        );
        assert.deepEqual(await settled(() => hostProcessesNamed(marker)), [], `the sleeper of try ${i} survived`);
      }
    });

    it('enforces the pids limit', async (t) => {
      if (!backend.info().capabilities.limits.pids) {
        console.log(
          `[sandbox ${name}] !!! PIDS LIMIT NOT ENFORCED on this machine (capabilities.limits.pids is false): not tested !!!`,
        );
        return t.skip('pids limit not enforced here');
      }
      const box = await make({ limits: { cpus: 1, memoryMb: 512, pidsLimit: 32, diskMb: 1024 } });
      // dash (not bash, which retries a failed fork for a long time).
      const r = await sh(box, 'i=0; while [ $i -lt 100 ]; do sleep 30 & i=$((i+1)); done; echo all-started', {
        timeoutMs: 15_000,
      });
      assert.equal(r.timedOut, false);
      assert.ok(
        r.exitCode !== 0 || !text(r.output).includes('all-started'),
        `100 background processes started under pidsLimit 32: ${text(r.output)}`,
      );
      assert.match(text(r.output), /fork|resource|again/i);
      await box.destroy();
    });

    it('enforces the memory limit and reports oomKilled', async (t) => {
      if (!backend.info().capabilities.limits.memory) {
        console.log(
          `[sandbox ${name}] !!! MEMORY LIMIT NOT ENFORCED on this machine (capabilities.limits.memory is false): not tested !!!`,
        );
        return t.skip('memory limit not enforced here');
      }
      const box = await make({ limits: { cpus: 1, memoryMb: 64, pidsLimit: 256, diskMb: 64 } });
      // tail keeps the whole "line" (no newline in 200 MB of zeros) in memory; the pipeline's status is tail's.
      const r = await sh(box, 'head -c 200M /dev/zero | tail > /dev/null', { timeoutMs: 20_000 });
      assert.equal(r.timedOut, false);
      assert.equal(r.exitCode, 137, text(r.output));
      assert.equal(r.oomKilled, true);
      if ((await sh(box, 'command -v python3')).exitCode === 0) {
        const direct = await box.exec({
          cmd: ['python3', '-c', 'x = bytearray(200 * 1024 * 1024); print("allocated")'],
          timeoutMs: 20_000,
        });
        assert.equal(direct.exitCode, 137, text(direct.output));
        assert.equal(direct.oomKilled, true);
      }
      const fine = await sh(box, 'head -c 8M /dev/zero | tail > /dev/null && echo fine');
      assert.equal(text(fine.output), 'fine\n');
      assert.equal(fine.oomKilled, false);
      await box.destroy();
    });

    it('puts files with their mode and owner 1000, creating parent directories', async () => {
      await sb.putFiles([
        { path: '/workspace/in/deep/run.sh', content: '#!/bin/sh\necho ran "$@"\n', mode: 0o755 },
        { path: '/svc/input.json', content: Buffer.from('{"a":1}') },
        { path: '/svc/private.txt', content: 'secret', mode: 0o600 },
      ]);
      const r = await sh(
        sb,
        'stat -c "%a %u %n" /workspace/in /workspace/in/deep /workspace/in/deep/run.sh /svc/input.json /svc/private.txt; /workspace/in/deep/run.sh x; cat /svc/private.txt; echo; echo more >> /workspace/in/deep/run.sh && echo appended',
      );
      assert.equal(r.exitCode, 0, text(r.output));
      const lines = text(r.output).trim().split('\n');
      assert.deepEqual(
        lines.slice(0, 5).map((l) => l.split(' ').slice(1).join(' ')),
        [
          '1000 /workspace/in',
          '1000 /workspace/in/deep',
          '1000 /workspace/in/deep/run.sh',
          '1000 /svc/input.json',
          '1000 /svc/private.txt',
        ],
      );
      assert.deepEqual(
        lines.slice(2, 5).map((l) => l.split(' ')[0]),
        ['755', '644', '600'],
      );
      assert.deepEqual(lines.slice(5), ['ran x', 'secret', 'appended']);
    });

    it('refuses to put files outside /workspace and /svc, or through links the agent planted', async () => {
      for (const path of [
        '/etc/evil',
        '/usr/local/bin/svc',
        '/workspace/../etc/evil',
        '/svcx/evil',
        '/workspacex',
        'relative/evil',
        '/',
      ]) {
        await assert.rejects(sb.putFiles([{ path, content: 'x' }]), Error, `putFiles(${path}) is refused`);
      }
      // Links whose targets are host paths of this test: writing through them would change host files.
      const victim = join(root, 'victim.txt');
      writeFileSync(victim, 'untouched');
      const victimDir = mkdtempSync(join(root, 'victim-dir-'));
      const links = await sh(
        sb,
        `ln -s '${victim}' /workspace/file-link && ln -s '${victimDir}' /workspace/dir-link && echo linked`,
      );
      assert.equal(text(links.output).trim(), 'linked');
      await sb.putFiles([{ path: '/workspace/file-link', content: 'overwritten' }]).catch(() => undefined);
      await sb.putFiles([{ path: '/workspace/dir-link/planted.txt', content: 'planted' }]).catch(() => undefined);
      assert.equal(readFileSync(victim, 'utf8'), 'untouched');
      assert.deepEqual(readdirSync(victimDir), []);
    });

    it('reads files back: null when missing, throws above the cap, links not followed', async () => {
      await sh(sb, 'printf "0123456789" > /svc/outputs/ten.txt; ln -sf /etc/passwd /svc/outputs/passwd-link');
      assert.deepEqual(await sb.readFile('/svc/outputs/ten.txt', 10), Buffer.from('0123456789'));
      await assert.rejects(sb.readFile('/svc/outputs/ten.txt', 9));
      assert.equal(await sb.readFile('/svc/outputs/missing.txt', 100), null);
      assert.equal(await sb.readFile('/workspace/no/such/dir/file', 100), null);
      const viaLink = await sb.readFile('/svc/outputs/passwd-link', 1_000_000).catch(() => null);
      assert.ok(
        viaLink === null || !viaLink.toString('utf8').includes('root:'),
        'reading a link does not give the host or sandbox /etc/passwd',
      );
      await sh(sb, 'rm -f /svc/outputs/ten.txt /svc/outputs/passwd-link');
    });

    it('reads a directory recursively in path order, capped with truncated, without following links', async () => {
      const box = await make();
      const made = await sh(
        box,
        [
          'cd /svc/outputs',
          'mkdir -p sub/deeper empty',
          'printf aaa > a.txt',
          'printf bb > sub/b.txt',
          'printf c > sub/deeper/c.txt',
          'printf dddd > z.txt',
          'ln -s /etc/passwd passwd-link',
          'ln -s /etc etc-link',
          'echo made',
        ].join(' && '),
      );
      assert.equal(text(made.output).trim(), 'made');
      const all = await box.readDir('/svc/outputs', 1_000_000);
      assert.equal(all.truncated, false);
      assert.deepEqual(
        all.files.map((f) => [f.name, f.size, f.content.toString('utf8')]),
        [
          ['a.txt', 3, 'aaa'],
          ['sub/b.txt', 2, 'bb'],
          ['sub/deeper/c.txt', 1, 'c'],
          ['z.txt', 4, 'dddd'],
        ],
      );
      const capped = await box.readDir('/svc/outputs', 5);
      assert.equal(capped.truncated, true);
      assert.deepEqual(
        capped.files.map((f) => f.name),
        ['a.txt', 'sub/b.txt'],
      );
      const sub = await box.readDir('/svc/outputs/sub', 100);
      assert.deepEqual(
        sub.files.map((f) => f.name),
        ['b.txt', 'deeper/c.txt'],
      );
      const none = await box.readDir('/svc/outputs/empty', 100);
      assert.deepEqual(none, { files: [], truncated: false });
      await box.destroy();
    });

    it('has no network interface but loopback, and cannot reach the host', async () => {
      const dev = await sb.exec({ cmd: ['cat', '/proc/net/dev'] });
      const ifaces = text(dev.output)
        .split('\n')
        .slice(2)
        .map((l) => l.split(':')[0]!.trim())
        .filter(Boolean);
      assert.deepEqual(ifaces, ['lo']);
      let connections = 0;
      const listener: TcpServer = createTcpServer((s) => {
        connections++;
        s.destroy();
      });
      await new Promise<void>((resolve) => listener.listen(0, '0.0.0.0', resolve));
      const port = (listener.address() as { port: number }).port;
      try {
        const addresses = [
          '127.0.0.1',
          ...Object.values(networkInterfaces())
            .flat()
            .filter((a) => a && a.family === 'IPv4' && !a.internal)
            .map((a) => a!.address),
        ];
        for (const addr of addresses) {
          const r = await sb.exec({
            cmd: ['bash', '-c', `echo hi > /dev/tcp/${addr}/${port} && echo CONNECTED`],
            timeoutMs: 10_000,
          });
          assert.equal(r.timedOut, false, `connecting to ${addr} hung`);
          assert.notEqual(r.exitCode, 0, `connecting to ${addr}:${port} from inside succeeded: ${text(r.output)}`);
          assert.ok(!text(r.output).includes('CONNECTED'));
        }
        console.log(`[sandbox ${name}] host addresses tried from inside (all refused): ${addresses.join(', ')}`);
        assert.equal(connections, 0);
      } finally {
        await new Promise<void>((resolve) => listener.close(() => resolve()));
      }
    });

    it('reaches the broker socket through svc init on 127.0.0.1:4180', async () => {
      seen.length = 0;
      const r = await sb.exec({
        cmd: ['svc', 'state', 'get', 'k'],
        env: { SVC_BROKER_URL: 'http://127.0.0.1:4180', SVC_TOKEN: 't' },
      });
      assert.equal(r.exitCode, 0, text(r.output));
      assert.equal(text(r.output), 'value from the broker\n');
      assert.deepEqual(seen, [{ method: 'GET', url: '/v1/state/k', authorization: 'Bearer t', body: '' }]);
    });

    it('lists sandboxes with their labels; destroy kills every process and is idempotent', async () => {
      const box = await make({
        labels: { runId: 'run-list', jobId: 'job-list', workspaceId: 'ws-list' },
        ttlMs: 60_000,
      });
      const listed = (await backend.list()).find((s) => s.id === box.id);
      assert.ok(listed, 'a created sandbox is listed');
      assert.deepEqual(listed.labels, { runId: 'run-list', jobId: 'job-list', workspaceId: 'ws-list' });
      assert.ok(Math.abs(listed.expiresAt - listed.createdAt - 60_000) < 1000);
      const running = runningSleep(box);
      await running.started;
      const t0 = Date.now();
      await box.destroy();
      const ended = await running.done;
      assert.ok(Date.now() - t0 < 15_000 && !ended.timedOut, `a command still ran ${Date.now() - t0} ms after destroy`);
      await box.destroy();
      await backend.destroy(box.id);
      assert.equal(
        (await backend.list()).some((s) => s.id === box.id),
        false,
        'a destroyed sandbox is not listed',
      );
      await assert.rejects(box.exec({ cmd: ['true'] }));
    });

    it('a second backend instance on the same root lists and destroys an abandoned sandbox', async () => {
      const abandoned = await backend.create(spec({ labels: { runId: 'run-abandoned' } }));
      const running = runningSleep(abandoned);
      await running.started;
      const second = await factory(root);
      await second.prepare();
      const listed = (await second.list()).find((s) => s.id === abandoned.id);
      assert.ok(listed, 'the second instance sees the sandbox');
      assert.equal(listed.labels.runId, 'run-abandoned');
      const t0 = Date.now();
      await second.destroy(abandoned.id);
      await second.destroy(abandoned.id);
      const ended = await running.done;
      assert.ok(Date.now() - t0 < 15_000 && !ended.timedOut, `a command still ran ${Date.now() - t0} ms after destroy`);
      assert.equal(
        (await second.list()).some((s) => s.id === abandoned.id),
        false,
      );
      assert.equal(
        (await backend.list()).some((s) => s.id === abandoned.id),
        false,
      );
      await abandoned.destroy();
    });
  });
}

/** The value of `probe` once it is empty, or its last value after 15 s (for the assertion to show). */
async function settled<T>(probe: () => T[]): Promise<T[]> {
  try {
    await waitFor('the list to empty', () => probe().length === 0, { timeoutMs: 15_000 });
  } catch {
    // Still not empty: the caller's assertion shows what is left.
  }
  return probe();
}

/** A 1000 s sleep in `box` (ended only by what the test does to it) and when it has started. */
function runningSleep(box: Sandbox): { started: Promise<void>; done: ReturnType<Sandbox['exec']> } {
  let out = '';
  const done = box.exec({
    cmd: ['sh', '-c', 'echo started; exec sleep 1000'],
    timeoutMs: 60_000,
    onOutput: (c) => (out += c.toString('utf8')),
  });
  const started = waitFor('the sleep to start', () => out.includes('started')).then(() => undefined);
  return { started, done };
}
