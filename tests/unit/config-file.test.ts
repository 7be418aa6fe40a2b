import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigFileError, parseConfigFile } from '../../app/config-file.js';
import { loadConfig } from '../../app/config.js';

/** The problems the file is refused with (fails when it is accepted). */
function problems(source: string, env: NodeJS.ProcessEnv = {}): string[] {
  try {
    parseConfigFile(source, 'svc.yaml', env);
  } catch (err) {
    assert.ok(err instanceof ConfigFileError, String(err));
    assert.match(err.message, /^invalid configuration file svc\.yaml:\n {2}/);
    return err.problems;
  }
  assert.fail('the file was accepted');
}

const valid = `
auth:
  providers:
    corp:
      type: oidc
      name: Corp SSO
      primary: true
      issuer: https://id.example.com/
      clientId: svc
      clientSecret: "{{env:CORP_SECRET}}"
      allowedGroups: [engineering]
      adminGroups: [ops]
    github:
      type: github
      clientId: Iv1.abc
      clientSecret: "{{env:GH_SECRET}}"
      allowedOrganizations: [acme]
workspaces:
  enabled: true
`;

describe('configuration file', () => {
  it('reads providers, fills defaults and substitutes environment variables', () => {
    const cfg = parseConfigFile(valid, 'svc.yaml', { CORP_SECRET: 's3cret', GH_SECRET: 'gh' });
    assert.equal(cfg.workspacesEnabled, true);
    const [corp, gh] = cfg.providers;
    assert.deepEqual(corp, {
      id: 'corp',
      type: 'oidc',
      name: 'Corp SSO',
      primary: true,
      icon: null,
      clientId: 'svc',
      issuer: 'https://id.example.com',
      clientSecret: 's3cret',
      scopes: ['openid', 'profile', 'email', 'groups'],
      allowedGroups: ['engineering'],
      adminGroups: ['ops'],
    });
    assert.equal(gh?.type, 'github');
    assert.equal(gh?.type === 'github' && gh.baseUrl, 'https://github.com');
    assert.equal(gh?.type === 'github' && gh.apiUrl, 'https://api.github.com');
    assert.equal(gh?.name, 'GitHub');
    assert.equal(gh?.clientSecret, 'gh');
  });

  it('names the key and the variable when an environment variable is missing', () => {
    assert.deepEqual(problems(valid, { GH_SECRET: 'gh' }), [
      'auth.providers.corp.clientSecret: environment variable CORP_SECRET is not set',
    ]);
  });

  it('names an unknown key, a wrong type and a bad URL', () => {
    const got = problems(`
auth:
  providers:
    corp:
      type: oidc
      issuer: http://id.example.com
      clientId: svc
      allowedGroup: [x]
workspaces:
  enabled: "yes"
`);
    assert.ok(got.includes('auth.providers.corp.issuer: must be an https URL'), got.join('\n'));
    assert.ok(got.includes('auth.providers.corp.allowedGroup: is not a known key'), got.join('\n'));
    assert.ok(
      got.some((p) => p.startsWith('workspaces.enabled: ')),
      got.join('\n'),
    );
    assert.deepEqual(problems('server:\n  port: 1\n'), ['server: is not a known key']);
  });

  it('accepts http only for a loopback issuer', () => {
    const cfg = parseConfigFile(
      'auth:\n  providers:\n    local:\n      type: oidc\n      issuer: http://127.0.0.1:9000\n      clientId: svc\n',
      'svc.yaml',
      {},
    );
    assert.equal(cfg.providers[0]?.type === 'oidc' && cfg.providers[0].issuer, 'http://127.0.0.1:9000');
  });

  it('refuses a GitHub provider that lists nobody', () => {
    const got = problems(
      'auth:\n  providers:\n    gh:\n      type: github\n      clientId: a\n      clientSecret: b\n      allowedUsers: []\n',
    );
    assert.equal(got.length, 1);
    assert.match(got[0]!, /^auth\.providers\.gh: a GitHub provider must list who may sign in/);
  });

  it('refuses bad provider ids, unknown types, two primaries and an OIDC provider without openid', () => {
    const oidc = (id: string, extra = '') =>
      `    ${id}:\n      type: oidc\n      issuer: https://x.example\n      clientId: c\n${extra}`;
    for (const id of ['Corp', 'a--b', '-a', 'a_b']) {
      assert.deepEqual(problems(`auth:\n  providers:\n${oidc(id)}`), [
        `auth.providers.${id}: provider ids are lowercase letters, digits and single hyphens (at most 64)`,
      ]);
    }
    assert.deepEqual(problems('auth:\n  providers:\n    x:\n      type: saml\n'), [
      'auth.providers.x.type: must be oidc or github',
    ]);
    assert.deepEqual(
      problems(`auth:\n  providers:\n${oidc('a', '      primary: true\n')}${oidc('b', '      primary: true\n')}`),
      ['auth.providers: only one provider may be primary (a, b)'],
    );
    assert.deepEqual(problems(`auth:\n  providers:\n${oidc('a', '      scopes: [profile]\n')}`), [
      'auth.providers.a.scopes: must include openid',
    ]);
  });

  it('refuses text that is not a YAML mapping', () => {
    assert.match(problems('auth: [')[0]!, /^not valid YAML: /);
    assert.deepEqual(problems('- a\n- b\n'), ['must be a YAML mapping']);
  });

  it('is found through SVC_CONFIG; SVC_WORKSPACES_ENABLED overrides the file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-config-'));
    try {
      const file = join(dir, 'svc.yaml');
      writeFileSync(file, 'workspaces:\n  enabled: true\n');
      assert.equal(loadConfig({}, { SVC_CONFIG: file }).workspacesEnabled, true);
      assert.equal(loadConfig({}, { SVC_CONFIG: file, SVC_WORKSPACES_ENABLED: 'false' }).workspacesEnabled, false);
      assert.equal(loadConfig({}, {}).workspacesEnabled, false);
      assert.throws(() => loadConfig({ config: join(dir, 'missing.yaml') }, {}), /missing\.yaml:\n {2}cannot be read/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
