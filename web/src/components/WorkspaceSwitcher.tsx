import { useEffect, useRef, useState, type FormEvent } from 'react';
import { asApiError, call, client, type ApiError } from '../api.js';
import { useApi } from '../hooks.js';
import { useSession } from '../session.js';
import { reloadInto, switchWorkspace } from '../workspace-switch.js';
import { ErrorBox, Field, Spinner } from './ui.js';

/**
 * The current workspace in the top bar, and a menu of the person's other workspaces to switch to or a new one to
 * create. Only where the instance has workspaces enabled (`workspacesEnabled` of /api/users/me); otherwise everyone
 * shares Default and there is nothing to switch.
 */
export function WorkspaceSwitcher() {
  const { me } = useSession();
  const [open, setOpen] = useState(false);
  const box = useRef<HTMLDivElement>(null);
  const button = useRef<HTMLButtonElement>(null);

  useEffect(() => {
    if (!open) return;
    const onDown = (e: MouseEvent) => {
      if (box.current && !box.current.contains(e.target as Node)) setOpen(false);
    };
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape') {
        setOpen(false);
        button.current?.focus();
      }
    };
    document.addEventListener('mousedown', onDown);
    document.addEventListener('keydown', onKey);
    return () => {
      document.removeEventListener('mousedown', onDown);
      document.removeEventListener('keydown', onKey);
    };
  }, [open]);

  if (!me || !me.workspacesEnabled || me.viaToken) return null;
  return (
    <div className="switcher" ref={box}>
      <button
        ref={button}
        type="button"
        className="switcher-button"
        aria-expanded={open}
        aria-controls="workspace-menu"
        aria-label={`Workspace: ${me.workspace.name}. Switch workspace`}
        onClick={() => setOpen((o) => !o)}
      >
        <span className="switcher-name">{me.workspace.name}</span> <span aria-hidden="true">▾</span>
      </button>
      {open && <WorkspaceMenu />}
    </div>
  );
}

function WorkspaceMenu() {
  const list = useApi('workspaces', (signal) => call(client.GET('/api/workspaces', { signal })));
  const [name, setName] = useState('');
  const [error, setError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);

  const go = async (id: string) => {
    setBusy(true);
    setError(null);
    try {
      await switchWorkspace(id);
    } catch (err) {
      setError(asApiError(err));
      setBusy(false);
    }
  };
  const create = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const { workspaceId } = await call(client.POST('/api/workspaces', { body: { name: name.trim() } }));
      await call(client.POST('/api/workspaces/{id}/switch', { params: { path: { id: workspaceId } } }));
      // A new workspace has no jobs yet: its jobs page says how to start.
      reloadInto('/');
    } catch (err) {
      setError(asApiError(err));
      setBusy(false);
    }
  };

  return (
    <div className="card popover switcher-menu" id="workspace-menu">
      <h2 className="small muted">Your workspaces</h2>
      <ErrorBox error={list.error} onRetry={list.reload} />
      {!list.data && !list.error && <Spinner />}
      {list.data && (
        <ul className="switcher-list" aria-label="Your workspaces">
          {list.data.items.map((w) => (
            <li key={w.id}>
              <button
                type="button"
                className={w.current ? 'current' : ''}
                aria-current={w.current ? 'true' : undefined}
                disabled={busy || w.current}
                onClick={() => void go(w.id)}
              >
                <span>{w.name}</span> <span className="muted small">{w.current ? `${w.role} · current` : w.role}</span>
              </button>
            </li>
          ))}
        </ul>
      )}
      <form className="form switcher-create" onSubmit={(e) => void create(e)}>
        <Field label="New workspace" htmlFor="new-workspace-name" error={error?.field('name')}>
          <input
            id="new-workspace-name"
            value={name}
            maxLength={100}
            placeholder="e.g. Data team"
            onChange={(e) => setName(e.target.value)}
          />
        </Field>
        {error && error.fields.length === 0 && <ErrorBox error={error} />}
        <div className="form-actions">
          <button type="submit" className="primary" disabled={busy || name.trim() === ''}>
            Create and switch
          </button>
        </div>
      </form>
    </div>
  );
}
