import type { DomainEvent } from './decider.js';
import { upcast } from './upcast.js';

/** What decoding needs of a recorded event (the store's RecordedEvent has more, and keeps it). */
export interface StoredEvent {
  streamId: string;
  type: string;
  data: unknown;
  metadata: { v?: number };
}

/** How a category's key is written into a stream id and read back; a plain string key by default. */
export interface KeyFormat<K> {
  format(key: K): string;
  /** The key from the part of the id after `<category>-`, or null when it is not one. */
  parse(rest: string): K | null;
}

const plainKey: KeyFormat<string> = { format: (key) => key, parse: (rest) => (rest === '' ? null : rest) };

/**
 * One kind of stream: its category (the id prefix), how a key becomes a stream id and back, and the events its
 * streams hold. Callers of deciders build ids with it and projectors decode with it, so no code parses stream ids or
 * casts recorded events by hand (docs/events.md, "Streams").
 */
export class StreamCategory<E extends DomainEvent, K = string> {
  private readonly prefix: string;

  constructor(
    readonly category: string,
    private readonly key: KeyFormat<K>,
  ) {
    // `categoryOf` reads a stream id's category up to its first dash.
    if (category === '' || category.includes('-')) throw new Error(`a category name holds no dash: ${category}`);
    this.prefix = `${category}-`;
  }

  /** The stream id of a key. An arrow, so `const jobStreamId = jobStream.id` keeps working unbound. */
  readonly id = (key: K): string => `${this.prefix}${this.key.format(key)}`;

  /** The key of a stream id of this category, or null for another category. */
  keyOf(streamId: string): K | null {
    return streamId.startsWith(this.prefix) ? this.key.parse(streamId.slice(this.prefix.length)) : null;
  }

  /**
   * The event typed as this category's union, upcast to its current version, with the key of its stream; null for
   * an event of another category. The one place a recorded payload is trusted as a domain event: only this
   * category's decider ever appended to these streams.
   */
  decode<R extends StoredEvent>(recorded: R): { key: K; event: Omit<R, 'type' | 'data'> & E } | null {
    const key = this.keyOf(recorded.streamId);
    if (key === null) return null;
    return { key, event: upcast(recorded) as unknown as Omit<R, 'type' | 'data'> & E };
  }
}

/**
 * The category of a stream id, the part before its first `-` (category names hold none); '' for an id without one,
 * which is of no category.
 */
export function categoryOf(streamId: string): string {
  const dash = streamId.indexOf('-');
  return dash < 0 ? '' : streamId.slice(0, dash);
}

/** A category whose key is one opaque id (a uuid or a hash). */
export function streamCategory<E extends DomainEvent>(category: string): StreamCategory<E> {
  return new StreamCategory<E>(category, plainKey);
}

/**
 * A category keyed by a workspace id and a second part (a user id, a lowercased name). Workspace ids are uuids, so
 * the fixed length splits the two even when the second part holds dashes.
 */
export function workspaceScopedCategory<E extends DomainEvent>(category: string): StreamCategory<E, [string, string]> {
  const uuidLength = 36;
  return new StreamCategory<E, [string, string]>(category, {
    format: ([workspaceId, part]) => `${workspaceId}-${part}`,
    parse: (rest) =>
      rest.length > uuidLength + 1 && rest[uuidLength] === '-'
        ? [rest.slice(0, uuidLength), rest.slice(uuidLength + 1)]
        : null,
  });
}
