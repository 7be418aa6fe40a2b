/**
 * Old event payload versions are brought forward on read, never rewritten in the store. Each entry upgrades one
 * type from version `from` to `from + 1` (docs/events.md, "Changing an event: versions and upcasters").
 */
export interface Upcastable {
  type: string;
  data: unknown;
  metadata: { v?: number };
}

type Upcaster = { type: string; from: number; up: (data: unknown) => unknown };
const upcasters: Upcaster[] = [
  // Version 2 counts the verifier's tokens; a run finished before that reported none.
  { type: 'RunFinished', from: 1, up: (data) => ({ verifyTokens: 0, ...(data as object) }) },
  // Version 2 counts the reflection's tokens; one before that reported none.
  { type: 'RunReflected', from: 1, up: (data) => ({ tokens: 0, totalTokens: 0, ...(data as object) }) },
  // Version 2's figures hold the verifier's tokens apart.
  {
    type: 'RunDeleted',
    from: 1,
    up: (data) => {
      const d = data as { figures: object };
      return { ...d, figures: { verifyTokens: 0, ...d.figures } };
    },
  },
];

const versions = new Map<string, number>();
for (const u of upcasters) versions.set(u.type, Math.max(versions.get(u.type) ?? 1, u.from + 1));

/** The payload version an event of this type is written with: the one every upcaster leads to. */
export function payloadVersion(type: string): number {
  return versions.get(type) ?? 1;
}

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
