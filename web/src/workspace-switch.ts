import { call, client } from './api.js';

/**
 * Pages whose address means the same in every workspace: after a switch the person stays there. A job or a run
 * belongs to one workspace, so from those the switch lands on the jobs list.
 */
const samePageEverywhere = /^\/(|jobs|runs|audit|settings(\/[a-z]+)?|admin(\/[a-z]+)?)$/;

export function pageAfterSwitch(pathname: string): string {
  return samePageEverywhere.test(pathname) ? pathname : '/jobs';
}

/**
 * The session now acts in another workspace (switched, joined, left): every page's data and the session's role
 * belong to the old one, so the app loads afresh at `path` rather than patching what it holds.
 */
export function reloadInto(path: string): void {
  window.location.assign(path);
}

/** Switches the session to a workspace (the server re-issues the cookie, docs/api.md, "Workspaces and members"). */
export async function switchWorkspace(id: string): Promise<void> {
  await call(client.POST('/api/workspaces/{id}/switch', { params: { path: { id } } }));
  reloadInto(pageAfterSwitch(window.location.pathname));
}
