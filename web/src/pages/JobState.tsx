import { useState } from 'react';
import { useSearchParams } from 'react-router-dom';
import { ApiError, asApiError, call, client, type Schemas } from '../api.js';
import { ErrorBox, Empty, Field, Spinner } from '../components/ui.js';
import '../components/job-tabs.css';
import { byteSize } from '../components/byte-size.js';
import { dateTime } from '../format.js';
import { useApi } from '../hooks.js';

type StateEntry = Schemas['StateEntryDto'];

const keyParams = (jobId: string, key: string) => ({ params: { path: { id: jobId, key } } });

/**
 * The job's key/value state, what its runs keep between them with `svc state`: search (in the URL, `?q=`), add,
 * edit and delete. A job keeps at most 1,000 keys, so the whole list is read once and searched in the page.
 */
export function StateTab({ jobId }: { jobId: string }) {
  const [params, setParams] = useSearchParams();
  const q = params.get('q') ?? '';
  const state = useApi(`state ${jobId}`, (signal) =>
    call(client.GET('/api/jobs/{id}/state', { params: { path: { id: jobId } }, signal })),
  );
  const [editing, setEditing] = useState<string | null>(null);
  const [error, setError] = useState<ApiError | null>(null);

  const items = state.data?.items ?? [];
  const needle = q.trim().toLowerCase();
  const shown = needle
    ? items.filter((e) => e.key.toLowerCase().includes(needle) || e.value.toLowerCase().includes(needle))
    : items;
  const total = items.reduce((n, e) => n + e.size, 0);

  const remove = async (key: string) => {
    if (!window.confirm(`Delete the state key “${key}”? Later runs no longer see it.`)) return;
    setError(null);
    try {
      await call(client.DELETE('/api/jobs/{id}/state/{key}', keyParams(jobId, key)));
      state.reload();
    } catch (err) {
      setError(asApiError(err));
    }
  };

  return (
    <div className="stack">
      <AddEntry jobId={jobId} existing={items.map((e) => e.key)} onAdded={state.reload} />
      <div className="card">
        <div className="toolbar">
          <h2>State</h2>
          <input
            type="search"
            aria-label="Search state"
            placeholder="Search keys and values"
            value={q}
            onChange={(e) => setParams(e.target.value ? { q: e.target.value } : {}, { replace: true })}
          />
          {state.data && (
            <span className="muted small">
              {items.length} {items.length === 1 ? 'key' : 'keys'} · {byteSize(total)} of 16 MiB
            </span>
          )}
        </div>
        <ErrorBox error={error} />
        <ErrorBox error={state.error} onRetry={state.reload} />
        {!state.data && !state.error && <Spinner />}
        {state.data && items.length === 0 && (
          <Empty title="No state yet">
            Runs keep values here with <code>svc state set KEY VALUE</code>; you can add one above.
          </Empty>
        )}
        {state.data && items.length > 0 && shown.length === 0 && <p className="muted">No key matches “{q}”.</p>}
        {shown.length > 0 && (
          <div className="table-wrap">
            <table className="kv-table">
              <thead>
                <tr>
                  <th scope="col">Key</th>
                  <th scope="col">Value</th>
                  <th scope="col">Size</th>
                  <th scope="col">Updated</th>
                  <th scope="col">
                    <span className="sr-only">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {shown.map((e) =>
                  editing === e.key ? (
                    <tr key={e.key}>
                      <td colSpan={5}>
                        <EditEntry
                          jobId={jobId}
                          entry={e}
                          onDone={() => {
                            setEditing(null);
                            state.reload();
                          }}
                        />
                      </td>
                    </tr>
                  ) : (
                    <tr key={e.key}>
                      <td>
                        <code>{e.key}</code>
                      </td>
                      <td className="value">
                        <code>{e.value}</code>
                      </td>
                      <td className="small">{byteSize(e.size)}</td>
                      <td className="small">{dateTime(e.updatedAt)}</td>
                      <td>
                        <div className="button-group">
                          <button type="button" aria-label={`Edit ${e.key}`} onClick={() => setEditing(e.key)}>
                            Edit
                          </button>
                          <button
                            type="button"
                            className="ghost"
                            aria-label={`Delete ${e.key}`}
                            onClick={() => void remove(e.key)}
                          >
                            Delete
                          </button>
                        </div>
                      </td>
                    </tr>
                  ),
                )}
              </tbody>
            </table>
          </div>
        )}
      </div>
    </div>
  );
}

function AddEntry({ jobId, existing, onAdded }: { jobId: string; existing: string[]; onAdded: () => void }) {
  const [key, setKey] = useState('');
  const [value, setValue] = useState('');
  const [error, setError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);
  const add = async () => {
    setError(null);
    const k = key.trim();
    // PUT overwrites; adding must not replace a value the person did not see, so a taken key is refused here.
    if (existing.includes(k)) {
      setError(
        new ApiError(409, 'exists', 'That key exists already', [
          { field: 'key', code: 'exists', message: `“${k}” exists already: edit it in the list instead` },
        ]),
      );
      return;
    }
    if (k === '') {
      setError(
        new ApiError(400, 'required', 'A key is needed', [
          { field: 'key', code: 'required', message: 'must not be empty' },
        ]),
      );
      return;
    }
    setBusy(true);
    try {
      await call(client.PUT('/api/jobs/{id}/state/{key}', { ...keyParams(jobId, k), body: { value } }));
      setKey('');
      setValue('');
      onAdded();
    } catch (err) {
      setError(asApiError(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form
      className="card form"
      aria-label="Add a state key"
      onSubmit={(e) => {
        e.preventDefault();
        void add();
      }}
    >
      <h2>Add a key</h2>
      <Field label="Key" htmlFor="state-key" error={error?.field('key')}>
        <input
          id="state-key"
          value={key}
          maxLength={200}
          aria-invalid={error?.field('key') !== undefined}
          onChange={(e) => setKey(e.target.value)}
        />
      </Field>
      <Field label="Value" htmlFor="state-value" error={error?.field('value')} hint="Text up to 1 MiB; JSON is fine.">
        <textarea id="state-value" rows={3} value={value} onChange={(e) => setValue(e.target.value)} />
      </Field>
      {error && !error.field('key') && !error.field('value') && <ErrorBox error={error} />}
      <div className="form-actions">
        <button type="submit" className="primary" disabled={busy}>
          Add key
        </button>
      </div>
    </form>
  );
}

function EditEntry({ jobId, entry, onDone }: { jobId: string; entry: StateEntry; onDone: () => void }) {
  const [value, setValue] = useState(entry.value);
  const [error, setError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);
  const save = async () => {
    setError(null);
    setBusy(true);
    try {
      await call(client.PUT('/api/jobs/{id}/state/{key}', { ...keyParams(jobId, entry.key), body: { value } }));
      onDone();
    } catch (err) {
      setError(asApiError(err));
    } finally {
      setBusy(false);
    }
  };
  const id = `state-edit-${entry.key}`;
  return (
    <form
      className="form"
      onSubmit={(e) => {
        e.preventDefault();
        void save();
      }}
    >
      <Field label={`New value of ${entry.key}`} htmlFor={id} error={error?.field('value')}>
        <textarea id={id} rows={4} value={value} autoFocus onChange={(e) => setValue(e.target.value)} />
      </Field>
      {error && !error.field('value') && <ErrorBox error={error} />}
      <div className="form-actions">
        <button type="submit" className="primary" disabled={busy}>
          Save
        </button>
        <button type="button" className="ghost" onClick={onDone}>
          Cancel
        </button>
      </div>
    </form>
  );
}
