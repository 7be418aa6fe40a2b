import { useCallback, useEffect, useRef, useState } from 'react';
import { Link, useNavigate, useParams, useSearchParams } from 'react-router-dom';
import { ApiError, asApiError, call, client } from '../api.js';
import { ErrorBox, ModeBadge, Spinner, StatusBadge } from '../components/ui.js';
import { Timeline, type LiveText } from '../components/Timeline.js';
import { Waterfall } from '../components/Waterfall.js';
import type { Schemas } from '../api.js';
import { cost, dateTime, duration, liveStatuses } from '../format.js';
import { useApi, useRunEvents } from '../hooks.js';
import { Markdown } from '../markdown.js';
import { byteSize } from '../components/byte-size.js';
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
  const [params, setParams] = useSearchParams();
  const view = params.get('tab') === 'waterfall' ? 'waterfall' : 'timeline';
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
  // burst of live ones, renders a few times a second instead of once per message (docs/performance.md, "Web app budgets").
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
      // The route's largest pages. (A small first page showed the start sooner, but the page then opened a few rows
      // down the timeline: see docs/performance.md, "Web app budgets".)
      for (const limit = 2000; ;) {
        const page = await call(
          client.GET('/api/runs/{id}/events', { params: { path: { id }, query: { after, limit } } }),
        );
        if (cancelled) return;
        add(page);
        if (page.length < limit) break;
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
          <div className="tabs-inline" role="tablist" aria-label="Run views">
            {(['timeline', 'waterfall'] as const).map((t) => (
              <button
                key={t}
                type="button"
                role="tab"
                id={`run-tab-${t}`}
                aria-selected={view === t}
                aria-controls="run-view"
                className="ghost small"
                onClick={() => setParams(t === 'timeline' ? {} : { tab: t }, { replace: true })}
              >
                {t === 'timeline' ? 'Timeline' : 'Waterfall'}
              </button>
            ))}
          </div>
          <div id="run-view" role="tabpanel" aria-labelledby={`run-tab-${view}`}>
            {view === 'waterfall' ? (
              <Waterfall events={events} />
            ) : (
              <Timeline events={events} live={live} running={isLive} />
            )}
          </div>
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
          {r.fellBack && <FallbackCard events={events} />}
          {r.reflectionError && (
            <div className="card">
              <h2>Reflection failed</h2>
              <p className="pre-wrap">{r.reflectionError}</p>
            </div>
          )}
          {r.reflectionSummary && (
            <div className="card">
              <h2>What it learned</h2>
              <p className="pre-wrap">{r.reflectionSummary}</p>
              {r.reflectionOps && r.reflectionOps.length > 0 && <ReflectionOps ops={r.reflectionOps} />}
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

/** Why a scripted run handed over to the agent: the fallback entry's reason, and what the agent was told. */
function FallbackCard({ events }: { events: EventDto[] }) {
  const entry = events.find((e) => e.type === 'fallback');
  const reason = (entry?.payload as { reason?: unknown } | null)?.reason;
  return (
    <div className="card">
      <h2>Fell back to the agent</h2>
      <p className="pre-wrap">{typeof reason === 'string' ? reason : 'The main script fell short.'}</p>
      <p className="muted small">
        The agent took over in the same sandbox, told what the script did; its success counts for the run.
      </p>
    </div>
  );
}

const opVerdict: Record<Schemas['AppliedOp']['status'], string> = {
  applied: 'applied',
  held: 'held for review',
  rejected: 'rejected',
};

/** What became of each change the reflection proposed. */
function ReflectionOps({ ops }: { ops: Array<Schemas['AppliedOp']> }) {
  return (
    <>
      <h3>Its changes</h3>
      <ul className="ops" aria-label="Reflection changes">
        {ops.map((op, i) => (
          <li key={i}>
            <code>{op.op.replace(/_/g, ' ')}</code>
            {op.name ? ` ${op.name}` : ''} <span className={`badge op-${op.status}`}>{opVerdict[op.status]}</span>
            {op.text && <div className="small pre-wrap">{op.text}</div>}
            <div className="muted small pre-wrap">{op.rationale}</div>
          </li>
        ))}
      </ul>
    </>
  );
}

const imageTypes = /\.(png|jpe?g)$/i;
const textTypes = /\.(txt|md|csv|json|log|ya?ml|xml|html?|tsv)$/i;
/** The most of a text file the preview reads. */
const previewBytes = 200_000;

/**
 * One file's preview, read on request: images load from the artifact route as images (the route answers with their
 * type and `nosniff`, and the CSP allows images from the service only); text and JSON are read as text, never run.
 */
function ArtifactPreview({ url, name }: { url: string; name: string }) {
  const [state, setState] = useState<{ text?: string; error?: string }>({});
  const isImage = imageTypes.test(name);
  useEffect(() => {
    if (isImage) return;
    const abort = new AbortController();
    (async () => {
      const res = await fetch(url, { credentials: 'same-origin', signal: abort.signal });
      if (!res.ok) throw new Error(`The server answered ${res.status}.`);
      const body = await res.text();
      let text = body.length > previewBytes ? `${body.slice(0, previewBytes)}\n…` : body;
      if (/\.json$/i.test(name) && body.length <= previewBytes) {
        try {
          text = JSON.stringify(JSON.parse(body), null, 2);
        } catch {
          // Not valid JSON: shown as the text it is.
        }
      }
      setState({ text });
    })().catch((err: unknown) => {
      if (!abort.signal.aborted) setState({ error: err instanceof Error ? err.message : String(err) });
    });
    return () => abort.abort();
  }, [url, name, isImage]);
  if (isImage) return <img className="artifact-preview" src={url} alt={`Preview of ${name}`} />;
  if (state.error) return <p className="field-error">{state.error}</p>;
  if (state.text === undefined) return <Spinner />;
  return (
    <pre className="artifact-preview" aria-label={`Preview of ${name}`}>
      {state.text}
    </pre>
  );
}

function ArtifactItem({ runId, a }: { runId: string; a: Schemas['ArtifactDto'] }) {
  const [open, setOpen] = useState(false);
  const url = `/api/runs/${runId}/artifact?path=${encodeURIComponent(a.name)}`;
  const previewable = imageTypes.test(a.name) || textTypes.test(a.name);
  return (
    <li>
      <a href={url} download>
        {a.name}
      </a>{' '}
      <span className="muted small">{byteSize(a.size)}</span>{' '}
      {previewable && (
        <button
          type="button"
          className="link small"
          aria-expanded={open}
          aria-label={`${open ? 'Hide' : 'Preview'} ${a.name}`}
          onClick={() => setOpen((o) => !o)}
        >
          {open ? 'Hide' : 'Preview'}
        </button>
      )}
      {open && <ArtifactPreview url={url} name={a.name} />}
    </li>
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
          <ArtifactItem key={a.name} runId={runId} a={a} />
        ))}
      </ul>
    </div>
  );
}
