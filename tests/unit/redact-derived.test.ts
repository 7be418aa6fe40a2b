import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { redact, redactedMarker, redactor } from '../../domain/redact.js';
import { Matcher } from '../../domain/string-matcher.js';

/**
 * The redactor over the forms a script prints a secret in (docs/design.md "Redaction of derived forms"): base64 at
 * every alignment, hex in any case, URL and form encoding, JSON escapes; overlaps, and its cost on large input.
 */
const secret = 'sk-live_9f8e7d6c5b4a/3+2=1 ~*!';
const clean = redactor([secret]);
const b64 = (s: string | Buffer) => Buffer.from(s).toString('base64');

/** Fails with the text when any 12-character piece of the secret's bytes can still be decoded from it. */
function assertNoTrace(text: string, label: string): void {
  assert.ok(!text.includes(secret), `${label}: the value itself is left in ${text}`);
  for (const decoded of [
    Buffer.from(text.replace(/[^A-Za-z0-9+/]/g, ''), 'base64').toString('latin1'),
    Buffer.from(text.replace(/[^A-Za-z0-9_-]/g, ''), 'base64url').toString('latin1'),
  ]) {
    for (let i = 0; i + 12 <= secret.length; i++)
      assert.ok(
        !decoded.includes(secret.slice(i, i + 12)),
        `${label}: ${secret.slice(i, i + 12)} decodes from ${text}`,
      );
  }
}

describe('redaction of derived forms', () => {
  it('redacts base64 of the secret at each of the three alignments, standard and URL-safe', () => {
    for (const prefix of ['', 'a', 'ab', 'abc', 'user:', 'Authorization: Basic ']) {
      const stream = Buffer.from(`${prefix}${secret}-and-some-tail`);
      for (const encoded of [stream.toString('base64'), stream.toString('base64url')]) {
        const out = clean(`token=${encoded};`);
        assert.ok(out.includes(redactedMarker), `prefix ${JSON.stringify(prefix)}: ${out}`);
        assertNoTrace(out, `prefix ${JSON.stringify(prefix)}`);
      }
    }
  });

  it('redacts hex in lower, upper and mixed case', () => {
    const hex = Buffer.from(secret).toString('hex');
    const mixed = [...hex].map((c, i) => (i % 3 === 0 ? c.toUpperCase() : c)).join('');
    for (const h of [hex, hex.toUpperCase(), mixed]) {
      const out = clean(`0x${h}00`);
      assert.equal(out, `0x${redactedMarker}00`, h);
    }
  });

  it('redacts encodeURIComponent, encodeURI, form encoding and lowercase escapes', () => {
    const spaced = 'pass word/with?reserved&chars=1';
    const r = redactor([spaced]);
    const forms = [
      encodeURIComponent(spaced),
      encodeURI(spaced),
      new URLSearchParams({ p: spaced }).toString().slice(2),
      encodeURIComponent(spaced).replace(/%[0-9A-F]{2}/g, (e) => e.toLowerCase()),
    ];
    for (const f of forms) {
      const out = r(`https://example.test/cb?p=${f}&next=1`);
      assert.equal(out, `https://example.test/cb?p=${redactedMarker}&next=1`, f);
    }
  });

  it('still redacts the value and its JSON-escaped form', () => {
    const pem = '-----BEGIN KEY-----\nabc"def\\ghi\n-----END KEY-----';
    const r = redactor([pem]);
    assert.equal(r(`key: ${pem}!`), `key: ${redactedMarker}!`);
    assert.equal(r(JSON.stringify({ k: pem })), `{"k":"${redactedMarker}"}`);
  });

  it('joins overlapping matches into one marker, so no part of either value shows', () => {
    const r = redactor(['abcdef', 'defghi']);
    assert.equal(r('x abcdefghi y'), `x ${redactedMarker} y`);
    assert.equal(r('abcdefabcdef'), `${redactedMarker}${redactedMarker}`);
    assert.equal(redact('one secret1234 two', ['secret1234', 'cret']), `one ${redactedMarker} two`);
  });

  it('leaves values shorter than 4 characters and unrelated text alone', () => {
    assert.equal(redact('abc abc', ['abc']), 'abc abc');
    const text = 'nothing here: aGVsbG8= 68656c6c6f hello%20world';
    assert.equal(clean(text), text);
  });

  it('finds a secret at any offset of any base64 stream (property)', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 20 }),
        fc.uint8Array({ maxLength: 20 }),
        fc.string({ minLength: 8, maxLength: 40 }),
        (before, after, value) => {
          const encoded = b64(Buffer.concat([Buffer.from(before), Buffer.from(value), Buffer.from(after)]));
          const out = redactor([value])(encoded);
          // What is left beside the marker decodes to at most a few bits of the value's first and last byte.
          return out.includes(redactedMarker);
        },
      ),
      { seed: 1010, numRuns: 300 },
    );
  });

  it('takes time linear in the text, also for adversarial input and many secrets', () => {
    const secrets = Array.from({ length: 200 }, (_, i) => `${'a'.repeat(30)}${i.toString().padStart(4, '0')}`);
    const r = redactor(secrets);
    const time = (n: number) => {
      const text = 'a'.repeat(n);
      const t0 = performance.now();
      r(text);
      return performance.now() - t0;
    };
    time(50_000); // warm up
    // The fastest of three of each, so a pause of a loaded machine in one measurement is not taken for the cost.
    const fastest = (n: number) => Math.min(time(n), time(n), time(n));
    const small = Math.max(fastest(200_000), 1);
    const large = fastest(2_000_000);
    assert.ok(large < small * 30, `10x the text took ${(large / small).toFixed(1)}x the time (${large.toFixed(0)} ms)`);
    assert.ok(large < 2_000, `2 MB took ${large.toFixed(0)} ms`);
  });

  it('matcher: reports the longest match ending at each position, across fail links', () => {
    const m = new Matcher(['he', 'she', 'hers', 'his'], false);
    assert.deepEqual(m.spans('ushers'), [
      [1, 4],
      [2, 6],
    ]);
    assert.deepEqual(new Matcher(['ABC'], true).spans('xaBcx'), [[1, 4]]);
    assert.deepEqual(new Matcher(['ABC'], false).spans('xaBcx'), []);
  });
});
