import { useEffect, useId, useState, type FormEvent } from 'react';
import { useSearchParams } from 'react-router-dom';
import { ApiError, asApiError, call, client, type Schemas } from '../api.js';
import '../components/job-tabs.css';
import { Empty, ErrorBox, Field, Spinner, Toggle } from '../components/ui.js';
import { dateTime, relative } from '../format.js';
import { useApi } from '../hooks.js';
import { SettingsNav } from './SettingsNav.js';

type Server = Schemas['McpServerDto'];
type ServerInput = Schemas['McpServerInputBody'];
type TestResult = Schemas['McpTestOutputBody'];
type Auth = Schemas['AuthDto'];

/** A header or variable in the form; `key` keeps React rows stable while rows are added and removed. */
interface Pair {
  key: string;
  name: string;
  value: string;
}

interface FormValues {
  name: string;
  description: string;
  transport: 'stdio' | 'http';
  command: string;
  args: string;
  env: Pair[];
  url: string;
  headers: Pair[];
  clientId: string;
  clientSecret: string;
  scopes: string;
  enabled: boolean;
}

let pairCount = 0;
const pair = (name = '', value = ''): Pair => ({ key: `p${++pairCount}`, name, value });
const pairs = (m: Record<string, string>) => Object.entries(m).map(([k, v]) => pair(k, v));
const record = (rows: Pair[]) =>
  Object.fromEntries(rows.filter((r) => r.name.trim() !== '').map((r) => [r.name.trim(), r.value]));

const empty: FormValues = {
  name: '',
  description: '',
  transport: 'http',
  command: '',
  args: '',
  env: [],
  url: '',
  headers: [],
  clientId: '',
  clientSecret: '',
  scopes: '',
  enabled: true,
};

function valuesOf(s: Server): FormValues {
  return {
    name: s.name,
    description: s.description,
    transport: s.transport,
    command: s.command ?? '',
    args: s.args.join('\n'),
    env: pairs(s.env),
    url: s.url ?? '',
    headers: pairs(s.headers),
    clientId: s.oauth?.clientId ?? '',
    clientSecret: s.oauth?.clientSecret ?? '',
    scopes: (s.oauth?.scopes ?? []).join(' '),
    enabled: s.enabled,
  };
}

/** Only the chosen transport's fields go to the API (it would refuse the other's). */
function inputOf(v: FormValues): ServerInput {
  const common = { name: v.name.trim(), description: v.description.trim(), enabled: v.enabled };
  if (v.transport === 'stdio') {
    return {
      ...common,
      transport: 'stdio',
      command: v.command.trim(),
      args: v.args.split('\n').filter((a) => a.trim() !== ''),
      env: record(v.env),
    };
  }
  const scopes = v.scopes.split(/\s+/).filter(Boolean);
  const oauth =
    v.clientId.trim() || v.clientSecret || scopes.length > 0
      ? {
          ...(v.clientId.trim() ? { clientId: v.clientId.trim() } : {}),
          ...(v.clientSecret ? { clientSecret: v.clientSecret } : {}),
          ...(scopes.length > 0 ? { scopes } : {}),
        }
      : null;
  return { ...common, transport: 'http', url: v.url.trim(), headers: record(v.headers), oauth };
}

/** What the login state means for a person (the API's AuthDto status). */
function authText(a: Auth): string {
  switch (a.status) {
    case 'unsupported':
      // A stdio server, or an HTTP server that asked for no credentials when it was last tested.
      return 'No login needed';
    case 'unknown':
      return 'Not tested yet';
    case 'bearer_token':
      return 'Authorization header set';
    case 'not_logged_in':
      return 'Needs a login';
    case 'oauth':
      return `Logged in ${a.loggedInAt ? relative(a.loggedInAt) : ''}${
        a.expiresAt ? ` · token expires ${dateTime(a.expiresAt)}${a.refreshable ? ', renewed on its own' : ''}` : ''
      }`;
  }
}

/**
 * The workspace's MCP servers: add (stdio or HTTP, only the chosen transport's fields), test with the tool list,
 * OAuth login and logout, edit and delete. Header and variable values are password fields: they may be tokens.
 * An OAuth login comes back here from the authorization server (`/mcp?login=ok` or `?error=...`).
 */
export function McpServersPage() {
  const [params, setParams] = useSearchParams();
  const list = useApi('mcp-servers', (signal) =>
    call(client.GET('/api/mcp-servers', { params: { query: { pageSize: 100, sort: 'name' } }, signal })),
  );
  const [adding, setAdding] = useState(false);
  const loginOk = params.get('login') === 'ok';
  const loginError = params.get('error');

  useEffect(() => {
    document.title = 'MCP servers · svc';
  }, []);

  return (
    <section>
      <h1>Settings</h1>
      <SettingsNav />
      <div className="narrow stack">
        {loginOk && (
          <div className="notice ok" role="status">
            The MCP server login succeeded; jobs granted this server use it from their next run.{' '}
            <button type="button" className="link" onClick={() => setParams({}, { replace: true })}>
              Dismiss
            </button>
          </div>
        )}
        {loginError && (
          <div className="error-box" role="alert">
            <strong>The login did not complete: {loginError.replace(/_/g, ' ')}</strong>
          </div>
        )}
        {adding ? (
          <ServerForm
            title="Add an MCP server"
            initial={empty}
            submitLabel="Add server"
            onCancel={() => setAdding(false)}
            onSubmit={async (body) => {
              await call(client.POST('/api/mcp-servers', { body }));
              setAdding(false);
              list.reload();
            }}
          />
        ) : (
          <div>
            <button type="button" className="primary" onClick={() => setAdding(true)}>
              Add an MCP server
            </button>
          </div>
        )}
        <ErrorBox error={list.error} onRetry={list.reload} />
        {!list.data && !list.error && <Spinner />}
        {list.data && list.data.total === 0 && !adding && (
          <Empty title="No MCP servers yet">
            Add a server to give jobs its tools: an HTTP endpoint reached from this host, or a program started inside
            the run&apos;s sandbox.
          </Empty>
        )}
        {list.data?.items.map((s) => (
          <ServerCard key={s.id} server={s} onChange={list.reload} />
        ))}
      </div>
    </section>
  );
}

function ServerCard({ server, onChange }: { server: Server; onChange: () => void }) {
  const [editing, setEditing] = useState(false);
  const [test, setTest] = useState<TestResult | null>(null);
  const [busy, setBusy] = useState<'test' | 'login' | 'logout' | 'delete' | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const path = { params: { path: { id: server.id } } };

  const act = async (what: NonNullable<typeof busy>, fn: () => Promise<void>) => {
    setBusy(what);
    setError(null);
    try {
      await fn();
    } catch (err) {
      setError(asApiError(err));
    } finally {
      setBusy(null);
    }
  };
  const runTest = () =>
    act('test', async () => {
      setTest(await call(client.POST('/api/mcp-servers/{id}/test', path)));
      onChange();
    });
  const login = () =>
    act('login', async () => {
      const { authorizationUrl } = await call(client.POST('/api/mcp-servers/{id}/oauth/login', path));
      // Only a web address is followed: a `javascript:` or `data:` URL from a hostile server's metadata would run here.
      let target: URL | null;
      try {
        target = new URL(authorizationUrl);
      } catch {
        target = null;
      }
      if (!target || (target.protocol !== 'https:' && target.protocol !== 'http:'))
        throw new ApiError(
          0,
          'unsafe_authorization_url',
          'The server named an authorization address that is not a web address; it was not opened.',
        );
      window.location.assign(target.href);
    });
  const logout = () =>
    act('logout', async () => {
      await call(client.DELETE('/api/mcp-servers/{id}/oauth', path));
      setTest(null);
      onChange();
    });
  const remove = () => {
    if (!window.confirm(`Delete the MCP server ${server.name}? Jobs granted it lose it from their next run.`)) return;
    void act('delete', async () => {
      await call(client.DELETE('/api/mcp-servers/{id}', path));
      onChange();
    });
  };

  if (editing)
    return (
      <ServerForm
        title={`Edit ${server.name}`}
        initial={valuesOf(server)}
        submitLabel="Save changes"
        onCancel={() => setEditing(false)}
        onSubmit={async (body) => {
          await call(client.PUT('/api/mcp-servers/{id}', { ...path, body }));
          setEditing(false);
          setTest(null);
          onChange();
        }}
      />
    );

  const tools = test?.tools ?? server.tools;
  const auth = test?.auth ?? server.auth;
  // A login is offered where the server asked for one, may ask (never tested), or already has one to renew.
  const canLogin =
    server.transport === 'http' &&
    (auth.status === 'not_logged_in' || auth.status === 'unknown' || auth.status === 'oauth');
  return (
    <article className="card" aria-label={`MCP server ${server.name}`}>
      <div className="toolbar">
        <h2>
          {server.name} <span className="badge">{server.transport === 'http' ? 'HTTP' : 'stdio'}</span>
          {!server.enabled && <span className="badge">disabled</span>}
        </h2>
      </div>
      {server.description && <p>{server.description}</p>}
      <dl className="facts">
        <dt>{server.transport === 'http' ? 'URL' : 'Command'}</dt>
        <dd>
          <code>{server.transport === 'http' ? server.url : [server.command, ...server.args].join(' ')}</code>
        </dd>
        {Object.keys(server.transport === 'http' ? server.headers : server.env).length > 0 && (
          <>
            <dt>{server.transport === 'http' ? 'Headers' : 'Environment'}</dt>
            <dd>
              {Object.keys(server.transport === 'http' ? server.headers : server.env).join(', ')}{' '}
              <span className="muted small">(values hidden)</span>
            </dd>
          </>
        )}
        <dt>Login</dt>
        <dd data-testid="auth-status">{authText(auth)}</dd>
        <dt>Tools</dt>
        <dd>
          {tools === null
            ? 'not known yet: test the server'
            : `${tools.length}${server.toolsCachedAt ? `, as of ${relative(server.toolsCachedAt)}` : ''}`}
        </dd>
      </dl>
      {test && (
        <div className={test.ok ? 'notice ok' : 'error-box'} role={test.ok ? 'status' : 'alert'}>
          {test.ok
            ? `Connected in ${test.latencyMs} ms: ${test.tools.length} tool${test.tools.length === 1 ? '' : 's'}.`
            : `${server.name} could not be reached: ${test.error ?? 'no answer'}`}
        </div>
      )}
      {test?.ok && test.tools.length > 0 && (
        <ul className="tool-list" aria-label={`Tools of ${server.name}`}>
          {test.tools.map((t) => (
            <li key={t.name}>
              <code>{t.name}</code> {t.readOnly && <span className="badge">read-only</span>}
              {t.destructive && !t.readOnly && <span className="badge status-failed">destructive</span>}{' '}
              <span className="muted small">{t.description}</span>
            </li>
          ))}
        </ul>
      )}
      <ErrorBox error={error} />
      <div className="form-actions">
        <button type="button" className="primary" disabled={busy !== null} onClick={() => void runTest()}>
          {busy === 'test' ? 'Testing…' : 'Test'}
        </button>
        {canLogin && (
          <button type="button" disabled={busy !== null} onClick={() => void login()}>
            {auth.status === 'oauth' ? 'Log in again' : 'Log in'}
          </button>
        )}
        {auth.status === 'oauth' && (
          <button type="button" disabled={busy !== null} onClick={() => void logout()}>
            Log out
          </button>
        )}
        <button type="button" disabled={busy !== null} onClick={() => setEditing(true)}>
          Edit
        </button>
        <button type="button" className="danger" disabled={busy !== null} onClick={remove}>
          Delete
        </button>
      </div>
    </article>
  );
}

function ServerForm({
  title,
  initial,
  submitLabel,
  onSubmit,
  onCancel,
}: {
  title: string;
  initial: FormValues;
  submitLabel: string;
  onSubmit: (body: ServerInput) => Promise<void>;
  onCancel: () => void;
}) {
  const [v, setV] = useState(initial);
  const [error, setError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);
  const id = useId();
  const set = (changes: Partial<FormValues>) => setV((old) => ({ ...old, ...changes }));

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await onSubmit(inputOf(v));
    } catch (err) {
      setError(asApiError(err));
      setBusy(false);
    }
  };
  const http = v.transport === 'http';
  // Field errors the form has no place for (a header's name, say) are listed at the top.
  const placed = ['name', 'description', 'transport', 'command', 'args', 'url'];
  const unplaced = error && error.fields.some((f) => !placed.includes(f.field)) ? error : null;
  return (
    <form className="card form" onSubmit={(e) => void submit(e)} autoComplete="off" aria-label={title}>
      <h2>{title}</h2>
      {error && error.fields.length === 0 && <ErrorBox error={error} />}
      <ErrorBox error={unplaced} />
      <div className="row">
        <Field label="Name" htmlFor={`${id}-name`} error={error?.field('name')} hint="Letters, digits, - and _">
          <input id={`${id}-name`} value={v.name} maxLength={64} onChange={(e) => set({ name: e.target.value })} />
        </Field>
        <Field label="Description" htmlFor={`${id}-description`} error={error?.field('description')}>
          <input
            id={`${id}-description`}
            value={v.description}
            onChange={(e) => set({ description: e.target.value })}
          />
        </Field>
      </div>
      <fieldset>
        <legend>Transport</legend>
        <label>
          <input type="radio" name={`${id}-transport`} checked={http} onChange={() => set({ transport: 'http' })} />{' '}
          HTTP (reached from this host)
        </label>{' '}
        <label>
          <input type="radio" name={`${id}-transport`} checked={!http} onChange={() => set({ transport: 'stdio' })} />{' '}
          stdio (a program started in the run&apos;s sandbox)
        </label>
      </fieldset>
      {http ? (
        <>
          <Field label="URL" htmlFor={`${id}-url`} error={error?.field('url')} hint="The Streamable HTTP endpoint">
            <input
              id={`${id}-url`}
              type="url"
              value={v.url}
              placeholder="https://mcp.example.com/mcp"
              onChange={(e) => set({ url: e.target.value })}
            />
          </Field>
          <Pairs
            label="Headers"
            noun="header"
            rows={v.headers}
            onChange={(headers) => set({ headers })}
            hint="Values may be {{secret:NAME}}. An Authorization header replaces an OAuth login."
          />
          <details>
            <summary>OAuth client (optional)</summary>
            <p className="hint">
              Without a client id the service registers itself with the authorization server when you log in.
            </p>
            <div className="row">
              <Field label="Client id" htmlFor={`${id}-client-id`}>
                <input id={`${id}-client-id`} value={v.clientId} onChange={(e) => set({ clientId: e.target.value })} />
              </Field>
              <Field label="Client secret" htmlFor={`${id}-client-secret`} hint="May be {{secret:NAME}}">
                <input
                  id={`${id}-client-secret`}
                  type="password"
                  autoComplete="new-password"
                  value={v.clientSecret}
                  onChange={(e) => set({ clientSecret: e.target.value })}
                />
              </Field>
            </div>
            <Field label="Scopes" htmlFor={`${id}-scopes`} hint="Separated by spaces">
              <input id={`${id}-scopes`} value={v.scopes} onChange={(e) => set({ scopes: e.target.value })} />
            </Field>
          </details>
        </>
      ) : (
        <>
          <Field label="Command" htmlFor={`${id}-command`} error={error?.field('command')}>
            <input
              id={`${id}-command`}
              value={v.command}
              placeholder="npx"
              onChange={(e) => set({ command: e.target.value })}
            />
          </Field>
          <Field label="Arguments" htmlFor={`${id}-args`} error={error?.field('args')} hint="One per line">
            <textarea id={`${id}-args`} rows={3} value={v.args} onChange={(e) => set({ args: e.target.value })} />
          </Field>
          <Pairs
            label="Environment"
            noun="variable"
            rows={v.env}
            onChange={(env) => set({ env })}
            hint="Values may be {{secret:NAME}}."
          />
        </>
      )}
      <Toggle label="Enabled" checked={v.enabled} onChange={(enabled) => set({ enabled })} />
      <span className="small">Enabled: jobs granted it can use it</span>
      <div className="form-actions">
        <button type="submit" className="primary" disabled={busy}>
          {submitLabel}
        </button>
        <button type="button" className="ghost" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

/** Name and value rows (headers, environment); values are password fields, since they may be tokens. */
function Pairs({
  label,
  noun,
  rows,
  onChange,
  hint,
}: {
  label: string;
  noun: string;
  rows: Pair[];
  onChange: (rows: Pair[]) => void;
  hint: string;
}) {
  const update = (key: string, changes: Partial<Pair>) =>
    onChange(rows.map((r) => (r.key === key ? { ...r, ...changes } : r)));
  return (
    <fieldset>
      <legend>{label}</legend>
      {rows.map((r, i) => (
        <div className="row" key={r.key}>
          <input
            aria-label={`${label} ${i + 1} name`}
            value={r.name}
            onChange={(e) => update(r.key, { name: e.target.value })}
          />
          <input
            aria-label={`${label} ${i + 1} value`}
            type="password"
            autoComplete="new-password"
            value={r.value}
            onChange={(e) => update(r.key, { value: e.target.value })}
          />
          <button type="button" className="ghost" onClick={() => onChange(rows.filter((x) => x.key !== r.key))}>
            Remove
            <span className="sr-only">
              {' '}
              {noun} {i + 1}
            </span>
          </button>
        </div>
      ))}
      <button type="button" onClick={() => onChange([...rows, pair()])}>
        Add a {noun}
      </button>
      <div className="hint">{hint}</div>
    </fieldset>
  );
}
