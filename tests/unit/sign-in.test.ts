import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Keys } from '../../adapters/keys.js';
import { decodeLogin, encodeLogin, loginTtlMs, type LoginState } from '../../app/login-cookie.js';
import { decideGithub, decideOidc, inviteTokenOf, safeRedirect } from '../../domain/sign-in.js';

const keys = new Keys(Buffer.alloc(32, 7));
const login: LoginState = {
  provider: 'corp',
  state: 's',
  nonce: 'n',
  codeVerifier: 'v',
  redirect: '/jobs',
  exp: 1_000_000 + loginTtlMs,
};

describe('login cookie codec', () => {
  it('reads back what it wrote until it expires', () => {
    const value = encodeLogin(keys, login);
    assert.deepEqual(decodeLogin(keys, value, 1_000_000), login);
    assert.deepEqual(decodeLogin(keys, value, login.exp - 1), login);
    assert.equal(decodeLogin(keys, value, login.exp), null);
    assert.equal(decodeLogin(keys, value, login.exp + 60_000), null);
  });

  it('refuses another key, a changed payload, a session-kind signature and malformed values', () => {
    const value = encodeLogin(keys, login);
    assert.equal(decodeLogin(new Keys(Buffer.alloc(32, 8)), value, 0), null);
    const [payload, sig] = value.split('.') as [string, string];
    const changed = Buffer.from(JSON.stringify({ ...login, exp: login.exp * 2 })).toString('base64url');
    assert.equal(decodeLogin(keys, `${changed}.${sig}`, 0), null);
    assert.equal(decodeLogin(keys, `${payload}.${keys.sign('cookie', `session.${payload}`)}`, 0), null);
    const noFields = Buffer.from('{"exp":99999999999999}').toString('base64url');
    assert.equal(decodeLogin(keys, `${noFields}.${keys.sign('cookie', `login.${noFields}`)}`, 0), null);
    const notJson = Buffer.from('nope').toString('base64url');
    assert.equal(decodeLogin(keys, `${notJson}.${keys.sign('cookie', `login.${notJson}`)}`, 0), null);
    for (const bad of [undefined, '', '.', 'a.b.c', `${value}.x`, 'x'.repeat(5000)])
      assert.equal(decodeLogin(keys, bad, 0), null, String(bad));
  });
});

describe('sign-in rules', () => {
  it('keeps same-origin paths and sends everything else to /', () => {
    for (const ok of ['/', '/jobs', '/jobs/1?tab=runs#x', '/invite/abc']) assert.equal(safeRedirect(ok), ok);
    for (const bad of [
      undefined,
      null,
      '',
      'jobs',
      '//evil.example',
      '/\\evil.example',
      '/a\\b',
      'https://evil.example/',
      'javascript:alert(1)',
      '/a\r\nb',
      '/a\u0000',
      '/a\u007f',
      `/${'a'.repeat(2000)}`,
    ])
      assert.equal(safeRedirect(bad), '/', JSON.stringify(bad));
  });

  it('finds the invite token of an invite redirect only', () => {
    assert.equal(inviteTokenOf('/invite/abc_DEF-1.2'), 'abc_DEF-1.2');
    assert.equal(inviteTokenOf('/invite/'), undefined);
    assert.equal(inviteTokenOf('/invite/a/b'), undefined);
    assert.equal(inviteTokenOf('/jobs'), undefined);
  });

  it('applies OIDC groups: an empty allow list lets everyone in, an admin group lets its members in', () => {
    const cfg = { allowedGroups: ['eng'], adminGroups: ['ops'] };
    assert.deepEqual(decideOidc(cfg, ['eng']), { allowed: true, isAdmin: false });
    assert.deepEqual(decideOidc(cfg, ['ops']), { allowed: true, isAdmin: true });
    assert.deepEqual(decideOidc(cfg, ['sales']), { allowed: false, isAdmin: false });
    assert.deepEqual(decideOidc(cfg, []), { allowed: false, isAdmin: false });
    assert.deepEqual(decideOidc({ allowedGroups: [], adminGroups: [] }, []), { allowed: true, isAdmin: false });
  });

  it('applies GitHub users and organisations without regard to case', () => {
    const cfg = {
      allowedUsers: ['Alice'],
      allowedOrganizations: ['acme'],
      adminUsers: ['root'],
      adminOrganizations: ['Ops'],
    };
    assert.deepEqual(decideGithub(cfg, 'alice', []), { allowed: true, isAdmin: false });
    assert.deepEqual(decideGithub(cfg, 'bob', ['ACME']), { allowed: true, isAdmin: false });
    assert.deepEqual(decideGithub(cfg, 'bob', ['other']), { allowed: false, isAdmin: false });
    assert.deepEqual(decideGithub(cfg, 'Root', []), { allowed: true, isAdmin: true });
    assert.deepEqual(decideGithub(cfg, 'carol', ['ops']), { allowed: true, isAdmin: true });
  });
});
