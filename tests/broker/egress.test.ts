import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { statSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { join } from 'node:path';
import {
  addressAllowed,
  addressRefusal,
  classifyAddress,
  onAllowList,
  type AddressClass,
  type NetworkRule,
} from '../../adapters/egress/address-guard.js';
import { EgressProxy } from '../../broker/egress-proxy.js';
import type { RunSession } from '../../broker/run-session.js';
import { FakeClient } from '../../adapters/models/fake.js';
import { runSessionHooks } from '../../server/broker-hooks.js';
import { TimelineWriter } from '../../app/timeline.js';
import { brokerFixture } from './fixture.js';

/**
 * The egress proxy (docs/sandbox.md, "The egress proxy") on its own Unix socket, authenticating with sessions opened
 * on a real Broker; and the pure address guard it decides with. Names under `.invalid` never resolve (RFC 6761), so a 502 "could not be
 * resolved" shows that a name got past the allow-list without anything leaving this machine.
 */
/** The proxy socket of the run opened last; a run's own auth goes to its own socket (`socketOf`). */
let proxySocket: string;
const proxySockets = new Map<string, string>();
const socketOf = (auth: string | null) => (auth ? proxySockets.get(auth) : undefined) ?? proxySocket;
const fixture = brokerFixture('egress', { stop: () => proxy.stop() });
const { broker } = fixture;
const proxy = new EgressProxy();
const price = { in: 0, out: 0, cacheRead: 0, cacheWrite: 0 };

interface Run {
  session: RunSession;
  token: string;
  auth: string;
  refusals(): Promise<Array<{ endpoint: string; ok: boolean; error?: string }>>;
}

async function openRun(egress: NetworkRule): Promise<Run> {
  const runId = `run-${randomUUID()}`;
  const token = `tok-${randomUUID()}`;
  const timeline = new TimelineWriter(fixture.stores.events, runId, 'ws-egress');
  const model = { client: new FakeClient(`fake-${runId}`), name: 'fake-model', price };
  const session = broker.open({
    runId,
    jobId: `job-${randomUUID()}`,
    workspaceId: 'ws-egress',
    token,
    costLimit: 0,
    egress,
    jobState: fixture.jobState,
    hooks: runSessionHooks({ timeline, agentModel: model, utilityModel: model, agentSpend: () => 0 }),
  });
  const auth = `Basic ${Buffer.from(`svc:${token}`).toString('base64')}`;
  proxySocket = join(fixture.dir, `${runId}-proxy.sock`);
  await proxy.serve(session, proxySocket);
  proxySockets.set(auth, proxySocket);
  return {
    session,
    token,
    auth,
    async refusals() {
      await timeline.flush();
      const events = await fixture.stores.events.readStream(`timeline-${runId}`);
      return events
        .filter((e) => e.type === 'broker.call')
        .map((e) => (e.data as { payload: { endpoint: string; ok: boolean; error?: string } }).payload);
    },
  };
}

interface ProxyAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** A raw CONNECT over the proxy socket; the proxy answers a refusal and closes. */
function connectThrough(target: string, auth: string | null): Promise<ProxyAnswer> {
  return new Promise((resolve, reject) => {
    const socket = connect(socketOf(auth));
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', reject);
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const [head, ...rest] = text.split('\r\n\r\n');
      const [statusLine, ...lines] = (head ?? '').split('\r\n');
      const headers = Object.fromEntries(
        lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
      );
      resolve({
        status: Number(/^HTTP\/1\.1 (\d{3})/.exec(statusLine ?? '')?.[1] ?? 0),
        headers,
        body: rest.join('\r\n\r\n'),
      });
    });
    socket.write(
      `CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n${auth ? `Proxy-Authorization: ${auth}\r\n` : ''}\r\n`,
    );
  });
}

/** A plain-http request with an absolute URL, as HTTP_PROXY clients send it. */
function getThrough(url: string, auth: string | null): Promise<ProxyAnswer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        socketPath: socketOf(auth),
        method: 'GET',
        path: url,
        agent: false,
        headers: {
          host: URL.canParse(url) ? new URL(url).host : 'svc',
          ...(auth ? { 'proxy-authorization': auth } : {}),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers as Record<string, string>,
            body: Buffer.concat(chunks).toString('utf8'),
          }),
        );
      },
    );
    req.on('error', reject);
    req.end();
  });
}

const message = (a: ProxyAnswer) => (JSON.parse(a.body) as { message: string }).message;
const internet: NetworkRule = { network: 'internet', allowedDomains: null, allowPrivateNetwork: false };

describe('egress proxy: who may use it', () => {
  it('listens on a socket the sandbox user can open', async () => {
    const run = await openRun(internet);
    assert.equal(statSync(socketOf(run.auth)).mode & 0o777, 0o666);
    run.session.close();
  });

  it('answers 407 with a Basic realm without the run token as the password', async () => {
    const run = await openRun(internet);
    const wrong = `Basic ${Buffer.from('svc:not-the-token').toString('base64')}`;
    const asUser = `Basic ${Buffer.from(`${run.token}:`).toString('base64')}`;
    const bearer = `Bearer ${run.token}`;
    for (const auth of [null, wrong, asUser, bearer, 'Basic !!!']) {
      for (const answer of [
        await connectThrough('a.test.invalid:443', auth),
        await getThrough('http://a.test.invalid/', auth),
      ]) {
        assert.equal(answer.status, 407, `${auth}: ${answer.body}`);
        assert.equal(answer.headers['proxy-authenticate'], 'Basic realm="svc"');
        assert.match(message(answer), /run token/);
      }
    }
    assert.deepEqual(await run.refusals(), [], 'a caller without a session leaves no trace on a run');

    const ok = await connectThrough('a.test.invalid:443', run.auth);
    assert.notEqual(ok.status, 407, 'any user name with the token as password');
    run.session.close();
    // The run's proxy socket goes with its session; a request that raced in is refused.
    const gone = (err: NodeJS.ErrnoException) => err.code;
    for (const answer of [
      await connectThrough('a.test.invalid:443', run.auth).catch(gone),
      await getThrough('http://a.test.invalid/', run.auth).catch(gone),
    ]) {
      assert.ok(
        answer === 'ENOENT' || answer === 'ECONNREFUSED' || (typeof answer === 'object' && answer.status === 407),
        `the token dies with the run: ${JSON.stringify(answer)}`,
      );
    }
  });

  it('answers 403 to a job without network access', async () => {
    const run = await openRun({ network: 'none', allowedDomains: ['example.com'], allowPrivateNetwork: true });
    for (const answer of [
      await connectThrough('example.com:443', run.auth),
      await getThrough('http://example.com/', run.auth),
    ]) {
      assert.equal(answer.status, 403);
      assert.equal(message(answer), 'the egress proxy does not serve jobs without network access');
    }
    assert.deepEqual(
      await run.refusals(),
      Array.from({ length: 2 }, () => ({
        endpoint: 'proxy example.com',
        ok: false,
        error: 'the egress proxy does not serve jobs without network access',
      })),
    );
  });
});

describe('egress proxy: targets', () => {
  it('never takes a bare IP address, v4 or bracketed v6, in CONNECT or an absolute URL', async () => {
    const run = await openRun({ network: 'internet', allowedDomains: null, allowPrivateNetwork: true });
    const connects = [
      '1.2.3.4:443',
      '127.0.0.1:80',
      '[::1]:443',
      '[2606:4700:4700::1111]:443',
      '[::ffff:127.0.0.1]:80',
      '127.1:80',
      '2130706433:80',
      '0x7f.0.0.1:80',
    ];
    for (const target of connects) {
      const answer = await connectThrough(target, run.auth);
      assert.equal(answer.status, 403, `${target}: ${answer.body}`);
      assert.match(message(answer), /is an IP address; the egress proxy only connects to host names/);
    }
    for (const url of [
      'http://8.8.8.8/',
      'http://10.0.0.1:8080/x',
      'http://[::1]:8080/',
      'http://[fe80::1]/',
      'http://2130706433/',
    ]) {
      const answer = await getThrough(url, run.auth);
      assert.equal(answer.status, 403, `${url}: ${answer.body}`);
      assert.match(message(answer), /is an IP address/);
    }
    const refusals = await run.refusals();
    assert.equal(refusals.length, connects.length + 5, 'every refusal is on the timeline');
    assert.ok(refusals.every((r) => r.ok === false && /is an IP address/.test(r.error ?? '')));
    assert.deepEqual(
      refusals.slice(0, 3).map((r) => r.endpoint),
      ['proxy 1.2.3.4', 'proxy 127.0.0.1', 'proxy ::1'],
    );
  });

  it('matches the allow-list: exact names, and *.x below x but not x itself', async () => {
    const run = await openRun({
      network: 'allowlist',
      allowedDomains: ['exact.test.invalid', '*.x.test.invalid'],
      allowPrivateNetwork: false,
    });
    const passes = [
      'exact.test.invalid:443',
      'EXACT.Test.Invalid.:443',
      'a.x.test.invalid:443',
      'deep.a.x.test.invalid:8443',
    ];
    for (const target of passes) {
      const answer = await connectThrough(target, run.auth);
      assert.equal(answer.status, 502, `${target} passes the list and fails only to resolve: ${answer.body}`);
      assert.match(message(answer), /could not be resolved/);
    }
    const refused = [
      'x.test.invalid:443',
      'ax.test.invalid:443',
      'sub.exact.test.invalid:443',
      'other.test.invalid:443',
      'exact.test.invalid.evil.invalid:443',
    ];
    for (const target of refused) {
      const answer = await connectThrough(target, run.auth);
      assert.equal(answer.status, 403, `${target}: ${answer.body}`);
      assert.equal(message(answer), `${target.slice(0, target.lastIndexOf(':'))} is not on this job's allow-list`);
    }
    const byUrl = await getThrough('http://x.test.invalid/path', run.auth);
    assert.equal(byUrl.status, 403);
    assert.equal(message(byUrl), "x.test.invalid is not on this job's allow-list");
    assert.equal((await getThrough('http://a.x.test.invalid/path', run.auth)).status, 502);

    const refusals = await run.refusals();
    assert.equal(refusals.length, passes.length + refused.length + 2);
    assert.deepEqual(
      refusals[1],
      { endpoint: 'proxy exact.test.invalid', ok: false, error: refusals[1]!.error },
      'the host is recorded lowercased, without the trailing dot',
    );
    assert.ok(
      refusals.some(
        (r) => r.endpoint === 'proxy x.test.invalid' && r.error === "x.test.invalid is not on this job's allow-list",
      ),
    );
  });

  it('refuses localhost after DNS even when the allow-list names it', async () => {
    for (const allowPrivateNetwork of [false, true]) {
      const run = await openRun({ network: 'allowlist', allowedDomains: ['localhost'], allowPrivateNetwork });
      for (const answer of [
        await connectThrough('localhost:80', run.auth),
        await getThrough('http://localhost:8080/', run.auth),
      ]) {
        assert.equal(answer.status, 403, answer.body);
        assert.equal(message(answer), addressRefusal);
      }
      assert.deepEqual(
        await run.refusals(),
        Array.from({ length: 2 }, () => ({ endpoint: 'proxy localhost', ok: false, error: addressRefusal })),
      );
    }
    const open = await openRun(internet);
    assert.equal(message(await connectThrough('localhost:443', open.auth)), addressRefusal, 'an internet job too');
  });

  it('takes only http:// absolute URLs and CONNECT host:port', async () => {
    const run = await openRun(internet);
    for (const target of ['no-port.test.invalid', 'a.test.invalid:0', 'a.test.invalid:70000', ':443']) {
      assert.equal((await connectThrough(target, run.auth)).status, 400, target);
    }
    assert.equal((await getThrough('/relative', run.auth)).status, 400);
    const ftp = await getThrough('ftp://files.test.invalid/x', run.auth);
    assert.equal(ftp.status, 400);
    assert.match(message(ftp), /only http:\/\/ URLs/);
  });
});

describe('address guard', () => {
  it('classifies loopback, private, link-local, metadata and public addresses', () => {
    const table: Array<[string, AddressClass]> = [
      ['127.0.0.1', 'never'],
      ['127.255.255.254', 'never'],
      ['0.0.0.0', 'never'],
      ['224.0.0.1', 'never'],
      ['255.255.255.255', 'never'],
      ['169.254.169.254', 'never'],
      ['169.254.0.1', 'never'],
      ['100.100.100.200', 'never'],
      ['10.0.0.1', 'private'],
      ['10.255.255.255', 'private'],
      ['11.0.0.1', 'public'],
      ['172.16.0.1', 'private'],
      ['172.31.255.255', 'private'],
      ['172.15.255.255', 'public'],
      ['172.32.0.0', 'public'],
      ['192.168.0.1', 'private'],
      ['192.168.255.255', 'private'],
      ['192.169.0.1', 'public'],
      ['100.64.0.1', 'private'],
      ['100.127.255.255', 'private'],
      ['100.100.100.201', 'private'],
      ['100.63.255.255', 'public'],
      ['100.128.0.0', 'public'],
      ['::1', 'never'],
      ['::', 'never'],
      ['fe80::1', 'never'],
      ['fe80::1%eth0', 'never'],
      ['febf::1', 'never'],
      ['ff02::1', 'never'],
      ['fc00::1', 'private'],
      ['fd12:3456::1', 'private'],
      ['::ffff:127.0.0.1', 'never'],
      ['::ffff:7f00:1', 'never'],
      ['::ffff:169.254.169.254', 'never'],
      ['::ffff:10.0.0.1', 'private'],
      ['::ffff:8.8.8.8', 'public'],
      ['8.8.8.8', 'public'],
      ['1.1.1.1', 'public'],
      ['2606:4700:4700::1111', 'public'],
      ['2a00:1450:4001:80b::200e', 'public'],
      ['not-an-address', 'never'],
      ['', 'never'],
    ];
    for (const [address, expected] of table) assert.equal(classifyAddress(address), expected, address);
  });

  it('lets private addresses through only with allowPrivateNetwork, and loopback or metadata never', () => {
    for (const a of ['10.1.2.3', '172.20.0.5', '192.168.1.1', '100.64.0.1', 'fc00::1', '::ffff:192.168.1.1']) {
      assert.equal(addressAllowed(a, false), false, a);
      assert.equal(addressAllowed(a, true), true, a);
    }
    for (const a of [
      '127.0.0.1',
      '::1',
      '169.254.169.254',
      '100.100.100.200',
      'fe80::1',
      '::ffff:127.0.0.1',
      '0.0.0.0',
      '::',
    ]) {
      assert.equal(addressAllowed(a, false), false, a);
      assert.equal(addressAllowed(a, true), false, `${a} even with the private network allowed`);
    }
    for (const a of ['8.8.8.8', '2606:4700:4700::1111']) {
      assert.equal(addressAllowed(a, false), true, a);
      assert.equal(addressAllowed(a, true), true, a);
    }
  });

  it('matches allow-list entries exactly, and *.x.com below x.com only', () => {
    const list = ['api.example.com', '*.x.com'];
    const table: Array<[string, boolean]> = [
      ['api.example.com', true],
      ['API.Example.COM', true],
      ['api.example.com.', true],
      ['example.com', false],
      ['v2.api.example.com', false],
      ['a.x.com', true],
      ['b.a.x.com', true],
      ['A.X.COM.', true],
      ['x.com', false],
      ['ax.com', false],
      ['x.com.evil.net', false],
      ['.x.com', false],
    ];
    for (const [host, expected] of table) assert.equal(onAllowList(host, list), expected, host);
    assert.equal(onAllowList('a.x.com', []), false, 'an empty list allows nothing');
    assert.equal(onAllowList('1.2.3.4', ['1.2.3.4']), false, 'IP literals never match');
    assert.equal(onAllowList('::1', ['::1']), false);
    assert.equal(onAllowList('[::1]', ['[::1]']), false);
  });
});
