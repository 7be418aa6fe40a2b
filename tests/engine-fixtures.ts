import type { EventMetadata } from '../store/event-store.js';

/** The metadata of events a test appends as the system, in workspace `w`. */
export const systemMeta: EventMetadata = {
  workspaceId: 'w',
  actor: { type: 'system', id: null },
  requestId: null,
  correlationId: null,
  causationId: null,
  ts: 1,
};

/** A projection engine's logger that says nothing. */
export const quiet = { error: () => {}, info: () => {} };
