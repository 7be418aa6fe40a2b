import { useState } from 'react';
import { Link } from 'react-router-dom';
import { ApiError, asApiError, call, client, type Schemas } from '../api.js';
import '../components/job-tabs.css';
import { Empty, ErrorBox, Spinner } from '../components/ui.js';
import { relative } from '../format.js';
import { useApi } from '../hooks.js';
import type { JobDto } from '../types.js';

type Server = Schemas['McpServerDto'];
type Grant = Schemas['JobServer'];

/** One server's grant in the form: not granted, every tool (also ones added later), or the tools ticked. */
type Choice = { granted: false } | { granted: true; all: true } | { granted: true; all: false; tools: string[] };

const choiceOf = (g: Grant | undefined): Choice =>
  !g
    ? { granted: false }
    : g.allowedTools === null
      ? { granted: true, all: true }
      : { granted: true, all: false, tools: g.allowedTools };

/**
 * Which MCP servers the job's runs may use, and which of their tools: a server granted with "every tool" also gets
 * tools the server adds later; otherwise only the tools ticked here (the tool lists come from the servers' last
 * test, which this tab can run).
 */
export function ToolsTab({ job }: { job: JobDto }) {
  const grants = useApi(`grants ${job.id}`, (signal) =>
    call(client.GET('/api/jobs/{id}/mcp-servers', { params: { path: { id: job.id } }, signal })),
  );
  const servers = useApi('mcp-servers', (signal) =>
    call(client.GET('/api/mcp-servers', { params: { query: { pageSize: 100 } }, signal })),
  );
  // What the person changed since the grants were read; null: the grants as saved.
  const [edits, setEdits] = useState<Record<string, Choice> | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [saved, setSaved] = useState(false);
  const [busy, setBusy] = useState(false);
  const [testing, setTesting] = useState<string | null>(null);

  const asSaved = grants.data ? Object.fromEntries(grants.data.map((g) => [g.serverId, choiceOf(g)])) : null;
  const choices = edits ?? asSaved;

  const set = (serverId: string, c: Choice) => {
    setSaved(false);
    setEdits({ ...choices, [serverId]: c });
  };

  const save = async () => {
    if (!choices) return;
    setError(null);
    setSaved(false);
    const body: Grant[] = [];
    for (const [serverId, c] of Object.entries(choices)) {
      if (!c.granted) continue;
      body.push({ serverId, allowedTools: c.all ? null : c.tools });
    }
    setBusy(true);
    try {
      await call(client.PUT('/api/jobs/{id}/mcp-servers', { params: { path: { id: job.id } }, body }));
      // The edits stay as they are: they are what was saved now.
      setSaved(true);
      grants.reload();
    } catch (err) {
      setError(asApiError(err));
    } finally {
      setBusy(false);
    }
  };

  const test = async (server: Server) => {
    setError(null);
    setTesting(server.id);
    try {
      const r = await call(client.POST('/api/mcp-servers/{id}/test', { params: { path: { id: server.id } } }));
      if (!r.ok)
        setError(
          new ApiError(502, 'mcp_test_failed', `${server.name} could not be reached: ${r.error ?? 'no answer'}`),
        );
      servers.reload();
    } catch (err) {
      setError(asApiError(err));
    } finally {
      setTesting(null);
    }
  };

  const needs = job.spec.mcp ?? [];
  const list = servers.data?.items ?? [];
  const known = new Set(list.map((s) => s.id));
  // A grant of a server that no longer exists is kept out of the form; saving drops it.
  const loading = (!servers.data && !servers.error) || (!grants.data && !grants.error) || choices === null;

  return (
    <form
      className="stack"
      aria-label="MCP tools"
      onSubmit={(e) => {
        e.preventDefault();
        void save();
      }}
    >
      {needs.length > 0 && (
        <div className="card">
          <h2>What the job asked for</h2>
          <ul>
            {needs.map((n) => (
              <li key={n.server}>
                <strong>{n.server}</strong>: {n.why}
              </li>
            ))}
          </ul>
        </div>
      )}
      <ErrorBox error={servers.error} onRetry={servers.reload} />
      <ErrorBox error={grants.error} onRetry={grants.reload} />
      {loading && !servers.error && !grants.error && <Spinner />}
      {!loading && list.length === 0 && (
        <Empty title="No MCP servers yet">
          Register one under <Link to="/settings">Settings</Link> to give this job its tools.
        </Empty>
      )}
      {!loading &&
        choices &&
        list.map((s) => {
          const c = choices[s.id] ?? { granted: false };
          return (
            <fieldset key={s.id} className="card">
              <legend>
                <label>
                  <input
                    type="checkbox"
                    checked={c.granted}
                    onChange={(e) => set(s.id, e.target.checked ? { granted: true, all: true } : { granted: false })}
                  />{' '}
                  Grant {s.name}
                </label>{' '}
                <span className="badge">{s.transport}</span> {!s.enabled && <span className="badge">disabled</span>}
              </legend>
              {s.description && <p className="muted small">{s.description}</p>}
              {!s.enabled && <p className="muted small">Disabled servers are skipped by runs.</p>}
              {c.granted && (
                <div className="checks">
                  <label>
                    <input
                      type="radio"
                      name={`tools-${s.id}`}
                      checked={c.all}
                      onChange={() => set(s.id, { granted: true, all: true })}
                    />{' '}
                    Every tool of {s.name}, including tools it adds later
                  </label>
                  <label>
                    <input
                      type="radio"
                      name={`tools-${s.id}`}
                      checked={!c.all}
                      onChange={() =>
                        set(s.id, {
                          granted: true,
                          all: false,
                          // Narrowing starts from the read-only tools: the safe set, widened by hand.
                          tools: (s.tools ?? []).filter((t) => t.readOnly).map((t) => t.name),
                        })
                      }
                    />{' '}
                    Only the tools chosen below
                  </label>
                </div>
              )}
              {c.granted && !c.all && (
                <ToolPicker
                  server={s}
                  chosen={c.tools}
                  onChange={(tools) => set(s.id, { granted: true, all: false, tools })}
                />
              )}
              <div className="small muted">
                {s.tools === null
                  ? 'Tools not listed yet.'
                  : `${s.tools.length} tools, listed ${relative(s.toolsCachedAt)}.`}{' '}
                <button type="button" className="link" disabled={testing !== null} onClick={() => void test(s)}>
                  {testing === s.id ? 'Testing…' : s.tools === null ? 'Test to list its tools' : 'Test again'}
                </button>
              </div>
            </fieldset>
          );
        })}
      {grants.data?.some((g) => !known.has(g.serverId)) && servers.data && (
        <p className="muted small">Grants of servers that were deleted are dropped on the next save.</p>
      )}
      <ErrorBox error={error} />
      {saved && (
        <div className="notice ok" role="status">
          Saved: the next runs get these tools.
        </div>
      )}
      {!loading && list.length > 0 && (
        <div className="form-actions">
          <button type="submit" className="primary" disabled={busy}>
            Save tools
          </button>
        </div>
      )}
    </form>
  );
}

function ToolPicker({
  server,
  chosen,
  onChange,
}: {
  server: Server;
  chosen: string[];
  onChange: (tools: string[]) => void;
}) {
  const tools = server.tools ?? [];
  // Tools granted earlier that the server no longer lists stay visible, so saving does not drop them unseen.
  const gone = chosen.filter((n) => !tools.some((t) => t.name === n));
  const toggle = (name: string, on: boolean) =>
    onChange(on ? [...chosen.filter((n) => n !== name), name] : chosen.filter((n) => n !== name));
  if (tools.length === 0 && gone.length === 0)
    return <p className="muted small">Test the server to list its tools, then choose them here.</p>;
  return (
    <ul className="tool-list" aria-label={`Tools of ${server.name}`}>
      {tools.map((t) => (
        <li key={t.name}>
          <label>
            <input
              type="checkbox"
              checked={chosen.includes(t.name)}
              onChange={(e) => toggle(t.name, e.target.checked)}
            />
            <code>{t.name}</code>
            {t.readOnly && <span className="badge">read-only</span>}
            {t.destructive && !t.readOnly && <span className="badge status-failed">destructive</span>}
            <span className="muted small">{t.description}</span>
          </label>
        </li>
      ))}
      {gone.map((n) => (
        <li key={n}>
          <label>
            <input type="checkbox" checked onChange={(e) => toggle(n, e.target.checked)} />
            <code>{n}</code> <span className="muted small">no longer listed by the server</span>
          </label>
        </li>
      ))}
    </ul>
  );
}
