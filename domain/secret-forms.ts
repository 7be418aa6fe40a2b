/**
 * The spellings of a secret value a run's output may hold besides the value itself (docs/design.md "Redaction of
 * derived forms"). `exact` forms match case for case; `caseless` forms (hex) match in any mix of upper and lower case.
 */
export interface SecretForms {
  exact: string[];
  caseless: string[];
}

/**
 * The base64 characters that depend only on the value's bytes, when the value starts at byte offset 0, 1 or 2 of a
 * stream (mod 3). Characters that also carry bits of the bytes before or after the value differ from stream to
 * stream and are left out, so each form matches wherever the value sits in what was encoded.
 */
function base64Cores(bytes: Buffer): string[] {
  const cores: string[] = [];
  for (let offset = 0; offset < 3; offset++) {
    const encoded = Buffer.concat([Buffer.alloc(offset), bytes])
      .toString('base64')
      .replace(/=+$/, '');
    const first = Math.ceil((8 * offset) / 6);
    const last = Math.floor((8 * (offset + bytes.length)) / 6);
    const core = encoded.slice(first, last);
    cores.push(core, core.replace(/\+/g, '-').replace(/\//g, '_'));
  }
  return cores;
}

/** Percent-escapes with lowercase hex digits, as some encoders write them. */
const lowerEscapes = (s: string) => s.replace(/%[0-9A-F]{2}/g, (e) => e.toLowerCase());

export function secretForms(value: string): SecretForms {
  const exact = new Set<string>([value]);
  // Timeline payloads hold JSON: a value with quotes, backslashes or newlines appears escaped there.
  exact.add(JSON.stringify(value).slice(1, -1));
  const bytes = Buffer.from(value, 'utf8');
  for (const core of base64Cores(bytes)) exact.add(core);
  const uri = encodeURIComponent(value);
  // Form encoding (application/x-www-form-urlencoded): spaces as `+`, and a few characters escaped that
  // encodeURIComponent keeps.
  const form = new URLSearchParams({ v: value }).toString().slice(2);
  for (const e of [uri, form, encodeURI(value)]) {
    exact.add(e);
    exact.add(lowerEscapes(e));
  }
  return { exact: [...exact], caseless: [bytes.toString('hex')] };
}
