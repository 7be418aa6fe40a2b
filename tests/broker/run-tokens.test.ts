import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { dirname, join } from 'node:path';
import { EgressProxy } from '../../broker/egress-proxy.js';
import { serveRun, type RunSockets } from '../../broker/run-channel.js';
import type { RunSession } from '../../broker/run-session.js';
import { FakeClient } from '../../adapters/models/fake.js';
import { runSessionHooks } from '../../server/broker-hooks.js';
import { TimelineWriter } from '../../app/timeline.js';
import { waitFor } from '../wait.js';
import { brokerFixture } from './fixture.js';

/**
 * A run's token works only on that run's own sockets and only while it runs (docs/design.md "One broker socket per
 * run"): two live runs served the way the runner serves them (serveRun), each trying the other's token on its broker
 * and egress proxy sockets, and both after their run ended.
 */
const proxy = new EgressProxy();
const fixture = brokerFixture('run-tokens', { stop: () => proxy.stop() });
const ws = 'ws-tokens';
const price = { in: 0, out: 0, cacheRead: 0, cacheWrite: 0 };

interface LiveRun extends RunSockets {
  session: RunSession;
  token: string;
  jobId: string;
}

async function liveRun(owner: number | null = null, runsDir = join(fixture.dir, 'runs')): Promise<LiveRun> {
  const runId = `run-${randomUUID()}`;
  const jobId = `job-${randomUUID()}`;
  const token = randomUUID();
  const model = { client: new FakeClient(`fake-${runId}`), name: 'fake-model', price };
  const session = fixture.broker.open({
    runId,
    jobId,
    workspaceId: ws,
    token,
    costLimit: 0,
    jobState: fixture.jobState,
    egress: { network: 'allowlist', allowedDomains: [`${jobId}.test.invalid`], allowPrivateNetwork: false },
    hooks: runSessionHooks({
      timeline: new TimelineWriter(fixture.stores.events, runId, ws),
      agentModel: model,
      utilityModel: model,
      agentSpend: () => 0,
    }),
  });
  const sockets = await serveRun(fixture.broker, proxy, session, runsDir, true, owner);
  return { session, token, jobId, ...sockets };
}

type Reach = { status: number; code: string } | { unreachable: string };

function brokerCall(socketPath: string, token: string, method: string, path: string, body?: unknown): Promise<Reach> {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve) => {
    const req = httpRequest(
      {
        socketPath,
        method,
        path,
        agent: false,
        headers: { authorization: `Bearer ${token}`, ...(payload ? { 'content-type': 'application/json' } : {}) },
      },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            code: res.statusCode === 200 ? 'ok' : (JSON.parse(text) as { code: string }).code,
          }),
        );
      },
    );
    req.on('error', (err: NodeJS.ErrnoException) => resolve({ unreachable: err.code ?? err.message }));
    req.end(payload);
  });
}

/** A CONNECT to a name on the target run's own allow-list; 502 (cannot resolve) means the proxy let it through. */
function proxyConnect(socketPath: string, token: string, host: string): Promise<Reach> {
  return new Promise((resolve) => {
    const socket = connect(socketPath);
    let text = '';
    socket.on('data', (c: Buffer) => (text += c.toString()));
    socket.on('error', (err: NodeJS.ErrnoException) => resolve({ unreachable: err.code ?? err.message }));
    socket.on('close', () =>
      resolve({
        status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0),
        code: /"code":"([a-z_]+)"/.exec(text)?.[1] ?? '',
      }),
    );
    const auth = Buffer.from(`svc:${token}`).toString('base64');
    socket.write(`CONNECT ${host}:443 HTTP/1.1\r\nHost: ${host}:443\r\nProxy-Authorization: Basic ${auth}\r\n\r\n`);
  });
}

const refused = (r: Reach) => 'unreachable' in r || r.status === 401 || r.status === 407;

describe('run tokens: bound to their run', () => {
  it('serves each run on sockets of its own, in a directory of its own', async () => {
    const a = await liveRun();
    const b = await liveRun();
    assert.notEqual(a.brokerSocket, b.brokerSocket);
    assert.notEqual(a.proxySocket, b.proxySocket);
    assert.equal(dirname(a.brokerSocket), dirname(a.proxySocket!));
    assert.equal(statSync(dirname(a.brokerSocket)).mode & 0o777, 0o711, 'traversable, not listable');
    a.session.close();
    b.session.close();
  });

  it("refuses run A's token on run B's broker socket, and writes nothing to B", async () => {
    const a = await liveRun();
    const b = await liveRun();
    assert.deepEqual(
      await brokerCall(a.brokerSocket, a.token, 'PUT', '/v1/state/k', { value: 'a' }),
      { status: 200, code: 'ok' },
      'A on its own socket',
    );
    for (const [method, path, body] of [
      ['GET', '/v1/state', undefined],
      ['PUT', '/v1/state/k', { value: 'from A' }],
      ['POST', '/v1/output', { key: 'o', value: 'from A' }],
      ['POST', '/v1/summary', { summary: 'from A' }],
      ['POST', '/v1/fail', { reason: 'from A' }],
    ] as const) {
      assert.deepEqual(
        await brokerCall(b.brokerSocket, a.token, method, path, body),
        { status: 401, code: 'invalid_token' },
        `${method} ${path}`,
      );
    }
    assert.equal(await fixture.jobState.get(ws, b.jobId, 'k'), null, "B's state is untouched");
    assert.deepEqual(b.session.outputs, {});
    assert.equal(b.session.summary, null);
    assert.equal(b.session.failReason, null);
    assert.equal(b.session.calls, 0, 'refused calls are not even recorded on B');
    assert.deepEqual(
      await brokerCall(b.brokerSocket, b.token, 'GET', '/v1/state'),
      { status: 200, code: 'ok' },
      'B still works for B',
    );
    a.session.close();
    b.session.close();
  });

  it("refuses run A's token on run B's egress proxy, so it never unlocks B's allow-list", async () => {
    const a = await liveRun();
    const b = await liveRun();
    const bHost = `${b.jobId}.test.invalid`;
    assert.equal(
      ((await proxyConnect(b.proxySocket!, b.token, bHost)) as { status: number }).status,
      502,
      "B's own token passes B's allow-list (and fails only to resolve)",
    );
    assert.deepEqual(await proxyConnect(b.proxySocket!, a.token, bHost), { status: 407, code: 'invalid_token' });
    assert.deepEqual(
      await proxyConnect(a.proxySocket!, a.token, bHost),
      { status: 403, code: 'forbidden' },
      "A's own proxy holds A's allow-list",
    );
    a.session.close();
    b.session.close();
  });

  it('refuses every token on the socket of no run', async () => {
    const a = await liveRun();
    assert.deepEqual(await brokerCall(fixture.socket, a.token, 'GET', '/v1/state'), {
      status: 401,
      code: 'invalid_token',
    });
    a.session.close();
  });

  it('kills the token and removes the sockets when the run ends, also with a connection still open', async () => {
    const a = await liveRun();
    const b = await liveRun();
    // A tunnel opened while the run executes is cut when it ends.
    const tunnel = connect(a.proxySocket!);
    const cut = new Promise<void>((resolve) => tunnel.on('close', () => resolve()));
    tunnel.on('error', () => undefined);
    await new Promise<void>((resolve) => tunnel.once('connect', () => resolve()));
    a.session.close();
    await cut;
    await waitFor("the run's socket directory to be removed", () => !existsSync(dirname(a.brokerSocket)), {
      intervalMs: 10,
    });
    const after = [
      await brokerCall(a.brokerSocket, a.token, 'GET', '/v1/state'),
      await proxyConnect(a.proxySocket!, a.token, `${a.jobId}.test.invalid`),
      await brokerCall(b.brokerSocket, a.token, 'GET', '/v1/state'),
    ];
    for (const r of after) assert.ok(refused(r), JSON.stringify(r));
    assert.equal(fixture.broker.sessionFor(a.token), null);
    b.session.close();
  });

  it('closes a run whose sockets could not be opened, leaving nothing listening', async () => {
    const model = { client: new FakeClient('fake-bad'), name: 'fake-model', price };
    const session = fixture.broker.open({
      runId: '../escape',
      jobId: 'j',
      workspaceId: ws,
      token: randomUUID(),
      costLimit: 0,
      jobState: fixture.jobState,
      egress: { network: 'none', allowedDomains: null, allowPrivateNetwork: false },
      hooks: runSessionHooks({
        timeline: new TimelineWriter(fixture.stores.events, 'bad', ws),
        agentModel: model,
        utilityModel: model,
        agentSpend: () => 0,
      }),
    });
    await assert.rejects(serveRun(fixture.broker, proxy, session, join(fixture.dir, 'runs'), false), /not a run id/);
    assert.equal(session.isClosed, true);
    assert.equal(existsSync(join(fixture.dir, 'escape')), false);
  });

  it("keeps a run's sockets to the sandbox's own host uid when it has one", async (t) => {
    if (process.getuid?.() !== 0) {
      t.skip('NOT TESTED: giving sockets to another uid needs root, and this test runs as a plain user');
      return;
    }
    const owner = 2_000_001_234;
    const stranger = 2_000_001_235;
    const root = mkdtempSync(join(tmpdir(), 'svc-owned-'));
    chmodSync(root, 0o711);
    try {
      const a = await liveRun(owner, join(root, 'runs'));
      const dir = statSync(dirname(a.brokerSocket));
      assert.deepEqual([dir.uid, dir.mode & 0o777], [owner, 0o700]);
      for (const socket of [a.brokerSocket, a.proxySocket!]) {
        const st = statSync(socket);
        assert.deepEqual([st.uid, st.mode & 0o777], [owner, 0o600], socket);
      }
      // A real process under each uid tries to connect: only the owner gets through.
      const tryAs = (uid: number, socket: string) => {
        const script = `require('net').connect(${JSON.stringify(socket)}).on('connect', () => { console.log('connected'); process.exit(0); }).on('error', (e) => { console.log(e.code); process.exit(0); });`;
        const r = spawnSync(
          'setpriv',
          [`--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', process.execPath, '-e', script],
          { encoding: 'utf8' },
        );
        assert.equal(r.status, 0, r.stderr);
        return r.stdout.trim();
      };
      for (const socket of [a.brokerSocket, a.proxySocket!]) {
        assert.equal(tryAs(owner, socket), 'connected', socket);
        assert.equal(tryAs(stranger, socket), 'EACCES', `another host user cannot reach ${socket}`);
      }
      a.session.close();
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
