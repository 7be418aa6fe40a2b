import { useEffect, useRef, useState, type FormEvent } from 'react';
import { asApiError, call, client, type ApiError } from '../api.js';
import { Empty, ErrorBox, Field, Spinner } from '../components/ui.js';
import { dateTime, relative } from '../format.js';
import { useApi } from '../hooks.js';
import type { ApiTokenDto, CreateTokenOutputBody } from '../types.js';
import { SettingsNav } from './SettingsNav.js';

const day = 86_400_000;
const lifetimes = [
  { label: 'Never expires', days: 0 },
  { label: '30 days', days: 30 },
  { label: '90 days', days: 90 },
  { label: '1 year', days: 365 },
];

/** API tokens for scripts: created here (shown once), listed, deleted. Creating and deleting need a session. */
export function TokensPage() {
  const list = useApi('tokens', (signal) =>
    call(client.GET('/api/tokens', { params: { query: { pageSize: 100, sort: '-createdAt' } }, signal })),
  );
  const [name, setName] = useState('');
  const [daysValid, setDaysValid] = useState(90);
  const [created, setCreated] = useState<CreateTokenOutputBody | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);
  const shown = useRef<HTMLInputElement>(null);

  useEffect(() => {
    document.title = 'API tokens · svc';
  }, []);
  useEffect(() => {
    if (created) shown.current?.select();
  }, [created]);

  const create = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const body = { name: name.trim(), ...(daysValid > 0 ? { expiresAt: Date.now() + daysValid * day } : {}) };
      setCreated(await call(client.POST('/api/tokens', { body })));
      setName('');
      list.reload();
    } catch (err) {
      setError(asApiError(err));
    } finally {
      setBusy(false);
    }
  };
  const remove = async (t: ApiTokenDto) => {
    if (!window.confirm(`Delete the token “${t.name}”? Scripts that use it stop working at once.`)) return;
    setError(null);
    try {
      await call(client.DELETE('/api/tokens/{id}', { params: { path: { id: t.id } } }));
      if (created?.apiToken.id === t.id) setCreated(null);
      list.reload();
    } catch (err) {
      setError(asApiError(err));
    }
  };

  return (
    <section>
      <h1>Settings</h1>
      <SettingsNav />
      <div className="narrow">
        <form className="card form" onSubmit={(e) => void create(e)}>
          <h2>Create a token</h2>
          <p className="muted small">
            A token acts with your role in this workspace. Send it as <code>Authorization: Bearer svc_…</code>.
          </p>
          <div className="row">
            <Field
              label="Name"
              htmlFor="token-name"
              error={error?.field('name')}
              hint="What uses it, e.g. nightly backup script"
            >
              <input id="token-name" value={name} maxLength={100} onChange={(e) => setName(e.target.value)} />
            </Field>
            <Field label="Expires" htmlFor="token-expiry" error={error?.field('expiresAt')}>
              <select id="token-expiry" value={daysValid} onChange={(e) => setDaysValid(Number(e.target.value))}>
                {lifetimes.map((l) => (
                  <option key={l.days} value={l.days}>
                    {l.label}
                  </option>
                ))}
              </select>
            </Field>
          </div>
          {error && error.fields.length === 0 && <ErrorBox error={error} />}
          <div className="form-actions">
            <button type="submit" className="primary" disabled={busy || name.trim() === ''}>
              Create token
            </button>
          </div>
        </form>
        {created && (
          <div className="notice ok" role="status">
            <strong>Copy the token “{created.apiToken.name}” now: it is shown only once.</strong>
            <input
              ref={shown}
              className="token-once"
              readOnly
              value={created.token}
              aria-label="The new token"
              onFocus={(e) => e.target.select()}
            />
            <button type="button" className="ghost" onClick={() => setCreated(null)}>
              I have copied it
            </button>
          </div>
        )}
        <ErrorBox error={list.error} onRetry={list.reload} />
        {!list.data && !list.error && <Spinner />}
        {list.data && list.data.total === 0 && <Empty title="No API tokens" />}
        {list.data && list.data.items.length > 0 && (
          <div className="table-wrap">
            <table>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Created</th>
                  <th scope="col">Last used</th>
                  <th scope="col">Expires</th>
                  <th scope="col">
                    <span className="sr-only">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {list.data.items.map((t) => (
                  <tr key={t.id}>
                    <td data-label="Name">
                      {t.name}
                      {t.createdBy && <div className="muted small">{t.createdBy}</div>}
                    </td>
                    <td data-label="Created">{dateTime(t.createdAt)}</td>
                    <td data-label="Last used">
                      {t.lastUsedAt ? relative(t.lastUsedAt) : <span className="muted">never</span>}
                    </td>
                    <td data-label="Expires">
                      {t.expiresAt ? dateTime(t.expiresAt) : <span className="muted">never</span>}
                    </td>
                    <td className="actions">
                      <button
                        type="button"
                        className="danger"
                        onClick={() => void remove(t)}
                        aria-label={`Delete token ${t.name}`}
                      >
                        Delete
                      </button>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </div>
    </section>
  );
}
