import { useEffect, useState, type FormEvent } from 'react';
import { asApiError, call, client, type ApiError } from '../api.js';
import { Empty, ErrorBox, Field, Spinner } from '../components/ui.js';
import { dateTime } from '../format.js';
import { useApi } from '../hooks.js';
import type { SecretDto } from '../types.js';
import { SettingsNav } from './SettingsNav.js';

/**
 * Secrets of the workspace: names only. A value goes to the server once, in a password field, and is never read back
 * (the API has no way to), so the page cannot show one by mistake.
 */
export function SecretsPage() {
  const list = useApi('secrets', (signal) =>
    call(client.GET('/api/secrets', { params: { query: { pageSize: 100, sort: 'name' } }, signal })),
  );
  const [name, setName] = useState('');
  const [value, setValue] = useState('');
  const [error, setError] = useState<ApiError | null>(null);
  const [notice, setNotice] = useState('');
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    document.title = 'Secrets · svc';
  }, []);

  const create = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    setNotice('');
    try {
      await call(client.POST('/api/secrets', { body: { name: name.trim(), value } }));
      setNotice(
        `Saved the secret ${name.trim()}. Use it in a job as {{secret:${name.trim()}}} or map it to a variable.`,
      );
      setName('');
      setValue('');
      list.reload();
    } catch (err) {
      setError(asApiError(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <section>
      <h1>Settings</h1>
      <SettingsNav />
      <div className="narrow">
        <form className="card form" onSubmit={(e) => void create(e)} autoComplete="off">
          <h2>Add a secret</h2>
          {error && error.fields.length === 0 && <ErrorBox error={error} />}
          <div className="row">
            <Field label="Name" htmlFor="secret-name" error={error?.field('name')} hint="Letters, digits, . - and _">
              <input id="secret-name" value={name} maxLength={100} onChange={(e) => setName(e.target.value)} />
            </Field>
            <Field
              label="Value"
              htmlFor="secret-value"
              error={error?.field('value')}
              hint="Encrypted at rest; never shown again"
            >
              <input
                id="secret-value"
                type="password"
                autoComplete="new-password"
                value={value}
                onChange={(e) => setValue(e.target.value)}
              />
            </Field>
          </div>
          <div className="form-actions">
            <button type="submit" className="primary" disabled={busy || name.trim() === ''}>
              Add secret
            </button>
          </div>
        </form>
        {notice && (
          <div className="notice ok" role="status">
            {notice}
          </div>
        )}
        <ErrorBox error={list.error} onRetry={list.reload} />
        {!list.data && !list.error && <Spinner />}
        {list.data && list.data.total === 0 && (
          <Empty title="No secrets yet">
            Add API keys and passwords here; jobs get them as environment variables, and they are redacted from every
            timeline.
          </Empty>
        )}
        {list.data && list.data.items.length > 0 && (
          <div className="table-wrap">
            <table>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Updated</th>
                  <th scope="col">
                    <span className="sr-only">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {list.data.items.map((s) => (
                  <SecretRow key={s.id} secret={s} onChange={list.reload} />
                ))}
              </tbody>
            </table>
          </div>
        )}
      </div>
    </section>
  );
}

function SecretRow({ secret, onChange }: { secret: SecretDto; onChange: () => void }) {
  const [editing, setEditing] = useState(false);
  const [value, setValue] = useState('');
  const [error, setError] = useState<ApiError | null>(null);
  const replace = async (e: FormEvent) => {
    e.preventDefault();
    setError(null);
    try {
      await call(client.PUT('/api/secrets/{id}', { params: { path: { id: secret.id } }, body: { value } }));
      setEditing(false);
      setValue('');
      onChange();
    } catch (err) {
      setError(asApiError(err));
    }
  };
  const remove = async () => {
    if (!window.confirm(`Delete the secret ${secret.name}? Jobs that use it lose it from their next run.`)) return;
    try {
      await call(client.DELETE('/api/secrets/{id}', { params: { path: { id: secret.id } } }));
      onChange();
    } catch (err) {
      setError(asApiError(err));
    }
  };
  return (
    <tr>
      <td data-label="Name">
        <code>{secret.name}</code>
        <span className="muted small"> ••••••</span>
        {editing && (
          <form className="inline-form" onSubmit={(e) => void replace(e)} autoComplete="off">
            <input
              type="password"
              autoComplete="new-password"
              aria-label={`New value for ${secret.name}`}
              value={value}
              onChange={(e) => setValue(e.target.value)}
            />
            <button type="submit" className="primary">
              Save
            </button>
            <button type="button" className="ghost" onClick={() => setEditing(false)}>
              Cancel
            </button>
          </form>
        )}
        <ErrorBox error={error} />
      </td>
      <td data-label="Updated">{dateTime(secret.updatedAt)}</td>
      <td className="actions">
        {!editing && (
          <button type="button" onClick={() => setEditing(true)} aria-label={`Replace the value of ${secret.name}`}>
            Replace value
          </button>
        )}{' '}
        <button type="button" className="danger" onClick={() => void remove()} aria-label={`Delete ${secret.name}`}>
          Delete
        </button>
      </td>
    </tr>
  );
}
