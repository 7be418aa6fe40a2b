import { useCallback, useEffect, useRef, useState } from 'react';
import { Link, useNavigate, useParams } from 'react-router-dom';
import { ApiError, asApiError, call, client } from '../api.js';
import { ErrorBox, ModeBadge, Spinner, StatusBadge } from '../components/ui.js';
import { Timeline, type LiveText } from '../components/Timeline.js';
import { cost, dateTime, duration, liveStatuses } from '../format.js';
import { useApi, useRunEvents } from '../hooks.js';
import { Markdown } from '../markdown.js';
import type { EventDto } from '../types.js';

type Delta = { type: string; callId?: string; text: string };

/**
 * A run, live: its timeline comes from the run's event stream, which replays what is stored and then follows the run
 * (the browser resumes it with Last-Event-ID after a drop). A finished run is read once from the events route.
 */
export function RunPage() {
  const { id = '' } = useParams();
  // Keyed by the run: moving to another run (a retry) starts from an empty timeline and a closed stream.
  return <RunView key={id} id={id} />;
}

function RunView({ id }: { id: string }) {
  const navigate = useNavigate();
  const run = useApi(`run ${id}`, (signal) => call(client.GET('/api/runs/{id}', { params: { path: { id } }, signal })));
  const [events, setEvents] = useState<EventDto[]>([]);
  const [live, setLive] = useState<LiveText>({ text: '', reasoning: '', tools: {} });
  const [streamState, setStreamState] = useState<'idle' | 'live' | 'reconnecting' | 'done'>('idle');
  const [timelineError, setTimelineError] = useState<ApiError | null>(null);
  const [actionError, setActionError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);
  const seen = useRef(new Set<number>());
  // Status and reflection changes of this run (a reflection ends after the run's own stream has closed).
  useRunEvents((e) => {
    if (e.runId === id) run.reload();
  });
  const r = run.data;
  const isLive = r ? liveStatuses.has(r.status) : false;
  const loaded = r !== undefined;
  const reloadRun = run.reload;
  const streamDone = streamState === 'done';

  useEffect(() => {
    if (r) document.title = `${r.jobName} #${r.number} · svc`;
  }, [r]);

  // Entries are gathered and handed to React once per frame: a replay of 10,000 stored entries over the stream, or a
  // burst of live ones, renders a few times a second instead of once per message (docs/performance.md, "Web app").
  const pending = useRef<EventDto[]>([]);
  const frame = useRef<number | null>(null);
  useEffect(
    () => () => {
      if (frame.current !== null) cancelAnimationFrame(frame.current);
    },
    [],
  );
  const add = useCallback((list: EventDto[]) => {
    const flush = () => {
      frame.current = null;
      const fresh = pending.current.sort((a, b) => a.seq - b.seq);
      pending.current = [];
      if (fresh.length === 0) return;
      setEvents((old) =>
        old.length === 0 || fresh[0].seq > old[old.length - 1].seq
          ? old.concat(fresh)
          : [...old, ...fresh].sort((a, b) => a.seq - b.seq),
      );
      setLive((l) => {
        let next = l;
        for (const e of fresh) {
          if (e.type === 'llm.call') next = { ...next, text: '', reasoning: '' };
          if (e.type === 'tool.result') {
            const callId = (e.payload as { callId?: string } | null)?.callId;
            if (callId && next.tools[callId] !== undefined) {
              const { [callId]: _done, ...tools } = next.tools;
              next = { ...next, tools };
            }
          }
        }
        return next;
      });
    };
    for (const e of list) {
      if (seen.current.has(e.seq)) continue;
      seen.current.add(e.seq);
      pending.current.push(e);
    }
    if (pending.current.length > 0 && frame.current === null) frame.current = requestAnimationFrame(flush);
  }, []);

  // A finished run: read the stored timeline page by page.
  useEffect(() => {
    if (!loaded || isLive || streamState !== 'idle') return;
    let cancelled = false;
    (async () => {
      let after = 0;
      for (;;) {
        const page = await call(
          client.GET('/api/runs/{id}/events', { params: { path: { id }, query: { after, limit: 2000 } } }),
        );
        if (cancelled) return;
        add(page);
        if (page.length < 2000) break;
        after = page[page.length - 1].seq;
      }
      setStreamState('done');
    })().catch((err: unknown) => !cancelled && setTimelineError(asApiError(err)));
    return () => {
      cancelled = true;
    };
  }, [id, loaded, isLive, streamState, add]);

  // A live run: follow the stream until it ends.
  useEffect(() => {
    if (!loaded || !isLive || streamDone) return;
    // Shown as live once the stream opens (onopen below).
    const source = new EventSource(`/api/runs/${encodeURIComponent(id)}/stream`);
    source.addEventListener('event', (m: MessageEvent<string>) => {
      try {
        add([JSON.parse(m.data) as EventDto]);
      } catch {
        // A malformed message is skipped; the stored timeline stays readable from the events route.
      }
    });
    source.addEventListener('delta', (m: MessageEvent<string>) => {
      let d: Delta;
      try {
        d = JSON.parse(m.data) as Delta;
      } catch {
        return;
      }
      setLive((l) => {
        if (d.type === 'tool_output' && d.callId)
          return { ...l, tools: { ...l.tools, [d.callId]: ((l.tools[d.callId] ?? '') + d.text).slice(-20000) } };
        if (d.type === 'reasoning') return { ...l, reasoning: (l.reasoning + d.text).slice(-20000) };
        if (d.type === 'text') return { ...l, text: (l.text + d.text).slice(-20000) };
        return l;
      });
    });
    source.addEventListener('status', () => reloadRun());
    source.addEventListener('end', () => {
      source.close();
      setStreamState('done');
      setLive({ text: '', reasoning: '', tools: {} });
      reloadRun();
    });
    source.onerror = () => setStreamState(source.readyState === EventSource.CLOSED ? 'done' : 'reconnecting');
    source.onopen = () => setStreamState('live');
    return () => source.close();
  }, [id, loaded, isLive, streamDone, reloadRun, add]);

  const cancel = async () => {
    setBusy(true);
    setActionError(null);
    try {
      await call(client.POST('/api/runs/{id}/cancel', { params: { path: { id } } }));
      run.reload();
    } catch (err) {
      setActionError(asApiError(err));
    } finally {
      setBusy(false);
    }
  };
  const learn = async () => {
    setBusy(true);
    setActionError(null);
    try {
      await call(client.POST('/api/runs/{id}/learn', { params: { path: { id } } }));
      run.reload();
    } catch (err) {
      setActionError(asApiError(err));
    } finally {
      setBusy(false);
    }
  };
  /** The whole timeline as a JSON file, built in the page from what it already holds. */
  const exportTimeline = () => {
    const blob = new Blob([JSON.stringify(events, null, 2)], { type: 'application/json' });
    const url = URL.createObjectURL(blob);
    const a = document.createElement('a');
    a.href = url;
    a.download = `run-${r?.jobName.replace(/[^\w.-]+/g, '_') ?? 'run'}-${r?.number ?? ''}-timeline.json`;
    document.body.append(a);
    a.click();
    a.remove();
    window.setTimeout(() => URL.revokeObjectURL(url), 1000);
  };
  const retry = async () => {
    setBusy(true);
    setActionError(null);
    try {
      const started = await call(client.POST('/api/runs/{id}/retry', { params: { path: { id } } }));
      if (started.runId) navigate(`/runs/${started.runId}`);
      else setActionError(new ApiError(409, 'skipped', 'The retry was skipped: another run of the job is under way.'));
    } catch (err) {
      setActionError(asApiError(err));
    } finally {
      setBusy(false);
    }
  };

  if (run.error && !r) {
    return (
      <section>
        <nav className="crumbs" aria-label="Breadcrumb">
          <Link to="/runs">Runs</Link>
        </nav>
        <ErrorBox error={run.error} onRetry={run.reload} />
      </section>
    );
  }
  if (!r) return <Spinner />;
  return (
    <section>
      <nav className="crumbs" aria-label="Breadcrumb">
        {r.jobDeleted ? <span>{r.jobName}</span> : <Link to={`/jobs/${r.jobId}`}>{r.jobName}</Link>} /{' '}
        <Link to={`/jobs/${r.jobId}/runs`}>Runs</Link> / #{r.number}
      </nav>
      <div className="page-head">
        <h1>
          {r.jobName} <span className="muted">#{r.number}</span> <StatusBadge status={r.status} />
        </h1>
        <div className="button-group">
          {isLive && (
            <button type="button" className="danger" disabled={busy} onClick={() => void cancel()}>
              Cancel run
            </button>
          )}
          {!isLive && (
            <button type="button" disabled={busy || r.jobDeleted} onClick={() => void retry()}>
              Retry
            </button>
          )}
          {['succeeded', 'failed', 'timed_out'].includes(r.status) && r.reflection !== 'pending' && (
            <button
              type="button"
              disabled={busy}
              onClick={() => void learn()}
              title="Reflect on this run and update the playbook"
            >
              Learn from this run
            </button>
          )}
        </div>
      </div>
      <ErrorBox error={actionError} />
      <div className="facts">
        <span>
          <ModeBadge mode={r.mode} />
          {r.fellBack && <span className="badge">fell back to the agent</span>}
        </span>
        <span>trigger {r.trigger}</span>
        <span>queued {dateTime(r.queuedAt)}</span>
        <span>took {duration(r.msTotal)}</span>
        <span>
          {r.turns} turns · {cost(r.cost)}
        </span>
        <span>playbook v{r.playbookVersion}</span>
      </div>
      {r.error && (
        <div className="error-box" role="alert">
          <strong>{r.error}</strong>
        </div>
      )}
      <div className="run-grid">
        <div className="run-main">
          <h2>
            Timeline{' '}
            {streamState === 'live' && (
              <span className="live-dot" role="status">
                live
              </span>
            )}
            {streamState === 'reconnecting' && <span className="muted small">reconnecting…</span>}
            {events.length > 0 && (
              <button type="button" className="ghost small" onClick={exportTimeline}>
                Export JSON
              </button>
            )}
          </h2>
          <ErrorBox error={timelineError} />
          <Timeline events={events} live={live} running={isLive} />
        </div>
        <aside className="run-side">
          <div className="card">
            <h2>Summary</h2>
            {r.summary ? (
              <Markdown source={r.summary} />
            ) : (
              <p className="muted">{isLive ? 'Written when the run ends.' : 'No summary.'}</p>
            )}
          </div>
          <div className="card">
            <h2>Outputs</h2>
            {Object.keys(r.outputs).length === 0 ? (
              <p className="muted">None.</p>
            ) : (
              <dl className="outputs">
                {Object.entries(r.outputs).map(([k, v]) => (
                  <div key={k}>
                    <dt>{k}</dt>
                    <dd>
                      <code>{typeof v === 'string' ? v : JSON.stringify(v)}</code>
                    </dd>
                  </div>
                ))}
              </dl>
            )}
          </div>
          <Artifacts runId={r.id} finished={!isLive} />
          {r.reflectionSummary && (
            <div className="card">
              <h2>What it learned</h2>
              <p className="pre-wrap">{r.reflectionSummary}</p>
              {r.reflectionVersion !== null && (
                <Link to={`/jobs/${r.jobId}/playbook?version=${r.reflectionVersion}`}>
                  Playbook version {r.reflectionVersion}
                </Link>
              )}
            </div>
          )}
          {r.reflection === 'pending' && <p className="muted">Reflecting on this run…</p>}
        </aside>
      </div>
    </section>
  );
}

function Artifacts({ runId, finished }: { runId: string; finished: boolean }) {
  const list = useApi(finished ? `artifacts ${runId}` : null, (signal) =>
    call(client.GET('/api/runs/{id}/artifacts', { params: { path: { id: runId } }, signal })),
  );
  if (!finished || !list.data || list.data.length === 0) return null;
  return (
    <div className="card">
      <h2>Files</h2>
      <ul>
        {list.data.map((a) => (
          <li key={a.name}>
            <a href={`/api/runs/${runId}/artifact?path=${encodeURIComponent(a.name)}`} download>
              {a.name}
            </a>{' '}
            <span className="muted small">{a.size} B</span>
          </li>
        ))}
      </ul>
    </div>
  );
}
