import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { startTestServer } from '../api/harness.js';

/*
 * compose.yaml cannot be started here (no images can be pulled): what can be checked without it is. Every role runs,
 * in the replicas the scaled design asks for; every SVC_* variable it sets is one the service reads; the runners get
 * a sandbox backend; the build targets exist; the api healthcheck asks a route the service answers.
 */

interface Service {
  build?: { context: string; target?: string };
  image?: string;
  command?: string[];
  environment?: Record<string, string>;
  deploy?: { replicas?: number };
  ports?: string[];
  privileged?: boolean;
  healthcheck?: { test: string[] };
}

const compose = parse(readFileSync('compose.yaml', 'utf8'), { merge: true }) as { services: Record<string, Service> };
const svcServices = Object.entries(compose.services).filter(([, s]) => s.build !== undefined);
const rolesOf = (s: Service) => {
  const i = s.command?.indexOf('--roles') ?? -1;
  return i >= 0 ? s.command![i + 1]!.split(',') : ['api', 'runner', 'scheduler', 'projector'];
};
const replicas = (role: string) =>
  svcServices.filter(([, s]) => rolesOf(s).includes(role)).reduce((n, [, s]) => n + (s.deploy?.replicas ?? 1), 0);

/** Every SVC_* name the service's own sources mention (tests, benchmarks and the web app aside). */
function variablesRead(dir = '.'): Set<string> {
  const out = new Set<string>();
  for (const name of readdirSync(dir)) {
    if (['node_modules', 'dist', 'web', 'tests', 'bench', 'demo', '.git'].includes(name)) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) for (const v of variablesRead(path)) out.add(v);
    else if (name.endsWith('.ts'))
      for (const m of readFileSync(path, 'utf8').matchAll(/SVC_[A-Z0-9_]+/g)) out.add(m[0]);
  }
  return out;
}

describe('compose.yaml', () => {
  it('runs every role, in the replicas of the scaled design', () => {
    assert.ok(replicas('api') >= 2, 'two api replicas');
    assert.ok(replicas('runner') >= 2, 'two runners');
    assert.equal(replicas('scheduler'), 1, 'one scheduler');
    assert.ok(replicas('projector') >= 2, 'a projector and a standby');
    for (const [name, s] of svcServices)
      for (const role of rolesOf(s)) assert.ok(['api', 'runner', 'scheduler', 'projector'].includes(role), name);
    // Each api replica gets a host port of its own.
    for (const [name, s] of svcServices.filter(([, x]) => rolesOf(x).includes('api'))) {
      const range = /:(\d+)(?:-(\d+))?:8080$/.exec(s.ports?.[0] ?? '');
      assert.ok(range, `${name} publishes its port`);
      const count = range[2] ? Number(range[2]) - Number(range[1]) + 1 : 1;
      assert.ok(count >= (s.deploy?.replicas ?? 1), `${name}: ${count} ports for ${s.deploy?.replicas} replicas`);
    }
  });

  it('sets only variables the service reads, the scaled stores and the master key on every process', () => {
    const known = variablesRead();
    assert.ok(known.has('SVC_MONGO_URL') && known.has('SVC_MAX_RUNS'), 'the scan finds what the service reads');
    for (const [name, s] of svcServices) {
      const env = s.environment ?? {};
      for (const key of Object.keys(env).filter((k) => k.startsWith('SVC_')))
        assert.ok(known.has(key), `${name} sets ${key}, which the service never reads`);
      assert.ok(env.SVC_EVENTSTORE_URL && env.SVC_MONGO_URL, `${name} is on EventStoreDB and MongoDB`);
      assert.match(env.SVC_MASTER_KEY ?? '', /\$\{SVC_MASTER_KEY:\?/, `${name} refuses to start without a master key`);
    }
  });

  it('gives the runners a sandbox backend and builds targets the Dockerfile has', () => {
    const targets = [...readFileSync('Dockerfile', 'utf8').matchAll(/^FROM \S+ AS (\S+)$/gm)].map((m) => m[1]);
    for (const [name, s] of svcServices) {
      assert.ok(targets.includes(s.build!.target!), `${name} builds the Dockerfile's ${s.build!.target} stage`);
      if (!rolesOf(s).includes('runner')) continue;
      assert.equal(s.environment?.SVC_SANDBOX, 'bwrap', `${name}: runs need a backend`);
      assert.equal(s.privileged, true, `${name}: bwrap in a container needs it privileged`);
      assert.equal(s.build!.target, 'runner', `${name}: the image with bubblewrap and the root filesystem`);
    }
  });

  it('checks the health of the api on a route the service answers', async () => {
    const paths = svcServices
      .filter(([, s]) => rolesOf(s).includes('api'))
      .map(([name, s]) => {
        const url = /http:\/\/127\.0\.0\.1:8080(\/[^'"]*)'/.exec(s.healthcheck?.test.join(' ') ?? '');
        assert.ok(url, `${name} has an HTTP healthcheck`);
        return url[1]!;
      });
    const t = await startTestServer({ SVC_ROLES: 'api,projector' });
    try {
      for (const path of paths) assert.equal((await fetch(t.url + path)).status, 200, path);
    } finally {
      await t.stop();
    }
  });
});
