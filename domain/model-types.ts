/** A model's price and capabilities, as provider events store them (docs/events.md); `schemas/provider.ts` proves
 * the API carries the same shapes. */

/** micro-USD per 1M tokens: integers, so cost sums stay exact. */
export interface Price {
  in: number;
  out: number;
  cacheRead: number;
  cacheWrite: number;
}

export interface Caps {
  tools: boolean;
  parallelTools: boolean;
  reasoning: boolean;
  jsonSchema: boolean;
  promptCache: boolean;
  vision: boolean;
  /** Context window in tokens. */
  context: number;
}
