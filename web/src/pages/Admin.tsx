import { useEffect, useState, type ReactNode } from 'react';
import { NavLink, useSearchParams } from 'react-router-dom';
import { asApiError, call, client, type ApiError } from '../api.js';
import { DataTable, type Column } from '../components/DataTable.js';
import { Pager, pageSizeOf } from '../components/Pager.js';
import { Empty, ErrorBox, Spinner } from '../components/ui.js';
import { dateTime, relative } from '../format.js';
import { useDebouncedCallback, useEditableCopy } from '../hooks.js';
import { useList, type ListPage, type ListState } from '../list.js';
import { useSession } from '../session.js';
import type { AdminUserDto, AdminWorkspaceDto } from '../types.js';

function AdminNav() {
  return (
    <nav className="tabs" aria-label="Admin sections">
      <NavLink to="/admin/users">Users</NavLink>
      <NavLink to="/admin/workspaces">Workspaces</NavLink>
    </nav>
  );
}

/** The frame of an admin page; people who are not instance admins get a plain refusal, as the API would give. */
function AdminFrame({ children }: { children: ReactNode }) {
  const { me } = useSession();
  if (!me) return <Spinner />;
  return (
    <section>
      <h1>Admin</h1>
      {me.isAdmin && !me.viaToken ? (
        <>
          <AdminNav />
          {children}
        </>
      ) : (
        <Empty title="For instance admins only">
          <p>The Admin area manages the users and workspaces of the whole instance.</p>
        </Empty>
      )}
    </section>
  );
}

/** An admin list: search, page and page size in the URL, the server searches and pages. */
function useAdminList<T>(
  name: string,
  load: (query: { search: string; page: number; pageSize: number }, signal: AbortSignal) => Promise<ListPage<T>>,
) {
  const [params, setParams] = useSearchParams();
  const search = params.get('search') ?? '';
  const page = Math.max(1, Number(params.get('page')) || 1);
  const pageSize = pageSizeOf(params.get('pageSize'));
  const all = pageSize === 'all';
  const [typed, setTyped] = useEditableCopy(search);
  const set = (changes: Record<string, string | null>, replace = false) =>
    setParams(
      (p) => {
        const n = new URLSearchParams(p);
        for (const [k, v] of Object.entries(changes)) {
          if (v === null || v === '') n.delete(k);
          else n.set(k, v);
        }
        return n;
      },
      { replace },
    );
  const writeSearch = useDebouncedCallback((text: string) => set({ search: text, page: null }, true), 250);
  const list = useList(`${name} ${search}`, (p, size, signal) => load({ search, page: p, pageSize: size }, signal), {
    all,
    page,
    pageSize: all ? 100 : pageSize,
  });
  const searchBox = (label: string) => (
    <div className="toolbar">
      <input
        type="search"
        aria-label={label}
        placeholder={label}
        value={typed}
        maxLength={200}
        onChange={(e) => {
          setTyped(e.target.value);
          writeSearch(e.target.value);
        }}
      />
      {list.loading && list.rows && <span className="spinner small" aria-label="Updating" />}
    </div>
  );
  const pager =
    list.total !== undefined && list.total > 0 ? (
      <Pager
        page={page}
        pageSize={pageSize}
        total={list.total}
        onPage={(p) => set({ page: p === 1 ? null : String(p) })}
        onPageSize={(s) => set({ pageSize: s === 25 ? null : String(s), page: null })}
      />
    ) : null;
  return { list, search, searchBox, pager };
}

function ListBody<T>({
  list,
  search,
  what,
  children,
}: {
  list: ListState<T>;
  search: string;
  what: string;
  children: (rows: Array<T | undefined>) => ReactNode;
}) {
  return (
    <>
      <ErrorBox error={list.error} onRetry={list.reload} />
      {!list.rows && !list.error && <Spinner />}
      {list.total === 0 && <Empty title={search ? `No ${what} matches “${search}”` : `No ${what}`} />}
      {list.rows && list.rows.length > 0 && children(list.rows)}
    </>
  );
}

/**
 * Every user of the instance: deactivate (signs them out everywhere at once) or reactivate, and the instance admin
 * flag. An admin cannot lock themselves out, so their own row has no controls.
 */
export function AdminUsersPage() {
  return (
    <AdminFrame>
      <AdminUsers />
    </AdminFrame>
  );
}

function AdminUsers() {
  const { me } = useSession();
  const { list, search, searchBox, pager } = useAdminList('admin-users', (query, signal) =>
    call(client.GET('/api/admin/users', { params: { query }, signal })),
  );
  const [error, setError] = useState<ApiError | null>(null);
  const [notice, setNotice] = useState('');
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    document.title = 'Users · Admin · svc';
  }, []);

  const label = (u: AdminUserDto) => u.name ?? u.email ?? u.id;
  const update = async (u: AdminUserDto, change: { deactivated?: boolean; isAdmin?: boolean }, done: string) => {
    if (change.deactivated && !window.confirm(`Deactivate ${label(u)}? They are signed out everywhere at once.`))
      return;
    setBusy(true);
    setError(null);
    setNotice('');
    try {
      await call(client.PATCH('/api/admin/users/{id}', { params: { path: { id: u.id } }, body: change }));
      setNotice(done);
      list.reload();
    } catch (err) {
      setError(asApiError(err));
    } finally {
      setBusy(false);
    }
  };

  const columns: Array<Column<AdminUserDto>> = [
    {
      key: 'user',
      header: 'User',
      cell: (u) => (
        <div>
          {label(u)}
          {u.id === me?.id && <span className="muted"> (you)</span>}
          {u.name && u.email && <div className="muted small">{u.email}</div>}
        </div>
      ),
    },
    { key: 'provider', header: 'Signs in with', cell: (u) => u.provider },
    {
      key: 'status',
      header: 'Status',
      cell: (u) => (
        <span>
          {u.deactivated ? (
            <span className="badge status-failed">deactivated</span>
          ) : (
            <span className="badge status-succeeded">active</span>
          )}{' '}
          {u.isAdmin && <span className="badge">instance admin</span>}
        </span>
      ),
    },
    {
      key: 'last',
      header: 'Last sign-in',
      cell: (u) => (u.lastLoginAt ? relative(u.lastLoginAt) : <span className="muted">never</span>),
    },
    { key: 'created', header: 'Created', cell: (u) => dateTime(u.createdAt) },
    {
      key: 'actions',
      header: <span className="sr-only">Actions</span>,
      label: '',
      className: 'actions',
      cell: (u) =>
        u.id !== me?.id && (
          <>
            <button
              type="button"
              disabled={busy}
              aria-label={`${u.isAdmin ? 'Remove instance admin rights of' : 'Make instance admin:'} ${label(u)}`}
              onClick={() =>
                void update(
                  u,
                  { isAdmin: !u.isAdmin },
                  u.isAdmin ? `${label(u)} is no longer an instance admin.` : `${label(u)} is now an instance admin.`,
                )
              }
            >
              {u.isAdmin ? 'Remove admin' : 'Make admin'}
            </button>{' '}
            <button
              type="button"
              className={u.deactivated ? '' : 'danger'}
              disabled={busy}
              aria-label={`${u.deactivated ? 'Reactivate' : 'Deactivate'} ${label(u)}`}
              onClick={() =>
                void update(
                  u,
                  { deactivated: !u.deactivated },
                  u.deactivated ? `${label(u)} can sign in again.` : `${label(u)} is deactivated and signed out.`,
                )
              }
            >
              {u.deactivated ? 'Reactivate' : 'Deactivate'}
            </button>
          </>
        ),
    },
  ];

  return (
    <>
      {searchBox('Search users by email or name')}
      {notice && (
        <div className="notice ok" role="status">
          {notice}
        </div>
      )}
      <ErrorBox error={error} />
      <ListBody list={list} search={search} what="user">
        {(rows) => <DataTable label="Users" rows={rows} rowKey={(u) => u.id} columns={columns} />}
      </ListBody>
      {pager}
    </>
  );
}

/** Every workspace of the instance with its owner and size; an instance admin may delete one (not Default). */
export function AdminWorkspacesPage() {
  return (
    <AdminFrame>
      <AdminWorkspaces />
    </AdminFrame>
  );
}

function AdminWorkspaces() {
  const { list, search, searchBox, pager } = useAdminList('admin-workspaces', (query, signal) =>
    call(client.GET('/api/admin/workspaces', { params: { query }, signal })),
  );
  const [error, setError] = useState<ApiError | null>(null);
  const [notice, setNotice] = useState('');
  useEffect(() => {
    document.title = 'Workspaces · Admin · svc';
  }, []);

  const remove = async (w: AdminWorkspaceDto) => {
    if (
      !window.confirm(
        `Delete the workspace “${w.name}” with its ${w.members} members' access, jobs, runs and files? This cannot be undone.`,
      )
    )
      return;
    setError(null);
    setNotice('');
    try {
      await call(client.DELETE('/api/admin/workspaces/{id}', { params: { path: { id: w.id } } }));
      setNotice(`Deleted the workspace ${w.name}.`);
      list.reload();
    } catch (err) {
      setError(asApiError(err));
    }
  };

  const columns: Array<Column<AdminWorkspaceDto>> = [
    { key: 'name', header: 'Workspace', cell: (w) => w.name },
    { key: 'owner', header: 'Owner', cell: (w) => w.owner ?? <span className="muted">no owner</span> },
    { key: 'members', header: 'Members', cell: (w) => w.members },
    { key: 'created', header: 'Created', cell: (w) => dateTime(w.createdAt) },
    {
      key: 'actions',
      header: <span className="sr-only">Actions</span>,
      label: '',
      className: 'actions',
      cell: (w) => (
        <button
          type="button"
          className="danger"
          aria-label={`Delete workspace ${w.name}`}
          onClick={() => void remove(w)}
        >
          Delete
        </button>
      ),
    },
  ];

  return (
    <>
      {searchBox('Search workspaces by name')}
      {notice && (
        <div className="notice ok" role="status">
          {notice}
        </div>
      )}
      <ErrorBox error={error} />
      <ListBody list={list} search={search} what="workspace">
        {(rows) => <DataTable label="Workspaces" rows={rows} rowKey={(w) => w.id} columns={columns} />}
      </ListBody>
      {pager}
    </>
  );
}
