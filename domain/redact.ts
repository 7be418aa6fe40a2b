/**
 * Redaction of secret values from what a run stores (command output, timeline payloads, summaries, outputs,
 * playbooks). Pure: the host opens the values, this only rewrites text.
 *
 * Every value of 4 characters or more is replaced by `[redacted]`, longest first (so a value that contains another
 * is not left half visible). The marker names no secret: the values reach the run as a plain list, and the name of a
 * mapped variable is already in the job's configuration. `***` was not chosen because it is ordinary Markdown.
 * Shorter values are left alone: replacing every `abc` of a log would destroy it and hide nothing worth hiding.
 *
 * A value is also matched in its JSON-escaped form (quotes, backslashes, newlines as `\"`, `\\`, `\n`), because
 * timeline payloads are redacted as serialized JSON: a PEM key would otherwise pass through escaped.
 */
export const redactedMarker = '[redacted]';
export const minRedactedLength = 4;

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** A redactor over a fixed set of values, sorted once; use it for the many strings of one run. */
export function redactor(values: readonly string[]): (text: string) => string {
  const forms = new Set<string>();
  for (const v of values) {
    if (v.length < minRedactedLength) continue;
    forms.add(v);
    const escaped = JSON.stringify(v).slice(1, -1);
    if (escaped !== v) forms.add(escaped);
  }
  if (forms.size === 0) return (text) => text;
  // One pass, longest alternative first: the longest value wins where values overlap, and a marker already
  // written is never matched again by a short value that happens to occur inside it.
  const pattern = new RegExp([...forms].sort((a, b) => b.length - a.length).map(escapeRegExp).join('|'), 'g');
  return (text) => text.replace(pattern, redactedMarker);
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
