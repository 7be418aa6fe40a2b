import type { Decider, DomainEvent } from '../domain/decider.js';
import {
  WrongExpectedRevisionError,
  type Actor,
  type EventMetadata,
  type EventStore,
  type NewEvent,
  type Position,
} from '../store/event-store.js';
import { payloadVersion, upcast } from '../domain/upcast.js';
import { conflictPause } from './conflict-pause.js';

/** Who is acting and why: becomes the metadata of every event the command appends. */
export interface CommandContext {
  workspaceId: string | null;
  actor: Actor;
  requestId: string | null;
  correlationId?: string | null;
  causationId?: string | null;
}

export interface CommandResult<E, S> {
  events: E[];
  state: S;
  /** Position of the last event appended, or null when the command changed nothing. */
  position: Position | null;
}

const maxAttempts = 5;

/**
 * A command's result, the state after its events folded only when a caller reads it: most callers answer from the
 * read models and never do, and a job's fold made a whole config per creation for nothing (docs/performance.md,
 * "Allocation, and a log that did not start over (2026-11-27)"). Deciders are pure, so folding later folds the same.
 */
function decided<E, S>(
  events: E[],
  before: S,
  evolve: (state: S, event: E) => S,
  position: Position,
): CommandResult<E, S> {
  let after: { state: S } | null = null;
  return {
    events,
    position,
    get state() {
      after ??= { state: events.reduce(evolve, before) };
      return after.state;
    },
  };
}

export interface ExecuteOptions {
  /** The stream's id was made for this command (a new job's): the first attempt skips reading it. */
  newStream?: boolean;
}

export const systemContext: CommandContext = {
  workspaceId: null,
  actor: { type: 'system', id: null },
  requestId: null,
};

/**
 * Reads a stream, folds it, decides and appends with the revision it read. A concurrent writer makes the append
 * fail; the command is then decided again on the fresh state (bounded), which is what makes decisions such as
 * "claim this run" or "consume this link" happen exactly once.
 */
export class CommandBus {
  /**
   * Folded states by stream: events never change once written, so a later load only reads what was appended since.
   * This keeps long-lived streams (a job's admission actor) cheap to decide on.
   */
  private readonly folded = new Map<string, { decider: unknown; state: unknown; revision: number }>();
  private static readonly maxFolded = 2000;
  /**
   * The last command queued on each stream in this process: commands on one stream run one after the other here, so
   * they never lose an expected-revision check to each other (nine triggers of one job at once spent the five attempts
   * and failed: docs/design.md, "Events and read models"). Other processes' writers still race and retry.
   */
  private readonly tails = new Map<string, Promise<unknown>>();

  constructor(
    private readonly store: EventStore,
    private readonly clock: () => number = Date.now,
  ) {}

  async load<C, E extends DomainEvent, S>(
    streamId: string,
    decider: Decider<C, E, S>,
  ): Promise<{ state: S; revision: number }> {
    const cached = this.folded.get(streamId);
    const hit = cached && cached.decider === decider ? cached : null;
    let state = hit ? (hit.state as S) : decider.initialState;
    let revision = hit ? hit.revision : -1;
    const recorded = await this.store.readStream(streamId, { fromRevision: revision + 1 });
    for (const r of recorded) state = decider.evolve(state, upcast(r) as unknown as E);
    if (recorded.length > 0) revision = recorded[recorded.length - 1]!.revision;
    if (revision >= 0) {
      this.folded.delete(streamId);
      this.folded.set(streamId, { decider, state, revision });
      if (this.folded.size > CommandBus.maxFolded) this.folded.delete(this.folded.keys().next().value!);
    }
    return { state, revision };
  }

  /** Drops what is folded of a stream that was deleted, so the next load reads it as it is now. */
  forget(streamId: string): void {
    this.folded.delete(streamId);
  }

  execute<C, E extends DomainEvent, S>(
    streamId: string,
    decider: Decider<C, E, S>,
    command: C | ((state: S) => C),
    ctx: CommandContext,
    options: ExecuteOptions = {},
  ): Promise<CommandResult<E, S>> {
    const before = this.tails.get(streamId);
    const run = before
      ? before.then(() => this.attempts(streamId, decider, command, ctx, options))
      : this.attempts(streamId, decider, command, ctx, options);
    // The next command on the stream waits for this one's answer, whatever it is; the last one leaves no entry.
    const settle = () => {
      if (this.tails.get(streamId) === tail) this.tails.delete(streamId);
    };
    const tail = run.then(settle, settle);
    this.tails.set(streamId, tail);
    return run;
  }

  private async attempts<C, E extends DomainEvent, S>(
    streamId: string,
    decider: Decider<C, E, S>,
    command: C | ((state: S) => C),
    ctx: CommandContext,
    options: ExecuteOptions,
  ): Promise<CommandResult<E, S>> {
    for (let attempt = 1; ; attempt++) {
      // A stream under an id made just now has nothing to read: it is decided on the initial state, and the append
      // expects no stream, so a stream that does exist after all makes it fail and the next attempt reads it.
      const { state, revision } =
        attempt === 1 && options.newStream
          ? { state: decider.initialState, revision: -1 }
          : await this.load(streamId, decider);
      const cmd = typeof command === 'function' ? (command as (s: S) => C)(state) : command;
      const events = decider.decide(cmd, state);
      if (events.length === 0) return { events, state, position: null };
      const ts = this.clock();
      const metadata: EventMetadata = {
        workspaceId: ctx.workspaceId,
        actor: ctx.actor,
        requestId: ctx.requestId,
        correlationId: ctx.correlationId ?? ctx.requestId,
        causationId: ctx.causationId ?? null,
        ts,
        v: 1,
      };
      const toAppend: NewEvent[] = events.map((e) => {
        const v = payloadVersion(e.type);
        return { type: e.type, data: e.data, metadata: v === 1 ? metadata : { ...metadata, v } };
      });
      try {
        const result = await this.store.append(streamId, toAppend, revision === -1 ? 'no_stream' : revision);
        return decided(events, state, decider.evolve, result.position);
      } catch (err) {
        if (err instanceof WrongExpectedRevisionError && attempt < maxAttempts) {
          // The first loss is usually an ordinary race, answered by reading again at once.
          if (attempt > 1) await conflictPause(attempt);
          continue;
        }
        throw err;
      }
    }
  }
}
