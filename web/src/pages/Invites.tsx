import { useEffect, useRef, useState, type FormEvent } from 'react';
import { asApiError, call, client, type ApiError } from '../api.js';
import { DataTable, type Column } from '../components/DataTable.js';
import { Empty, ErrorBox, Field, Spinner } from '../components/ui.js';
import { dateTime } from '../format.js';
import { useApi } from '../hooks.js';
import type { CreateInviteOutputBody, InviteDto } from '../types.js';

const lifetimes = [1, 7, 30] as const;

/**
 * The invites of the current workspace, for admins and the owner: one for a verified email address (joined at that
 * person's next sign-in) or a link, whose address the server answers once and never again (it keeps only a hash).
 */
export function InvitesSection() {
  const list = useApi('invites', (signal) =>
    call(client.GET('/api/workspace/invites', { params: { query: { pageSize: 100 } }, signal })),
  );
  const [kind, setKind] = useState<'link' | 'email'>('link');
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<'admin' | 'member'>('member');
  const [days, setDays] = useState<number>(7);
  const [created, setCreated] = useState<CreateInviteOutputBody | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);

  const create = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    setCreated(null);
    try {
      const body = { role, expiresInDays: days, ...(kind === 'email' ? { email: email.trim() } : {}) };
      setCreated(await call(client.POST('/api/workspace/invites', { body })));
      setEmail('');
      list.reload();
    } catch (err) {
      setError(asApiError(err));
    } finally {
      setBusy(false);
    }
  };
  const revoke = async (i: InviteDto) => {
    if (!window.confirm(`Revoke the invite ${i.email ? `for ${i.email}` : 'link'}? It stops working at once.`)) return;
    setError(null);
    try {
      await call(client.DELETE('/api/workspace/invites/{id}', { params: { path: { id: i.id } } }));
      if (created?.invite.id === i.id) setCreated(null);
      list.reload();
    } catch (err) {
      setError(asApiError(err));
    }
  };

  const columns: Array<Column<InviteDto>> = [
    {
      key: 'who',
      header: 'Invite',
      cell: (i) => i.email ?? <span>Invite link</span>,
    },
    { key: 'role', header: 'Role', cell: (i) => <span className={`badge role-${i.role}`}>{i.role}</span> },
    { key: 'by', header: 'Invited by', cell: (i) => i.invitedBy ?? <span className="muted">unknown</span> },
    {
      key: 'expires',
      header: 'Expires',
      cell: (i) => (i.expired ? <span className="badge status-failed">expired</span> : dateTime(i.expiresAt)),
    },
    {
      key: 'actions',
      header: <span className="sr-only">Actions</span>,
      label: '',
      className: 'actions',
      cell: (i) => (
        <button
          type="button"
          className="danger"
          aria-label={`Revoke invite ${i.email ?? 'link'}`}
          onClick={() => void revoke(i)}
        >
          Revoke
        </button>
      ),
    },
  ];

  return (
    <>
      <h2>Invites</h2>
      <form className="card form narrow" onSubmit={(e) => void create(e)} aria-label="Invite someone">
        <fieldset className="choice" aria-label="Invite by">
          <label>
            <input type="radio" name="invite-kind" checked={kind === 'link'} onChange={() => setKind('link')} /> A link
            to send
          </label>
          <label>
            <input type="radio" name="invite-kind" checked={kind === 'email'} onChange={() => setKind('email')} /> An
            email address
          </label>
        </fieldset>
        <div className="row">
          {kind === 'email' && (
            <Field
              label="Email"
              htmlFor="invite-email"
              error={error?.field('email')}
              hint="They join when they sign in with this verified address"
            >
              <input
                id="invite-email"
                type="email"
                value={email}
                maxLength={320}
                onChange={(e) => setEmail(e.target.value)}
              />
            </Field>
          )}
          <Field label="Role" htmlFor="invite-role" error={error?.field('role')}>
            <select
              id="invite-role"
              value={role}
              onChange={(e) => setRole(e.target.value === 'admin' ? 'admin' : 'member')}
            >
              <option value="member">member</option>
              <option value="admin">admin</option>
            </select>
          </Field>
          <Field label="Valid for" htmlFor="invite-days" error={error?.field('expiresInDays')}>
            <select id="invite-days" value={days} onChange={(e) => setDays(Number(e.target.value))}>
              {lifetimes.map((d) => (
                <option key={d} value={d}>
                  {d === 1 ? '1 day' : `${d} days`}
                </option>
              ))}
            </select>
          </Field>
        </div>
        {error && error.fields.length === 0 && <ErrorBox error={error} />}
        <div className="form-actions">
          <button type="submit" className="primary" disabled={busy || (kind === 'email' && email.trim() === '')}>
            {kind === 'link' ? 'Create invite link' : 'Invite'}
          </button>
        </div>
      </form>
      {created && <CreatedInvite created={created} onDone={() => setCreated(null)} />}
      <ErrorBox error={list.error} onRetry={list.reload} />
      {!list.data && !list.error && <Spinner />}
      {list.data && list.data.total === 0 && <Empty title="No pending invites" />}
      {list.data && list.data.items.length > 0 && (
        <DataTable label="Pending invites" rows={list.data.items} rowKey={(i) => i.id} columns={columns} />
      )}
    </>
  );
}

/** What was just created: for a link, the address (shown this once) with a copy button. */
function CreatedInvite({ created, onDone }: { created: CreateInviteOutputBody; onDone: () => void }) {
  const shown = useRef<HTMLInputElement>(null);
  const [copied, setCopied] = useState<'yes' | 'no' | null>(null);
  useEffect(() => {
    shown.current?.select();
  }, []);
  const copy = async (url: string) => {
    try {
      await navigator.clipboard.writeText(url);
      setCopied('yes');
    } catch {
      // No clipboard (an insecure origin, or refused): the address is selected for the person to copy.
      shown.current?.select();
      setCopied('no');
    }
  };
  if (!created.url)
    return (
      <div className="notice ok" role="status">
        Invited {created.invite.email}: they join when they next sign in with that address.
      </div>
    );
  const url = created.url;
  return (
    <div className="notice ok" role="status">
      <strong>Copy the invite link now: it is shown only once.</strong>
      <div className="row once">
        <input
          ref={shown}
          className="token-once"
          readOnly
          value={url}
          aria-label="The invite link"
          onFocus={(e) => e.target.select()}
        />
        <button type="button" onClick={() => void copy(url)}>
          Copy link
        </button>
      </div>
      {copied === 'yes' && <div className="small">Copied.</div>}
      {copied === 'no' && (
        <div className="small">The browser refused to copy: the link is selected, copy it by hand.</div>
      )}
      <button type="button" className="ghost" onClick={onDone}>
        I have copied it
      </button>
    </div>
  );
}
