import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Validator } from '@seriousme/openapi-schema-validator';
import YAML from 'yaml';
import { accessTable } from '../../api/access.js';
import { startTestServer, Client, type TestServer } from './harness.js';

const run = promisify(execFile);
let t: TestServer;
let anonymous: Client;

before(async () => {
  t = await startTestServer();
  anonymous = new Client(t.url);
});
after(async () => t.stop());

async function cli(...args: string[]): Promise<string> {
  const { stdout } = await run(process.execPath, ['--import', 'tsx', 'cli/main.ts', ...args], {
    maxBuffer: 16 * 1024 * 1024,
  });
  return stdout;
}

describe('OpenAPI document', () => {
  it('is served without sign-in as JSON, YAML and a docs page', async () => {
    const json = await anonymous.get('/api/openapi.json');
    assert.equal(json.status, 200);
    assert.match(json.headers.get('content-type') ?? '', /application\/json/);
    const yaml = await anonymous.get('/api/openapi.yaml');
    assert.equal(yaml.status, 200);
    assert.deepEqual(YAML.parse(yaml.text), json.body);
    const docs = await anonymous.get('/api/docs');
    assert.equal(docs.status, 200);
    assert.match(docs.headers.get('content-type') ?? '', /text\/html/);
    assert.match(docs.text, /openapi\.json/);
  });

  it('validates as OpenAPI 3.1', async () => {
    const json = await anonymous.get('/api/openapi.json');
    const validator = new Validator();
    const result = await validator.validate(json.body as Parameters<Validator['validate']>[0]);
    assert.deepEqual(result.errors ?? [], []);
    assert.equal(result.valid, true);
    assert.equal(validator.version, '3.1');
  });

  it('names every API record, closed to unknown properties', async () => {
    const doc = (await anonymous.get('/api/openapi.json')).body as {
      components: { schemas: Record<string, { additionalProperties?: boolean; type?: string }> };
    };
    for (const name of [
      'JobDto',
      'JobListDto',
      'LastRun',
      'IOField',
      'LimitOverrides',
      'Limits',
      'ApiTokenDto',
      'FieldError',
      'ErrorBody',
      'JobFields',
      'JobPatchBody',
      'Spec',
      'InfoOutputBody',
      'CreateInputBody',
      'CreateOutputBody',
      'MemberDto',
    ]) {
      const schema = doc.components.schemas[name];
      assert.ok(schema, `${name} is a component`);
      if (schema.type === 'object')
        assert.equal(schema.additionalProperties, false, `${name} has additionalProperties: false`);
    }
  });

  it('documents every route of the access table with its rule', async () => {
    const doc = (await anonymous.get('/api/openapi.json')).body as {
      paths: Record<string, Record<string, { 'x-access': { role: string; session: boolean; token?: boolean } }>>;
    };
    for (const [key, rule] of Object.entries(accessTable)) {
      const [method, url] = key.split(' ') as [string, string];
      if (!url.startsWith('/api/')) continue;
      const op = doc.paths[url.replace(/:([A-Za-z]+)/g, '{$1}')]?.[method.toLowerCase()];
      assert.ok(op, `${key} is documented`);
      assert.deepEqual(op['x-access'], {
        role: rule.access,
        session: rule.session,
        ...(rule.token ? { token: true } : {}),
      });
    }
  });

  it('is printed byte for byte by `svc openapi [--yaml]` without a server', async () => {
    const served = await anonymous.get('/api/openapi.json');
    assert.equal(await cli('openapi'), served.text);
    const servedYaml = await anonymous.get('/api/openapi.yaml');
    assert.equal(await cli('openapi', '--yaml'), servedYaml.text);
  });
});
