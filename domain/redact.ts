import { secretForms } from './secret-forms.js';
import { Matcher } from './string-matcher.js';

/**
 * Redaction of secret values from what a run stores (command output, timeline payloads, summaries, outputs,
 * playbooks). Pure: the host opens the values, this only rewrites text.
 *
 * Every value of 4 characters or more is replaced by `[redacted]`, and so are the forms a script would print it in
 * (JSON-escaped, base64 at each of its three alignments, hex, URL and form encoding: domain/secret-forms.ts). The
 * marker names no secret: the values reach the run as a plain list, and the name of a mapped variable is already in
 * the job's configuration. `***` was not chosen because it is ordinary Markdown. Shorter values are left alone:
 * replacing every `abc` of a log would destroy it and hide nothing worth hiding.
 *
 * Where matches overlap (a value inside another, two values sharing characters) the whole covered stretch becomes
 * one marker, so no part of either is left visible. Matching is one linear pass over the text, with the forms
 * compiled once per redactor (docs/design.md "Redaction of derived forms").
 */
export const redactedMarker = '[redacted]';
export const minRedactedLength = 4;

/** A redactor over a fixed set of values, compiled once; use it for the many strings of one run. */
export function redactor(values: readonly string[]): (text: string) => string {
  const exact = new Set<string>();
  const folded = new Set<string>();
  for (const v of values) {
    if (v.length < minRedactedLength) continue;
    const forms = secretForms(v);
    for (const f of forms.exact) if (f.length >= minRedactedLength) exact.add(f);
    for (const f of forms.caseless) if (f.length >= minRedactedLength) folded.add(f);
  }
  if (exact.size === 0 && folded.size === 0) return (text) => text;
  const matchers = [new Matcher([...exact], false), new Matcher([...folded], true)].filter((m) => !m.empty);
  return (text) => {
    let spans: Array<[number, number]> = [];
    for (const m of matchers) spans = spans.concat(m.spans(text));
    if (spans.length === 0) return text;
    spans.sort((a, b) => a[0] - b[0]);
    let out = '';
    let at = 0;
    let i = 0;
    while (i < spans.length) {
      const start = spans[i]![0];
      let end = spans[i]![1];
      // Spans that overlap the current one join it: one marker for the stretch.
      while (++i < spans.length && spans[i]![0] < end) end = Math.max(end, spans[i]![1]);
      out += text.slice(at, start) + redactedMarker;
      at = end;
    }
    return out + text.slice(at);
  };
}

/** `text` with every secret value of `values` replaced (see above). */
export function redact(text: string, values: readonly string[]): string {
  return redactor(values)(text);
}

/**
 * A JSON value with every string (keys too) passed through `redact`. Walking the value, not its serialized text,
 * keeps the result valid JSON whatever characters a secret holds.
 */
export function redactValue(value: unknown, redact: (text: string) => string): unknown {
  if (typeof value === 'string') return redact(value);
  if (Array.isArray(value)) return value.map((v) => redactValue(v, redact));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [redact(k), redactValue(v, redact)]));
  }
  return value;
}
