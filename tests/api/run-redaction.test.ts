import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { finishedRun, serverWithFakeModel } from './harness.js';

/**
 * A real run (fake model, real sandbox) that prints a secret, and its own run token, in the forms a script would:
 * base64 at three alignments, hex, URL and form encoding. What the service stores (timeline, summary, outputs, error)
 * holds none of them (docs/design.md "Redaction of derived forms").
 */
const server = serverWithFakeModel();
const value = 'pa ss/wo rd+key=1234567';

/** Every spelling of `value` that must not survive: the value, base64 cores at each offset, hex, URL forms. */
function forms(v: string): string[] {
  const out = [
    v,
    Buffer.from(v).toString('hex'),
    Buffer.from(v).toString('hex').toUpperCase(),
    encodeURIComponent(v),
    new URLSearchParams({ v }).toString().slice(2),
  ];
  for (const prefix of ['', 'a', 'ab']) {
    const enc = Buffer.from(prefix + v).toString('base64');
    // The characters that carry only the value's bits; 12 of them are plenty to tell a leak.
    const from = Math.ceil((8 * prefix.length) / 6);
    out.push(enc.slice(from, from + 12));
  }
  return out;
}

describe('redaction of derived forms in what a run stores', () => {
  it('redacts base64, hex and URL forms of a secret and of the run token from timeline, summary, outputs and error', async () => {
    const api = server.api;
    const secret = await api.post<{ id: string }>('/api/secrets', { name: 'DERIVED', value });
    assert.equal(secret.status, 201, secret.text);
    const commands = [
      `printf 'a%s' "$MY_SECRET" | base64 -w0; echo`,
      `printf 'ab%s' "$MY_SECRET" | base64 -w0; echo; printf '%s' "$MY_SECRET" | base64 -w0; echo`,
      `printf '%s' "$MY_SECRET" | od -An -tx1 | tr -d ' \\n'; echo`,
      `printf '%s' "$MY_SECRET" | od -An -tx1 | tr -d ' \\n' | tr a-f A-F; echo`,
      `printf '%s' "$MY_SECRET" | sed 's/+/%2B/g; s/ /%20/g; s|/|%2F|g; s/=/%3D/g'; echo`,
      `printf '%s' "$MY_SECRET" | sed 's/+/%2B/g; s/ /+/g; s|/|%2F|g; s/=/%3D/g'; echo`,
      `echo "tok=$SVC_TOKEN"; printf 'x%s' "$SVC_TOKEN" | base64 -w0; echo`,
      `svc output set b64 "$(printf 'a%s' "$MY_SECRET" | base64 -w0)" && svc output set hex "$(printf '%s' "$MY_SECRET" | od -An -tx1 | tr -d ' \\n')"`,
      `svc fail "bad $(printf 'ab%s' "$MY_SECRET" | base64 -w0)"; true`,
    ];
    const job = await api.post<{ id: string }>('/api/jobs', {
      name: 'Derived forms',
      selfImprove: false,
      instruction: commands.map((c) => `Run \`${c}\`.`).join(' '),
    });
    assert.equal(job.status, 201, job.text);
    const mapped = await api.request('PUT', `/api/jobs/${job.body.id}/secrets`, [
      { secretId: secret.body.id, envName: 'MY_SECRET' },
    ]);
    assert.equal(mapped.status, 200, mapped.text);
    const created = await api.post<{ runId: string }>(`/api/jobs/${job.body.id}/runs`, {});
    assert.equal(created.status, 201, created.text);
    const { run, events } = await finishedRun(api, created.body.runId);

    const stored = {
      timeline: JSON.stringify(events),
      summary: String(run.summary ?? ''),
      outputs: JSON.stringify(run.outputs ?? {}),
      error: String(run.error ?? ''),
    };
    assert.ok(stored.timeline.includes('[redacted]'), 'the commands ran and printed something to redact');
    assert.ok(stored.timeline.includes('tok=[redacted]'), 'the run token is redacted like a secret');
    // Base64 keeps the characters that also carry bits of the bytes around the value (here of the leading `a`).
    assert.match(String(run.outputs.b64), /^[A-Za-z0-9+/]{0,2}\[redacted\][A-Za-z0-9+/=]{0,4}$/);
    assert.equal(run.outputs.hex, '[redacted]');
    assert.match(stored.error, /^bad [A-Za-z0-9+/]{0,3}\[redacted\][A-Za-z0-9+/=]{0,4}$/, stored.error);
    for (const [where, text] of Object.entries(stored)) {
      for (const f of forms(value)) assert.ok(!text.includes(f), `${where} holds ${f}`);
    }
  });

  it('redacts the derived forms from a saved playbook', async () => {
    const api = server.api;
    const job = await api.post<{ id: string }>('/api/jobs', {
      name: 'Playbook forms',
      instruction: 'Nothing to run.',
      selfImprove: false,
    });
    const b64 = Buffer.from(`user:${value}`).toString('base64');
    const hex = Buffer.from(value).toString('hex');
    const saved = await api.request('PUT', `/api/jobs/${job.body.id}/playbook`, {
      content: {
        learnings: [{ text: `Basic ${b64}` }, { text: `key ${hex.toUpperCase()}` }],
        setup: `curl "https://x.test/?k=${encodeURIComponent(value)}"`,
      },
    });
    assert.equal(saved.status, 200, saved.text);
    const stored = JSON.stringify((await api.get(`/api/jobs/${job.body.id}/playbook/versions/1`)).body);
    for (const f of forms(value)) assert.ok(!stored.includes(f), `the playbook holds ${f}`);
    assert.ok(stored.includes('key [redacted]'), stored);
  });
});
