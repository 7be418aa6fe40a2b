import { categoryOf } from '../domain/stream.js';
import { streams } from '../domain/streams.js';
import type { RecordedEvent } from '../store/event-store.js';
import type { DocOp, Projector } from './projector.js';

const workspaceCategory = streams.workspace.category;
const erasureCategory = streams.workspaceErasure.category;

/** The workspace an event empties: its deletion (`WorkspaceDeleted`) or the record of its erasure (`WorkspaceErased`). */
export function emptiedWorkspace(e: RecordedEvent): string | null {
  const deleted = streams.workspace.decode(e);
  if (deleted?.event.type === 'WorkspaceDeleted') return deleted.key;
  return streams.workspaceErasure.decode(e)?.key ?? null;
}

/**
 * A projector that also drops every document of a workspace carrying its `workspaceId` when the workspace is
 * deleted, and again when its erasure is recorded (docs/design.md, "Workspace erasure"). The first makes the
 * workspace unreadable at once; the second is what a replay meets once the workspace's streams are gone, and it
 * takes with it anything a write racing the deletion projected in between. Both are pure, so a rebuild agrees with
 * the live read models at every stage of an erasure. The projector is offered the workspace's two categories too.
 */
export function withWorkspaceErasure(p: Projector): Projector {
  const categories = p.categories && [
    ...p.categories,
    ...[streams.workspace, streams.workspaceErasure].filter((c) => !p.categories!.includes(c)),
  ];
  return {
    ...p,
    ...(categories ? { categories } : {}),
    project(e: RecordedEvent): DocOp[] {
      const own = p.project(e);
      // Only the workspace's own categories can empty one: the others are not decoded again.
      const category = categoryOf(e.streamId);
      if (category !== workspaceCategory && category !== erasureCategory) return own;
      const workspaceId = emptiedWorkspace(e);
      if (workspaceId === null) return own;
      const drops: DocOp[] = p.collections.map((collection) => ({
        kind: 'delete',
        collection,
        filter: { workspaceId },
      }));
      return [...drops, ...own];
    },
  };
}
