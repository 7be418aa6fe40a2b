import { useEffect, useState, type FormEvent } from 'react';
import { ApiError, asApiError, call, client, type Schemas } from '../api.js';
import { Empty, ErrorBox, Field, Spinner, Toggle } from '../components/ui.js';
import { relative } from '../format.js';
import { useApi } from '../hooks.js';
import { SettingsNav } from './SettingsNav.js';

type Provider = Schemas['ProviderDto'];
type Model = Schemas['ModelDto'];
type Kind = Schemas['ProviderKind'];
type Price = Schemas['Price'];
type Role = 'agentModelId' | 'utilityModelId' | 'reflectionModelId';

const roles: Array<{ key: Role; label: string; hint: string }> = [
  { key: 'agentModelId', label: 'Agent', hint: 'Runs the jobs' },
  { key: 'utilityModelId', label: 'Utility', hint: 'Compiles sentences into jobs' },
  { key: 'reflectionModelId', label: 'Reflection', hint: 'Learns from finished runs' },
];

/** Prices are stored in micro-USD per million tokens and shown in USD per million tokens. */
const usd = (micro: number) => (micro / 1_000_000).toString();
const micro = (text: string) => Math.round(Number(text) * 1_000_000);

/**
 * Model providers and their models: add a provider, sync its model list, enable models, test one, set prices, and
 * choose the workspace's default models. API keys go to the server once, in a password field, and are never read
 * back (the API answers only whether one is set).
 */
export function ProvidersPage() {
  const providers = useApi('providers', (signal) =>
    call(client.GET('/api/providers', { params: { query: { pageSize: 100 } }, signal })),
  );
  const models = useApi('models', (signal) =>
    call(client.GET('/api/models', { params: { query: { pageSize: 100 } }, signal })),
  );
  const reloadAll = () => {
    providers.reload();
    models.reload();
  };
  useEffect(() => {
    document.title = 'Providers and models · svc';
  }, []);
  const error = providers.error ?? models.error;
  return (
    <section>
      <h1>Settings</h1>
      <SettingsNav />
      <div className="stack">
        <Defaults models={models.data?.items ?? []} />
        <AddProvider onAdded={reloadAll} />
        <ErrorBox error={error} onRetry={reloadAll} />
        {!providers.data && !error && <Spinner />}
        {providers.data?.total === 0 && (
          <Empty title="No model providers yet">Add an Anthropic or OpenAI-compatible provider to run jobs.</Empty>
        )}
        {providers.data?.items.map((p) => (
          <ProviderCard
            key={p.id}
            provider={p}
            models={(models.data?.items ?? []).filter((m) => m.providerId === p.id)}
            onChange={reloadAll}
          />
        ))}
      </div>
    </section>
  );
}

function Defaults({ models }: { models: Model[] }) {
  const settings = useApi('settings', (signal) => call(client.GET('/api/settings', { signal })));
  const [error, setError] = useState<ApiError | null>(null);
  const [saved, setSaved] = useState('');
  const enabled = models.filter((m) => m.enabled);
  const choose = async (role: Role, id: string) => {
    setError(null);
    setSaved('');
    try {
      await call(client.PATCH('/api/settings', { body: { [role]: id === '' ? null : id } }));
      setSaved(`Saved the ${roles.find((r) => r.key === role)?.label.toLowerCase() ?? ''} model.`);
      settings.reload();
    } catch (err) {
      setError(asApiError(err));
    }
  };
  return (
    <div className="card">
      <h2>Default models</h2>
      <ErrorBox error={error ?? settings.error} />
      {saved && (
        <div className="notice ok" role="status">
          {saved}
        </div>
      )}
      <div className="row">
        {roles.map((r) => (
          <Field key={r.key} label={r.label} htmlFor={`default-${r.key}`} hint={r.hint}>
            <select
              id={`default-${r.key}`}
              value={settings.data?.[r.key] ?? ''}
              disabled={!settings.data}
              onChange={(e) => void choose(r.key, e.target.value)}
            >
              <option value="">None</option>
              {enabled.map((m) => (
                <option key={m.id} value={m.id}>
                  {m.label ?? m.model} ({m.providerName})
                </option>
              ))}
            </select>
          </Field>
        ))}
      </div>
    </div>
  );
}

function AddProvider({ onAdded }: { onAdded: () => void }) {
  const [name, setName] = useState('');
  const [kind, setKind] = useState<Kind>('anthropic');
  const [apiKey, setApiKey] = useState('');
  const [baseUrl, setBaseUrl] = useState('');
  const [error, setError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await call(
        client.POST('/api/providers', {
          body: {
            name: name.trim(),
            kind,
            ...(apiKey ? { apiKey } : {}),
            ...(baseUrl.trim() ? { baseUrl: baseUrl.trim() } : {}),
          },
        }),
      );
      setName('');
      setApiKey('');
      setBaseUrl('');
      onAdded();
    } catch (err) {
      setError(asApiError(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form className="card form" onSubmit={(e) => void submit(e)} autoComplete="off" aria-label="Add a provider">
      <h2>Add a provider</h2>
      {error && error.fields.length === 0 && <ErrorBox error={error} />}
      <div className="row">
        <Field label="Name" htmlFor="provider-name" error={error?.field('name')}>
          <input id="provider-name" value={name} onChange={(e) => setName(e.target.value)} />
        </Field>
        <Field label="Kind" htmlFor="provider-kind" error={error?.field('kind')}>
          <select id="provider-kind" value={kind} onChange={(e) => setKind(e.target.value as Kind)}>
            <option value="anthropic">Anthropic</option>
            <option value="openai">OpenAI-compatible</option>
            <option value="fake">Fake (tests and demos)</option>
          </select>
        </Field>
      </div>
      <div className="row">
        <Field label="API key" htmlFor="provider-key" error={error?.field('apiKey')} hint="Never shown again">
          <input
            id="provider-key"
            type="password"
            autoComplete="new-password"
            value={apiKey}
            onChange={(e) => setApiKey(e.target.value)}
          />
        </Field>
        <Field label="Base URL" htmlFor="provider-url" error={error?.field('baseUrl')} hint="Empty: the vendor's own">
          <input id="provider-url" type="url" value={baseUrl} onChange={(e) => setBaseUrl(e.target.value)} />
        </Field>
      </div>
      <div className="form-actions">
        <button type="submit" className="primary" disabled={busy || name.trim() === ''}>
          Add provider
        </button>
      </div>
    </form>
  );
}

function ProviderCard({ provider, models, onChange }: { provider: Provider; models: Model[]; onChange: () => void }) {
  const [error, setError] = useState<ApiError | null>(null);
  const [notice, setNotice] = useState('');
  const [busy, setBusy] = useState(false);
  const path = { params: { path: { id: provider.id } } };
  const act = async (fn: () => Promise<void>) => {
    setBusy(true);
    setError(null);
    setNotice('');
    try {
      await fn();
    } catch (err) {
      setError(asApiError(err));
    } finally {
      setBusy(false);
    }
  };
  const sync = () =>
    act(async () => {
      const r = await call(client.POST('/api/providers/{id}/sync', path));
      if (r.error) setError(new ApiError(502, 'sync_failed', `The model list could not be read: ${r.error}`));
      else setNotice(`Synced: ${r.added} added, ${r.updated} updated, ${r.unlisted} no longer listed.`);
      onChange();
    });
  const enableAll = (enabled: boolean) =>
    act(async () => {
      const r = await call(client.PUT('/api/providers/{id}/models/enabled', { ...path, body: { enabled } }));
      setNotice(`${enabled ? 'Enabled' : 'Disabled'} ${r.changed} model${r.changed === 1 ? '' : 's'}.`);
      onChange();
    });
  const remove = () => {
    if (!window.confirm(`Delete the provider ${provider.name} and its models?`)) return;
    void act(async () => {
      await call(client.DELETE('/api/providers/{id}', path));
      onChange();
    });
  };
  return (
    <article className="card" aria-label={`Provider ${provider.name}`}>
      <h2>
        {provider.name} <span className="badge">{provider.kind}</span>
      </h2>
      <p className="muted small">
        {provider.baseUrl ?? 'vendor URL'} · {provider.hasApiKey ? 'API key set' : 'no API key'} ·{' '}
        {provider.syncedAt ? `synced ${relative(provider.syncedAt)}` : 'never synced'}
      </p>
      {provider.syncError && <div className="error-box">Last sync failed: {provider.syncError}</div>}
      {notice && (
        <div className="notice ok" role="status">
          {notice}
        </div>
      )}
      <ErrorBox error={error} />
      <div className="form-actions">
        <button type="button" disabled={busy} onClick={() => void sync()}>
          Sync models
        </button>
        <button type="button" disabled={busy} onClick={() => void enableAll(true)}>
          Enable all
        </button>
        <button type="button" disabled={busy} onClick={() => void enableAll(false)}>
          Disable all
        </button>
        <button type="button" className="danger" disabled={busy} onClick={remove}>
          Delete
        </button>
      </div>
      {models.length > 0 && (
        <div className="table-wrap">
          <table aria-label={`Models of ${provider.name}`}>
            <thead>
              <tr>
                <th scope="col">Model</th>
                <th scope="col">Enabled</th>
                <th scope="col">USD per 1M tokens in / out</th>
                <th scope="col">
                  <span className="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {models.map((m) => (
                <ModelRow key={m.id} model={m} onChange={onChange} />
              ))}
            </tbody>
          </table>
        </div>
      )}
    </article>
  );
}

function ModelRow({ model, onChange }: { model: Model; onChange: () => void }) {
  const [error, setError] = useState<ApiError | null>(null);
  const [result, setResult] = useState('');
  const [editing, setEditing] = useState(false);
  const [price, setPrice] = useState({ in: usd(model.price.in), out: usd(model.price.out) });
  const name = model.label ?? model.model;
  const path = { params: { path: { id: model.id } } };
  const patch = async (body: { enabled?: boolean; price?: Price }) => {
    setError(null);
    try {
      await call(client.PATCH('/api/models/{id}', { ...path, body }));
      onChange();
      return true;
    } catch (err) {
      setError(asApiError(err));
      return false;
    }
  };
  const test = async () => {
    setError(null);
    setResult('Testing…');
    try {
      const r = await call(
        client.POST('/api/providers/{id}/test', {
          params: { path: { id: model.providerId } },
          body: { modelId: model.id },
        }),
      );
      setResult(r.ok ? `Answered in ${r.latencyMs} ms` : `Failed: ${r.error ?? 'no answer'}`);
    } catch (err) {
      setResult('');
      setError(asApiError(err));
    }
  };
  const savePrice = async (e: FormEvent) => {
    e.preventDefault();
    if (await patch({ price: { ...model.price, in: micro(price.in), out: micro(price.out) } })) setEditing(false);
  };
  return (
    <tr>
      <td data-label="Model">
        <code>{model.model}</code>
        {model.label && <span className="muted small"> {model.label}</span>}
        {model.unlistedAt && <span className="badge">no longer listed</span>}
        {result && (
          <div className="small" role="status">
            {result}
          </div>
        )}
        <ErrorBox error={error} />
      </td>
      <td data-label="Enabled">
        <Toggle label={`Enable ${name}`} checked={model.enabled} onChange={(enabled) => void patch({ enabled })} />
      </td>
      <td data-label="Price">
        {editing ? (
          <form className="inline-form" onSubmit={(e) => void savePrice(e)}>
            <input
              aria-label={`Input price of ${name}`}
              inputMode="decimal"
              value={price.in}
              onChange={(e) => setPrice({ ...price, in: e.target.value })}
            />
            <input
              aria-label={`Output price of ${name}`}
              inputMode="decimal"
              value={price.out}
              onChange={(e) => setPrice({ ...price, out: e.target.value })}
            />
            <button type="submit" className="primary">
              Save
            </button>
            <button type="button" className="ghost" onClick={() => setEditing(false)}>
              Cancel
            </button>
          </form>
        ) : (
          <span>
            {usd(model.price.in)} / {usd(model.price.out)}
            {!model.followCatalog && <span className="muted small"> (set here)</span>}
          </span>
        )}
      </td>
      <td className="actions">
        <button type="button" onClick={() => void test()} aria-label={`Test ${name}`}>
          Test
        </button>{' '}
        {!editing && (
          <button type="button" onClick={() => setEditing(true)} aria-label={`Edit the price of ${name}`}>
            Price
          </button>
        )}
      </td>
    </tr>
  );
}
