import { useEffect, useRef, useState, type KeyboardEvent } from 'react';
import { useNavigate } from 'react-router-dom';
import { call, client } from '../api.js';
import { useDebounced } from '../hooks.js';
import { useSession } from '../session.js';

interface Item {
  label: string;
  hint: string;
  to: string;
}

const pages: Item[] = [
  { label: 'Dashboard', hint: 'page', to: '/' },
  { label: 'Jobs', hint: 'page', to: '/jobs' },
  { label: 'New job', hint: 'page', to: '/jobs/new' },
  { label: 'Runs', hint: 'page', to: '/runs' },
  { label: 'Failed runs', hint: 'page', to: '/runs?status=failed' },
  { label: 'Secrets', hint: 'settings', to: '/settings/secrets' },
  { label: 'Workspace settings', hint: 'settings', to: '/settings/workspace' },
  { label: 'Providers and models', hint: 'settings', to: '/settings/providers' },
  { label: 'MCP servers', hint: 'settings', to: '/settings/mcp' },
  { label: 'API tokens', hint: 'settings', to: '/settings/tokens' },
  { label: 'Members and invites', hint: 'settings', to: '/settings/members' },
];
const adminPages: Item[] = [
  { label: 'Users of this instance', hint: 'admin', to: '/admin/users' },
  { label: 'Workspaces of this instance', hint: 'admin', to: '/admin/workspaces' },
];

/**
 * Ctrl-K / Cmd-K: jump to a page, a job (searched on the server by name or instruction) or a run (by job name,
 * summary or error). A native modal dialog, so focus stays inside it and Escape closes it.
 */
export function Palette() {
  const dialog = useRef<HTMLDialogElement>(null);
  const input = useRef<HTMLInputElement>(null);
  const navigate = useNavigate();
  const { me } = useSession();
  const [open, setOpen] = useState(false);
  const [text, setText] = useState('');
  const [found, setFound] = useState<Item[]>([]);
  const [active, setActive] = useState(0);
  const query = useDebounced(text.trim(), 150);

  useEffect(() => {
    const onKey = (e: globalThis.KeyboardEvent) => {
      if ((e.ctrlKey || e.metaKey) && e.key.toLowerCase() === 'k') {
        e.preventDefault();
        setOpen(true);
      }
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, []);

  useEffect(() => {
    const d = dialog.current;
    if (!d) return;
    if (open && !d.open) {
      d.showModal();
      input.current?.focus();
    } else if (!open && d.open) d.close();
  }, [open]);

  useEffect(() => {
    if (!open || query === '') return;
    const abort = new AbortController();
    Promise.all([
      call(client.GET('/api/jobs', { params: { query: { search: query, pageSize: 6 } }, signal: abort.signal })),
      call(
        client.GET('/api/runs', {
          params: { query: { search: query, pageSize: 4, sort: '-queuedAt' } },
          signal: abort.signal,
        }),
      ),
    ]).then(
      ([jobs, runs]) => {
        setFound([
          ...jobs.items.map((j) => ({ label: j.name, hint: 'job', to: `/jobs/${j.id}` })),
          ...runs.items.map((r) => ({
            label: `${r.jobName} #${r.number}`,
            hint: `run · ${r.status.replace('_', ' ')}`,
            to: `/runs/${r.id}`,
          })),
        ]);
      },
      () => setFound([]),
    );
    return () => abort.abort();
  }, [open, query]);

  const needle = text.trim().toLowerCase();
  const items = [
    ...(me?.isAdmin && !me.viaToken ? [...pages, ...adminPages] : pages).filter(
      (p) => needle === '' || p.label.toLowerCase().includes(needle),
    ),
    ...(open && query !== '' ? found : []),
  ];
  const current = Math.min(active, Math.max(0, items.length - 1));

  const go = (item: Item | undefined) => {
    if (!item) return;
    setOpen(false);
    setText('');
    navigate(item.to);
  };
  const onKeyDown = (e: KeyboardEvent<HTMLInputElement>) => {
    if (e.key === 'ArrowDown') {
      e.preventDefault();
      setActive((current + 1) % Math.max(1, items.length));
    } else if (e.key === 'ArrowUp') {
      e.preventDefault();
      setActive((current - 1 + items.length) % Math.max(1, items.length));
    } else if (e.key === 'Enter') {
      e.preventDefault();
      go(items[current]);
    }
  };

  return (
    <dialog
      ref={dialog}
      className="palette"
      aria-label="Go to"
      onClose={() => setOpen(false)}
      onClick={(e) => e.target === dialog.current && setOpen(false)}
    >
      <input
        ref={input}
        role="combobox"
        aria-expanded="true"
        aria-controls="palette-list"
        aria-activedescendant={items.length > 0 ? `palette-${current}` : undefined}
        aria-label="Go to a page, job or run"
        placeholder="Go to a page, job or run…"
        value={text}
        onChange={(e) => {
          setText(e.target.value);
          setActive(0);
        }}
        onKeyDown={onKeyDown}
      />
      <ul id="palette-list" role="listbox">
        {items.map((item, i) => (
          <li
            key={`${item.to}`}
            id={`palette-${i}`}
            role="option"
            aria-selected={i === current}
            className={i === current ? 'active' : ''}
            onMouseEnter={() => setActive(i)}
            onClick={() => go(item)}
          >
            <span>{item.label}</span> <span className="muted small">{item.hint}</span>
          </li>
        ))}
        {items.length === 0 && <li className="muted">Nothing matches.</li>}
      </ul>
      <div className="muted small palette-help">↑ ↓ to choose · Enter to open · Esc to close</div>
    </dialog>
  );
}
