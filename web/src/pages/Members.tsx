import { useEffect, useState } from 'react';
import { asApiError, call, client, type ApiError } from '../api.js';
import { DataTable, type Column } from '../components/DataTable.js';
import { ErrorBox, Spinner } from '../components/ui.js';
import { dateTime, relative } from '../format.js';
import { useApi } from '../hooks.js';
import { useSession } from '../session.js';
import { reloadInto } from '../workspace-switch.js';
import type { MemberDto } from '../types.js';
import { InvitesSection } from './Invites.js';
import { SettingsNav } from './SettingsNav.js';

type Me = NonNullable<ReturnType<typeof useSession>['me']>;

/** Whether the session may change members and invites: admins and the owner, and instance admins (docs/api.md). */
export const canManageMembers = (me: Me) => !me.viaToken && (me.isAdmin || me.workspace.role !== 'member');

const memberName = (m: MemberDto) => m.name ?? m.email ?? m.userId;

/**
 * The members of the current workspace with their roles, and its invites. Admins and the owner change roles (never
 * the owner's), remove members and invite; everyone else reads the list, since the server would refuse the rest.
 */
export function MembersPage() {
  const { me } = useSession();
  const members = useApi('members', (signal) =>
    call(client.GET('/api/workspace/members', { params: { query: { pageSize: 100, sort: 'joinedAt' } }, signal })),
  );
  const [error, setError] = useState<ApiError | null>(null);
  const [notice, setNotice] = useState('');
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    document.title = 'Members and invites · svc';
  }, []);

  if (!me) return <Spinner />;
  const manage = canManageMembers(me);
  const enabled = me.workspacesEnabled;

  const act = async (work: () => Promise<string>) => {
    setBusy(true);
    setError(null);
    setNotice('');
    try {
      setNotice(await work());
      members.reload();
    } catch (err) {
      setError(asApiError(err));
    } finally {
      setBusy(false);
    }
  };
  const changeRole = (m: MemberDto, role: 'admin' | 'member') =>
    act(async () => {
      await call(
        client.PATCH('/api/workspace/members/{userId}', { params: { path: { userId: m.userId } }, body: { role } }),
      );
      return `${memberName(m)} is now ${role === 'admin' ? 'an admin' : 'a member'}.`;
    });
  const remove = (m: MemberDto) => {
    if (!window.confirm(`Remove ${memberName(m)} from ${me.workspace.name}? Their sessions here end at once.`)) return;
    void act(async () => {
      await call(client.DELETE('/api/workspace/members/{userId}', { params: { path: { userId: m.userId } } }));
      return `${memberName(m)} was removed.`;
    });
  };
  const leave = async () => {
    if (!window.confirm(`Leave ${me.workspace.name}? You need a new invite to come back.`)) return;
    setBusy(true);
    setError(null);
    try {
      await call(client.POST('/api/workspace/leave'));
      reloadInto('/');
    } catch (err) {
      setError(asApiError(err));
      setBusy(false);
    }
  };

  const columns: Array<Column<MemberDto>> = [
    {
      key: 'name',
      header: 'Member',
      cell: (m) => (
        <div>
          {memberName(m)}
          {m.userId === me.id && <span className="muted"> (you)</span>}
          {m.deactivated && <span className="badge"> deactivated</span>}
          {m.name && m.email && <div className="muted small">{m.email}</div>}
        </div>
      ),
    },
    {
      key: 'role',
      header: 'Role',
      cell: (m) =>
        manage && m.role !== 'owner' && m.userId !== me.id ? (
          <select
            aria-label={`Role of ${memberName(m)}`}
            value={m.role}
            disabled={busy}
            onChange={(e) => void changeRole(m, e.target.value === 'admin' ? 'admin' : 'member')}
          >
            <option value="admin">admin</option>
            <option value="member">member</option>
          </select>
        ) : (
          <span className={`badge role-${m.role}`}>{m.role}</span>
        ),
    },
    { key: 'joined', header: 'Joined', cell: (m) => dateTime(m.joinedAt) },
    {
      key: 'last',
      header: 'Last sign-in',
      cell: (m) => (m.lastLoginAt ? relative(m.lastLoginAt) : <span className="muted">never</span>),
    },
    {
      key: 'actions',
      header: <span className="sr-only">Actions</span>,
      label: '',
      className: 'actions',
      cell: (m) =>
        m.userId === me.id
          ? enabled &&
            m.role !== 'owner' && (
              <button type="button" disabled={busy} onClick={() => void leave()}>
                Leave workspace
              </button>
            )
          : manage &&
            enabled &&
            m.role !== 'owner' && (
              <button
                type="button"
                className="danger"
                disabled={busy}
                aria-label={`Remove ${memberName(m)}`}
                onClick={() => remove(m)}
              >
                Remove
              </button>
            ),
    },
  ];

  return (
    <section>
      <h1>Settings</h1>
      <SettingsNav />
      <div className="members">
        {!manage && (
          <div className="notice" role="status">
            Only admins and the owner can change members and invites; you can see who is here.
          </div>
        )}
        {!enabled && manage && (
          <div className="notice" role="status">
            Workspaces are not enabled on this instance: everyone who signs in joins this workspace. Deactivate a person
            in the Admin area instead of removing them.
          </div>
        )}
        {notice && (
          <div className="notice ok" role="status">
            {notice}
          </div>
        )}
        <ErrorBox error={error} />
        <h2>Members of {me.workspace.name}</h2>
        <ErrorBox error={members.error} onRetry={members.reload} />
        {!members.data && !members.error && <Spinner />}
        {members.data && (
          <>
            <DataTable label="Members" rows={members.data.items} rowKey={(m) => m.userId} columns={columns} />
            {members.data.total > members.data.items.length && (
              <p className="muted small">
                The first {members.data.items.length} of {members.data.total} members.
              </p>
            )}
          </>
        )}
        {manage && enabled && <InvitesSection />}
      </div>
    </section>
  );
}
