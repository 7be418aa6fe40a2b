import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { adminSession, Client, startTestServer, type TestServer } from './harness.js';

/**
 * Requests refused before they reach a route still answer in the API's error format, with a request id
 * (docs/security.md, "Requests: validation cost, bounds, access"). Found by tests/api/fuzz.test.ts.
 */
let t: TestServer;
let admin: Client;

before(async () => {
  t = await startTestServer({ SVC_ROLES: 'api,projector' });
  admin = await adminSession(t);
});
after(async () => t?.stop());

function assertErrorBody(res: { status: number; body: any; headers: Headers }, status: number, code: string): void {
  assert.equal(res.status, status, JSON.stringify(res.body).slice(0, 300));
  assert.equal(res.body.code, code);
  assert.equal(typeof res.body.message, 'string');
  assert.equal(res.body.requestId, res.headers.get('x-request-id'));
}

/** Writes raw bytes and answers the status line and body of what comes back. */
function raw(text: string): Promise<string> {
  const url = new URL(t.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname, () => socket.write(text));
    let out = '';
    socket.on('data', (d: Buffer) => (out += d.toString()));
    socket.on('end', () => resolve(out));
    socket.on('error', reject);
  });
}

describe('protocol errors', () => {
  it('answers a path parameter over 4096 characters with validation_failed', async () => {
    assertErrorBody(await admin.request('PUT', `/api/jobs/${'a'.repeat(5_000)}/secrets`, []), 400, 'validation_failed');
  });

  it('answers a broken percent-encoding in the path with validation_failed', async () => {
    assertErrorBody(await admin.get('/api/jobs/%E0%A4%A'), 400, 'validation_failed');
  });

  it('answers a request line and headers over 16 KiB with 431 request_too_large', async () => {
    assertErrorBody(await admin.get(`/api/jobs?search=${'x'.repeat(20_000)}`), 431, 'request_too_large');
  });

  it('answers bytes that are not HTTP with 400 invalid_request', async () => {
    const answer = await raw('NOT HTTP AT ALL\r\n\r\n');
    assert.match(answer, /^HTTP\/1\.1 400 /);
    const body = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) as { code: string; requestId: string };
    assert.equal(body.code, 'invalid_request');
    assert.match(answer, new RegExp(`X-Request-ID: ${body.requestId}`));
  });
});
