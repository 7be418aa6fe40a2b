/**
 * Old event payload versions are brought forward on read, never rewritten in the store. Each entry upgrades one
 * type from version `from` to `from + 1`; none are needed yet, the mechanism is here so the first change is cheap.
 */
export interface Upcastable {
  type: string;
  data: unknown;
  metadata: { v?: number };
}

type Upcaster = { type: string; from: number; up: (data: unknown) => unknown };
const upcasters: Upcaster[] = [];

export function upcast<T extends Upcastable>(event: T): T {
  let version = event.metadata.v ?? 1;
  let data = event.data;
  for (;;) {
    const step = upcasters.find((u) => u.type === event.type && u.from === version);
    if (!step) break;
    data = step.up(data);
    version += 1;
  }
  return data === event.data ? event : { ...event, data, metadata: { ...event.metadata, v: version } };
}
