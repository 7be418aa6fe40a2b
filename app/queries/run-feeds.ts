import { share, type Observable } from 'rxjs';
import type { EventStore, RecordedEvent } from '../../store/event-store.js';

/**
 * One live subscription per stream, shared by every SSE client watching it: with hundreds of watchers of one run,
 * the store serves one reader instead of hundreds. Clients catch up with their own read, then follow the shared feed.
 */
export class StreamFeeds {
  private readonly feeds = new Map<string, Observable<RecordedEvent>>();

  constructor(private readonly events: EventStore) {}

  live(streamId: string): Observable<RecordedEvent> {
    let feed = this.feeds.get(streamId);
    if (!feed) {
      feed = this.events.subscribeStream(streamId, { fromRevision: 0 }).pipe(
        share({
          resetOnRefCountZero: () => {
            this.feeds.delete(streamId);
            return Promise.resolve();
          },
        }),
      );
      this.feeds.set(streamId, feed);
    }
    return feed;
  }
}
