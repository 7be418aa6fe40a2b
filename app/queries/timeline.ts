import { filter, type Observable } from 'rxjs';
import type { DeltaSource } from '../live-deltas.js';
import { runStreamId } from '../../domain/run.js';
import type { RunDoc } from '../../projections/runs.js';
import type { EventStore, RecordedEvent } from '../../store/event-store.js';
import type { RunFiles } from '../../adapters/run-files.js';
import { timelineStreamId, type LiveDelta, type TimelineData } from '../timeline.js';
import type { StreamFeeds } from './run-feeds.js';

/**
 * The timeline of one run the caller may see: only `WorkspaceQueries.timeline` makes one, after finding the run in
 * the caller's workspace, so a run id of another workspace never reaches the event store (docs/api.md).
 */
export class RunTimeline {
  constructor(
    private readonly events: EventStore,
    private readonly feeds: StreamFeeds,
    private readonly deltas: DeltaSource,
    private readonly files: RunFiles,
    readonly run: RunDoc,
  ) {}

  /** The whole payload of an entry whose inline payload was shortened, or null when it was not (or is gone). */
  async wholePayload(entry: RecordedEvent): Promise<unknown> {
    const { stored, storedSha256 } = entry.data as TimelineData;
    return stored ? this.files.readPayload(this.run._id, stored, storedSha256) : null;
  }

  /** Entries from `fromRevision` (= the last seq the caller has), oldest first. */
  read(fromRevision: number, limit?: number): Promise<RecordedEvent[]> {
    return this.events.readStream(timelineStreamId(this.run._id), {
      fromRevision,
      ...(limit !== undefined ? { limit } : {}),
    });
  }

  /** The entry numbered `seq` (from 1), or null. */
  async entry(seq: number): Promise<RecordedEvent | null> {
    const [recorded] = await this.read(seq - 1, 1);
    return recorded ?? null;
  }

  /** Entries as they are appended, shared with every other watcher of this run. */
  liveEntries(): Observable<RecordedEvent> {
    return this.feeds.live(timelineStreamId(this.run._id));
  }

  /** The run's own events as they are appended (its status changes). */
  liveRunEvents(): Observable<RecordedEvent> {
    return this.feeds.live(runStreamId(this.run._id));
  }

  /** Fragments of model and command output, never stored: only for whoever watches now. */
  liveDeltas(): Observable<LiveDelta['delta']> {
    return this.deltas.forRun(this.run._id);
  }

  /** Resolves once this run's output shared by other processes until now has reached its watchers here. */
  async deltasCaughtUp(): Promise<void> {
    await this.deltas.caughtUp?.(this.run._id);
  }
}

/** Events of the runs of one workspace from now on, for the workspace's status feed. */
export async function workspaceRunEvents(events: EventStore, workspaceId: string): Promise<Observable<RecordedEvent>> {
  const head = await events.headPosition();
  return (
    events
      // `jobruns-` carries RunDeleted, announced as `deleted: true`.
      .subscribeAll({ after: head, filter: { streamPrefixes: ['run-', 'jobruns-'] } })
      .pipe(filter((e) => e.metadata.workspaceId === workspaceId))
  );
}
