import { erasedWith, scopeOf } from '../domain/workspace-scope.js';
import { jobImagesStream } from '../domain/image.js';
import {
  workspaceErasureDecider,
  workspaceErasureStreamId,
  workspaceStreamId,
  type WorkspaceEvent,
} from '../domain/workspace.js';
import { workspacesCollection, type WorkspaceDoc } from '../projections/identity.js';
import type { RunFiles } from '../adapters/run-files.js';
import type { Doc, DocumentStore } from '../store/document-store.js';
import type { EventStore, Position, RecordedEvent } from '../store/event-store.js';
import type { CommandBus } from './commands.js';
import type { JobStateStore } from './job-state.js';
import { timelineStreamId } from './timeline.js';

/** Where an erasure has got to: the log is scanned in order, so a position is all a restart needs. */
interface ProgressDoc extends Doc {
  scannedTo: string | null;
  /** Streams erased so far (those that held events). */
  streams: number;
}

/** The erasures' own progress documents: written by the eraser, not a read model of the engine. */
export const erasureProgressCollection = 'workspace_erasures';

/** Events read per page of the scan. */
const pageSize = 500;

export interface EraserLog {
  info(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/**
 * Erases deleted workspaces from the event log for good (docs/design.md, "Workspace erasure"). A workspace waits
 * for it while its read-model document says `deleted`, which `WorkspaceDeleted` sets and the `WorkspaceErased`
 * record clears, so a crash, a restart or a rebuild of the read models leaves the work findable until it is done.
 * Each erasure scans the log once, from its stored position, for the events of the workspace, and deletes their
 * streams with their siblings (a job's playbook and schedule, a run's timeline) and the runs' files; then it
 * records the erasure and deletes the workspace's own stream.
 */
export class WorkspaceEraser {
  private running: Promise<void> | null = null;
  private again = false;

  constructor(
    private readonly events: EventStore,
    private readonly docs: DocumentStore,
    private readonly bus: CommandBus,
    private readonly jobState: Pick<JobStateStore, 'eraseWorkspace'>,
    private readonly files: ErasedFiles,
    private readonly log: EraserLog,
    /** Resolves once the read models have applied the log up to a position. */
    private readonly projected: (position: Position | null) => Promise<unknown>,
    private readonly clock: () => number = Date.now,
  ) {}

  /** Starts a pass unless one runs; a call during a pass makes it go round once more. Failures are logged. */
  kick(): void {
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.loop().finally(() => (this.running = null));
  }

  /** Resolves when no pass is running (for a clean stop). */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  private async loop(): Promise<void> {
    do {
      this.again = false;
      try {
        await this.pass();
      } catch (err) {
        // The next deletion, start or projector change kicks it again; the progress stored so far holds.
        this.log.error({ err }, 'workspace erasure failed; it resumes at the next start or deletion');
        return;
      }
    } while (this.again);
  }

  /** Erases every workspace marked deleted; answers how many. */
  async pass(): Promise<number> {
    const pending = await this.docs.collection<WorkspaceDoc>(workspacesCollection).find({ deleted: true });
    // An erasure whose last step failed has its progress left, while its workspace is gone from the read model.
    const unfinished = await this.docs.collection<ProgressDoc>(erasureProgressCollection).find({});
    const ids = new Set([...pending, ...unfinished].map((d) => d._id));
    for (const id of ids) await this.erase(id);
    return pending.length;
  }

  async erase(workspaceId: string): Promise<void> {
    const own = workspaceStreamId(workspaceId);
    const deletion = (await this.events.readStream(own)).find((e) => e.type === 'WorkspaceDeleted');
    const progress = this.docs.collection<ProgressDoc>(erasureProgressCollection);
    // Its own stream is deleted last: without it the erasure is recorded already (or the workspace is not deleted),
    // and what may be left is the last step, the deleted rows' copies in the write-ahead logs.
    if (!deletion) {
      if ((await progress.count({ _id: workspaceId })) > 0) await this.flushed(workspaceId);
      return;
    }
    const stored = await progress.findOne({ _id: workspaceId });
    const state = { scannedTo: (stored?.scannedTo ?? null) as Position | null, streams: stored?.streams ?? 0 };
    const erased = new Set<string>();
    const scan = async (): Promise<number> => {
      let found = 0;
      for (;;) {
        const page = await this.events.readAll({ after: state.scannedTo, limit: pageSize });
        if (page.length === 0) return found;
        let held = 0;
        for (const e of page)
          if (belongsTo(e, workspaceId) && !erased.has(e.streamId)) held += await this.eraseStream(e.streamId, erased);
        found += held;
        state.streams += held;
        state.scannedTo = page[page.length - 1]!.position;
        await progress.updateOne(
          { _id: workspaceId },
          { $set: { scannedTo: state.scannedTo, streams: state.streams } },
          { upsert: true },
        );
      }
    };
    // A write that passed its access check before the deletion may still land: scan again until a pass finds none.
    while ((await scan()) > 0);
    const meta = deletion.metadata;
    const recorded = await this.bus.execute(
      workspaceErasureStreamId(workspaceId),
      workspaceErasureDecider,
      {
        type: 'RecordErasure',
        workspaceId,
        deletedAt: (deletion.data as Extract<WorkspaceEvent, { type: 'WorkspaceDeleted' }>['data']).at,
        streams: state.streams,
        now: this.clock(),
      },
      { workspaceId, actor: meta.actor, requestId: meta.requestId, causationId: deletion.id },
    );
    await scan();
    await this.jobState.eraseWorkspace(workspaceId);
    await this.events.deleteStream(own);
    this.bus.forget(own);
    // The read models drop the workspace's documents again on the record; then no copy of what went stays on disk.
    await this.projected(recorded.position);
    await this.flushed(workspaceId);
    this.log.info({ workspaceId, streams: state.streams }, 'erased a deleted workspace');
  }

  /** Leaves no copy of what went in the databases' logs, then forgets the erasure's progress. */
  private async flushed(workspaceId: string): Promise<void> {
    await this.events.flushDeletions();
    await this.docs.flushDeletions();
    await this.docs.collection<ProgressDoc>(erasureProgressCollection).deleteMany({ _id: workspaceId });
  }

  /** Deletes a stream of the workspace with its siblings (and a run's timeline and files); answers how many held events. */
  private async eraseStream(streamId: string, erased: Set<string>): Promise<number> {
    const { scope, key, ids } = erasedWith(streamId);
    if (scope === 'run' && key !== null) ids.push(timelineStreamId(key));
    let held = 0;
    for (const id of ids) {
      if (erased.has(id)) continue;
      erased.add(id);
      // A job's image builds keep their logs in the blob store by image id: read them before the stream goes.
      const builds = jobImagesStream.keyOf(id) !== null;
      const head = await this.events.readStream(id, builds ? {} : { limit: 1 });
      if (head.length > 0) held++;
      const imageIds = new Set(head.map((e) => jobImagesStream.decode(e)?.event.data.imageId));
      for (const imageId of imageIds) if (imageId) await this.files.removeImageLog(imageId);
      await this.events.deleteStream(id);
      this.bus.forget(id);
    }
    if (scope === 'run' && key !== null) await this.files.removeRun(key);
    return held;
  }
}

/** What erasure removes from the blob store besides the streams (whose out-of-line payloads go with them). */
export interface ErasedFiles {
  removeRun: RunFiles['removeRun'];
  removeImageLog(imageId: string): Promise<void>;
}

/**
 * Whether an event is one of the workspace's, in a category a workspace owns: its metadata names the workspace, or
 * its stream id or payload does (name claims, settings, members and invites are keyed by the workspace). The
 * workspace's own stream is left for last.
 */
function belongsTo(e: RecordedEvent, workspaceId: string): boolean {
  const found = scopeOf(e.streamId);
  if (!found || found.scope === 'instance' || found.scope === 'workspace') return false;
  if (e.metadata.workspaceId === workspaceId || e.streamId.includes(workspaceId)) return true;
  const data = e.data as { workspaceId?: unknown } | null;
  return typeof data === 'object' && data !== null && data.workspaceId === workspaceId;
}
