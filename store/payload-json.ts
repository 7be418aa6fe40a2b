/**
 * The JSON text of event payloads, made once on the way to the store: the blob-store wrapper measures each payload
 * by its text, and the SQLite store writes that same text instead of serialising it again (docs/performance.md, "Job
 * creations through the API: CPU per creation"). Kept by payload object, so it goes with the payload.
 */
const known = new WeakMap<object, string>();

/** The payload as JSON text: the text made on the way to this store when there is one. */
export function payloadJson(data: unknown): string {
  if (typeof data === 'object' && data !== null) {
    // Taken, not kept: the text bridges one hand-over, so a payload changed and appended again is serialised again.
    const text = known.get(data);
    if (text !== undefined) {
      known.delete(data);
      return text;
    }
  }
  return JSON.stringify(data);
}

/** Serialises a payload and remembers the text for the store it is handed to next. */
export function serialisePayload(data: unknown): string | undefined {
  const text = JSON.stringify(data) as string | undefined;
  if (text !== undefined && typeof data === 'object' && data !== null) known.set(data, text);
  return text;
}
