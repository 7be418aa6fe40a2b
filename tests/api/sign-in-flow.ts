import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Writes a configuration file for a test server and answers its path. */
export function configFile(yaml: string): string {
  const file = join(mkdtempSync(join(tmpdir(), 'svc-config-')), 'svc.yaml');
  writeFileSync(file, yaml);
  return file;
}

/** The value of a cookie set by a response, or undefined when it sets none of that name. */
export function setCookie(res: Response, name: string): string | undefined {
  for (const c of res.headers.getSetCookie()) {
    const [pair] = c.split(';');
    const eq = pair!.indexOf('=');
    if (pair!.slice(0, eq) === name) return pair!.slice(eq + 1);
  }
  return undefined;
}

export interface Started {
  /** Where the service sent the browser: the provider's authorization URL, or a refusal on the login page. */
  location: string;
  /** The `svc_login` cookie it set, if any. */
  loginCookie: string | undefined;
  res: Response;
}

/** `GET /api/auth/login/<provider>` as a browser sends it. */
export async function startLogin(base: string, provider: string, redirect?: string): Promise<Started> {
  const q = redirect === undefined ? '' : `?redirect=${encodeURIComponent(redirect)}`;
  const res = await fetch(`${base}/api/auth/login/${provider}${q}`, { redirect: 'manual' });
  await res.arrayBuffer();
  assert.equal(res.status, 302, `login start answered ${res.status}`);
  return { location: res.headers.get('location') ?? '', loginCookie: setCookie(res, 'svc_login'), res };
}

export interface Finished {
  /** Where the callback sent the browser. */
  location: string;
  /** `svc_session=...` when a session was set. */
  session: string | undefined;
  res: Response;
}

/** The provider's redirect back to the service, carrying (or not) a login cookie. */
export async function callback(callbackUrl: string, loginCookie: string | undefined): Promise<Finished> {
  const res = await fetch(callbackUrl, {
    redirect: 'manual',
    headers: loginCookie === undefined ? {} : { cookie: `svc_login=${loginCookie}` },
  });
  await res.arrayBuffer();
  assert.equal(res.status, 302, `callback answered ${res.status}`);
  const session = setCookie(res, 'svc_session');
  return { location: res.headers.get('location') ?? '', session: session ? `svc_session=${session}` : undefined, res };
}
