// svc init on the host: port forwarding to Unix sockets, exit status, reaping, signals and the TTL (docs/sandbox.md).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildSvc, FakeBroker, freePort, run, svcBin, type RunOptions } from './harness.js';
import { waitFor } from '../wait.js';

let dir = '';
let brokerSock = '';
const broker = new FakeBroker();

before(async () => {
  buildSvc();
  dir = mkdtempSync(join(tmpdir(), 'svc-init-'));
  brokerSock = join(dir, 'broker.sock');
  await broker.listen(brokerSock);
});
after(async () => {
  await broker.close();
  rmSync(dir, { recursive: true, force: true });
});

/** svc init with its sockets and ports pointed at this test's servers (the proxy socket is absent unless given). */
async function init(
  args: string[],
  options: RunOptions & { proxySock?: string; brokerPort?: number; proxyPort?: number } = {},
) {
  const brokerPort = options.brokerPort ?? (await freePort());
  const proxyPort = options.proxyPort ?? (await freePort());
  const env = {
    SVC_INIT_BROKER_SOCKET: brokerSock,
    SVC_INIT_BROKER_PORT: String(brokerPort),
    SVC_INIT_PROXY_SOCKET: options.proxySock ?? join(dir, 'no-proxy.sock'),
    SVC_INIT_PROXY_PORT: String(proxyPort),
    ...(options.env ?? {}),
  };
  return { brokerPort, proxyPort, result: run(['init', ...args], { ...options, env }) };
}

const text = (b: Buffer) => b.toString('utf8');

/** Resolves once something accepts connections on the port (init is listening). */
async function waitForPort(port: number): Promise<void> {
  const accepts = () =>
    new Promise<boolean>((resolve) => {
      const s = connect(port, '127.0.0.1');
      s.once('connect', () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => resolve(false));
    });
  await waitFor(`init to listen on port ${port}`, accepts, { intervalMs: 10 });
}

/** Runs fn against a no-command init forwarding to `sock`, then stops init with SIGTERM (it must exit 0). */
async function withInit(sock: string, fn: (port: number) => Promise<void>): Promise<void> {
  let pid = 0;
  const job = await init(['--ttl', '30'], {
    env: { SVC_INIT_BROKER_SOCKET: sock },
    started: (p) => (pid = p),
    timeoutMs: 30000,
  });
  try {
    await waitForPort(job.brokerPort);
    await fn(job.brokerPort);
  } finally {
    process.kill(pid, 'SIGTERM');
    const r = await job.result;
    assert.equal(r.code, 0);
  }
}

describe('svc init with a command', () => {
  it('forwards the broker port to the Unix socket: svc inside reaches the broker', async () => {
    broker.reply = () => ({ body: { key: 'k', value: 'through the forwarder', found: true } });
    const before = broker.seen.length;
    const port = await freePort();
    const { result } = await init(
      ['--', 'sh', '-c', `SVC_BROKER_URL=http://127.0.0.1:${port} SVC_TOKEN=tok ${svcBin} state get k`],
      { brokerPort: port },
    );
    const r = await result;
    assert.equal(text(r.stderr), '');
    assert.equal(r.code, 0);
    assert.equal(text(r.stdout), 'through the forwarder\n');
    assert.equal(broker.seen.length, before + 1);
    assert.equal(broker.last.url, '/v1/state/k');
    assert.equal(broker.last.headers.authorization, 'Bearer tok');
  });

  it('forwards the proxy port only when the proxy socket exists', async () => {
    const proxySock = join(dir, 'proxy.sock');
    const proxy = new FakeBroker();
    await proxy.listen(proxySock);
    proxy.reply = () => ({ body: { key: 'k', value: 'via the proxy socket', found: true } });
    try {
      const port = await freePort();
      const cmd = `SVC_BROKER_URL=http://127.0.0.1:${port} SVC_TOKEN=tok ${svcBin} state get k`;
      let r = await (await init(['--', 'sh', '-c', cmd], { proxySock, proxyPort: port })).result;
      assert.equal(r.code, 0, text(r.stderr));
      assert.equal(text(r.stdout), 'via the proxy socket\n');
      assert.equal(proxy.seen.length, 1);
      r = await (await init(['--', 'sh', '-c', cmd], { proxyPort: port })).result;
      assert.equal(r.code, 1);
      assert.match(text(r.stderr), /cannot reach the broker at .*Connection refused/);
    } finally {
      await proxy.close();
    }
  });

  it('exits with the command status: code, 128 + signal, 127 when it cannot run', async () => {
    const cases: Array<[string[], number]> = [
      [['sh', '-c', 'exit 3'], 3],
      [['sh', '-c', 'exit 0'], 0],
      [['sh', '-c', 'kill -9 $$'], 137],
      [['sh', '-c', 'kill -TERM $$'], 143],
    ];
    for (const [cmd, code] of cases) {
      const r = await (await init(['--', ...cmd])).result;
      assert.equal(r.code, code, cmd.join(' '));
    }
    const missing = await (await init(['--', join(dir, 'no-such-command'), 'x'])).result;
    assert.equal(missing.code, 127);
    assert.match(text(missing.stderr), /svc init: cannot run .*no-such-command: No such file or directory/);
    const noDashes = await (await init(['sh', '-c', 'exit 4'])).result;
    assert.equal(noDashes.code, 4);
  });

  it('passes stdin, stdout and stderr through and prints nothing of its own on stdout', async () => {
    const r = await (await init(['--', 'sh', '-c', 'cat; echo out; echo err >&2'], { stdin: 'in\n' })).result;
    assert.equal(r.code, 0);
    assert.equal(text(r.stdout), 'in\nout\n');
    assert.equal(text(r.stderr), 'err\n');
  });

  it('runs the command in its own session', async () => {
    const r = await (await init(['--', 'sh', '-c', 'cut -d" " -f6 /proc/$$/stat; echo $$'])).result;
    const [sid, pid] = text(r.stdout).trim().split('\n');
    assert.equal(sid, pid);
  });

  it('adopts and reaps orphans, and still exits when the command exits', async () => {
    // Two orphans: one exits at once (a zombie unless init reaps it), one outlives the command. The command waits
    // until the short one's /proc entry is gone (a zombie keeps it), for up to 30 s: under load reaping can take
    // longer than any fixed pause, and a zombie left at the deadline shows up as "Z" in the listing below.
    const script = [
      'set -- $(sh -c "sleep 0.05 >/dev/null & echo \\$!; sleep 60 >/dev/null & echo \\$!")',
      'echo $2',
      'i=0; while [ -e /proc/$1 ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done',
      // pid, state, ppid of every process whose parent is init ($PPID), but this shell itself
      `for f in /proc/[0-9]*/stat; do read -r l < $f 2>/dev/null || continue; r=\${l##*) }; set -- $r; [ "$2" = "$PPID" ] && [ "\${l%% *}" != "$$" ] && echo "\${l%% *} $1"; done`,
      'exit 0',
    ].join('; ');
    const r = await (await init(['--', 'sh', '-c', script], { timeoutMs: 60_000 })).result;
    assert.equal(r.code, 0, text(r.stderr));
    const lines = text(r.stdout).trim().split('\n');
    const orphan = lines[0];
    assert.deepEqual(lines.slice(1), [`${orphan} S`], 'the long orphan was adopted; the short one was reaped (no Z)');
    // The orphan sleeps 60 s: an init that waited for it would take that long.
    assert.ok(r.ms < 45_000, `init exited ${r.ms} ms after start though an orphan was left`);
    // Nothing of the command outlives init.
    const stat = existsSync(`/proc/${orphan}/stat`) ? readFileSync(`/proc/${orphan}/stat`, 'utf8') : '';
    assert.ok(
      stat === '' || /\) Z /.test(stat) || !stat.includes('(sleep)'),
      `the orphan ${orphan} still runs: ${stat}`,
    );
  });

  it('on SIGTERM stops the command: SIGTERM to its group, SIGKILL 1.5 s later', async () => {
    let pid = 0;
    let ready!: () => void;
    const started = new Promise<void>((resolve) => (ready = resolve));
    const opts = { started: (p: number) => (pid = p), onStdout: (s: string) => s.includes('ready') && ready() };
    let job = await init(['--', 'sh', '-c', 'echo ready; sleep 30'], opts);
    await started;
    process.kill(pid, 'SIGTERM');
    let r = await job.result;
    assert.equal(r.code, 143, 'a command that does not ignore SIGTERM ends by it, before the SIGKILL');

    const started2 = new Promise<void>((resolve) => (ready = resolve));
    job = await init(['--', 'sh', '-c', 'trap "" TERM INT; echo ready; sleep 30; sleep 30'], opts);
    await started2;
    const t = Date.now();
    process.kill(pid, 'SIGINT');
    r = await job.result;
    const took = Date.now() - t;
    assert.equal(r.code, 137);
    // The SIGKILL waits 1.5 s; how long after it the exit is seen depends on the machine's load.
    assert.ok(took >= 1300 && took < 15_000, `killed after ${took} ms`);
    assert.equal(text(r.stdout), 'ready\n');
  });

  it('--ttl stops the command like SIGTERM', async () => {
    const r = await (await init(['--ttl', '1', '--', 'sleep', '30'])).result;
    assert.equal(r.code, 143);
    assert.ok(r.ms >= 900 && r.ms < 15_000, `${r.ms} ms: after the TTL, well before the command would end`);
  });

  it('a taken port is left alone with a note on stderr; the command still runs', async () => {
    const taken: Server = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as { port: number }).port;
    try {
      const r = await (await init(['--', 'sh', '-c', 'echo ran'], { brokerPort: port })).result;
      assert.equal(r.code, 0);
      assert.equal(text(r.stdout), 'ran\n');
      assert.match(text(r.stderr), new RegExp(`127\\.0\\.0\\.1:${port} is already in use`));
    } finally {
      taken.close();
    }
  });

  it('usage errors exit 2', async () => {
    for (const args of [['--ttl'], ['--ttl', 'soon', '--', 'true'], ['--bogus', '--', 'true']]) {
      const r = await (await init(args)).result;
      assert.equal(r.code, 2, args.join(' '));
    }
  });
});

describe('svc init without a command', () => {
  let pid = 0;
  let port = 0;
  let done: Promise<Awaited<ReturnType<typeof run>>>;
  const echoSock = () => join(dir, 'echo.sock');
  let echo: Server;

  before(async () => {
    const job = await init(['--ttl', '60'], { started: (p) => (pid = p), timeoutMs: 30000 });
    port = job.brokerPort;
    done = job.result;
    await waitForPort(port);
  });

  it('relays 50 concurrent connections', async () => {
    // Each request is held at the broker until all 50 are there at once, which only a relay that forwards them
    // concurrently achieves; the deadline only keeps a serial relay from hanging the test (then most < 50).
    let inFlight = 0;
    let most = 0;
    let allIn!: () => void;
    const allArrived = new Promise<void>((resolve) => (allIn = resolve));
    const deadline = setTimeout(allIn, 30_000);
    broker.reply = async (req) => {
      inFlight++;
      most = Math.max(most, inFlight);
      if (inFlight === 50) allIn();
      await allArrived;
      inFlight--;
      return { body: { n: req.url } };
    };
    const one = (i: number) =>
      new Promise<string>((resolve, reject) => {
        const req = request(
          {
            host: '127.0.0.1',
            port,
            path: `/n/${i}`,
            method: 'POST',
            agent: false,
            headers: { 'content-type': 'application/json' },
          },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('end', () => resolve(Buffer.concat(chunks).toString()));
          },
        );
        req.on('error', reject);
        req.end(JSON.stringify({ i, pad: 'x'.repeat(i * 100) }));
      });
    const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => one(i)));
    clearTimeout(deadline);
    answers.forEach((a, i) => assert.deepEqual(JSON.parse(a), { n: `/n/${i}` }));
    assert.equal(most, 50, 'all 50 were at the broker at once');
  });

  it('relays large data both ways at once and honours half-close', async () => {
    echo = createServer({ allowHalfOpen: true }, (c) => c.pipe(c));
    await new Promise<void>((resolve) => echo.listen(echoSock(), resolve));
    try {
      await withInit(echoSock(), async (echoPort) => {
        const data = randomBytes(4 * 1024 * 1024);
        const got = await new Promise<Buffer>((resolve, reject) => {
          const s: Socket = connect({ port: echoPort, host: '127.0.0.1', allowHalfOpen: true });
          const chunks: Buffer[] = [];
          s.on('data', (c: Buffer) => chunks.push(c));
          s.on('end', () => {
            s.end();
            resolve(Buffer.concat(chunks));
          });
          s.on('error', reject);
          s.end(data); // half-close: the echo must still come back in full
        });
        assert.equal(got.length, data.length);
        assert.ok(got.equals(data));

        // The other way round: the server half-closes first and still reads what the client sends afterwards.
        const received = new Promise<string>((resolve) => {
          echo.removeAllListeners('connection');
          echo.on('connection', (c: Socket) => {
            const chunks: Buffer[] = [];
            c.on('data', (b: Buffer) => chunks.push(b));
            c.on('end', () => {
              resolve(Buffer.concat(chunks).toString());
              c.end();
            });
            c.end('hello, then EOF');
          });
        });
        const heard = await new Promise<string>((resolve, reject) => {
          const s = connect({ port: echoPort, host: '127.0.0.1', allowHalfOpen: true });
          const chunks: Buffer[] = [];
          s.on('data', (c: Buffer) => chunks.push(c));
          s.on('end', () => {
            s.end('reply after EOF');
            resolve(Buffer.concat(chunks).toString());
          });
          s.on('error', reject);
        });
        assert.equal(heard, 'hello, then EOF');
        assert.equal(await received, 'reply after EOF');
      });
    } finally {
      echo.close();
    }
  });

  it('a connection to a socket nobody serves is closed, not hung', async () => {
    const gone = join(dir, 'gone.sock');
    const s = createServer();
    await new Promise<void>((resolve) => s.listen(gone, resolve));
    await withInit(gone, async (gonePort) => {
      await new Promise<void>((resolve) => s.close(() => resolve())); // removes the socket file
      const r = await run(['state', 'list'], {
        env: { SVC_BROKER_URL: `http://127.0.0.1:${gonePort}`, SVC_TOKEN: 't' },
      });
      assert.equal(r.code, 1);
      assert.match(text(r.stderr), /closed the connection without an answer/);
    });
  });

  it('exits 0 on SIGTERM, and --ttl ends it too', async () => {
    process.kill(pid, 'SIGTERM');
    const r = await done;
    assert.equal(r.code, 0);
    assert.equal(r.stdout.length, 0);
    const ttl = await (await init(['--ttl', '1'])).result;
    assert.equal(ttl.code, 0);
    assert.ok(ttl.ms >= 900 && ttl.ms < 15_000, `${ttl.ms} ms: not before the TTL`);
  });
});
