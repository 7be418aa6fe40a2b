import { lazy, Suspense, useEffect, useState } from 'react';
import { Link, NavLink, useNavigate, useParams } from 'react-router-dom';
import { ApiError, asApiError, call, client } from '../api.js';
import { domainList, JobForm, type JobFormValues } from '../components/JobForm.js';
import { RunsTable } from '../components/RunsTable.js';
import { ErrorBox, ModeBadge, Spinner, StatusBadge, Toggle } from '../components/ui.js';
import { cost, dateTime, duration, relative } from '../format.js';
import { useApi, useRunEvents } from '../hooks.js';
import type { JobDto, JobPatch } from '../types.js';
import { PlaybookTab } from './JobPlaybook.js';
import { StateTab } from './JobState.js';
import { EnvironmentTab } from './JobEnvironment.js';
import { ToolsTab } from './JobTools.js';
import { HistoryTab } from './JobHistory.js';
import { RunNowDialog } from './RunNowDialog.js';

// The chart is its own chunk: the jobs list's first load never carries it (docs/performance.md, "Web app budgets").
const RunChart = lazy(() => import('../components/RunChart.js'));

const tabs = [
  { id: '', label: 'Overview' },
  { id: 'runs', label: 'Runs' },
  { id: 'playbook', label: 'Playbook' },
  { id: 'state', label: 'State' },
  { id: 'environment', label: 'Environment' },
  { id: 'tools', label: 'Tools' },
  { id: 'history', label: 'History' },
  { id: 'settings', label: 'Settings' },
];

export function JobPage() {
  const { id = '', tab = '' } = useParams();
  const job = useApi(`job ${id}`, (signal) => call(client.GET('/api/jobs/{id}', { params: { path: { id } }, signal })));
  useRunEvents((e) => {
    if (e.jobId === id) job.reload();
  });
  const j = job.data;

  useEffect(() => {
    if (j) document.title = `${j.name} · svc`;
  }, [j]);

  if (job.error && !j) {
    return (
      <section>
        <nav className="crumbs" aria-label="Breadcrumb">
          <Link to="/jobs">Jobs</Link>
        </nav>
        <ErrorBox error={job.error} onRetry={job.reload} />
      </section>
    );
  }
  if (!j) return <Spinner />;
  const known = tabs.some((t) => t.id === tab);
  return (
    <section>
      <nav className="crumbs" aria-label="Breadcrumb">
        <Link to="/jobs">Jobs</Link> / <span>{j.name}</span>
      </nav>
      <div className="page-head">
        <h1 className="job-title">
          {j.name} <ModeBadge mode={j.nextMode} />
          {!j.enabled && <span className="badge">disabled</span>}
        </h1>
        <RunNowDialog job={j} />
      </div>
      <nav className="tabs" aria-label="Job sections">
        {tabs.map((t) => (
          <NavLink
            key={t.id}
            to={`/jobs/${j.id}${t.id ? `/${t.id}` : ''}`}
            end
            className={({ isActive }) => (isActive ? 'active' : '')}
          >
            {t.label}
          </NavLink>
        ))}
      </nav>
      {!known && <ErrorBox error={new ApiError(404, 'not_found', `This job has no “${tab}” section`)} />}
      {tab === '' && <Overview job={j} onChange={job.reload} />}
      {tab === 'runs' && <RunsTable jobId={j.id} showJob={false} />}
      {tab === 'playbook' && <PlaybookTab job={j} onJobChange={job.reload} />}
      {tab === 'state' && <StateTab jobId={j.id} />}
      {tab === 'environment' && <EnvironmentTab job={j} onJobChange={job.reload} />}
      {tab === 'tools' && <ToolsTab job={j} />}
      {tab === 'history' && <HistoryTab jobId={j.id} />}
      {tab === 'settings' && <Settings job={j} onSaved={job.reload} />}
    </section>
  );
}

function Overview({ job, onChange }: { job: JobDto; onChange: () => void }) {
  const [error, setError] = useState<ApiError | null>(null);
  const setEnabled = async (enabled: boolean) => {
    setError(null);
    try {
      await call(client.PATCH('/api/jobs/{id}', { params: { path: { id: job.id } }, body: { enabled } }));
      onChange();
    } catch (err) {
      setError(asApiError(err));
    }
  };
  return (
    <div className="grid">
      <Tiles jobId={job.id} />
      <div className="card span2">
        <h2>Instruction</h2>
        <p className="pre-wrap">{job.instruction}</p>
      </div>
      <div className="card">
        <h2>Schedule</h2>
        <dl>
          <dt>Cron</dt>
          <dd>{job.cron ? <code>{job.cron}</code> : <span className="muted">none: runs when started</span>}</dd>
          <dt>Time zone</dt>
          <dd>{job.timezone ?? <span className="muted">workspace default</span>}</dd>
          <dt>Next run</dt>
          <dd>{job.nextRunAt ? `${dateTime(job.nextRunAt, job.timezone)} (${relative(job.nextRunAt)})` : '—'}</dd>
          <dt>Enabled</dt>
          <dd>
            <Toggle checked={job.enabled} label="Enabled" onChange={(v) => void setEnabled(v)} />
          </dd>
        </dl>
        <ErrorBox error={error} />
      </div>
      <div className="card">
        <h2>How it runs</h2>
        <dl>
          <dt>Next mode</dt>
          <dd>
            <ModeBadge mode={job.nextMode} />
            {job.modePin && <span className="muted"> pinned</span>}
            {job.demoted && <span className="muted"> (demoted after fallbacks)</span>}
          </dd>
          <dt>Playbook</dt>
          <dd>
            <Link to={`/jobs/${job.id}/playbook`}>version {job.playbookVersion}</Link>
          </dd>
          <dt>Network</dt>
          <dd>
            {job.network}
            {job.network === 'allowlist' && job.allowedDomains && `: ${job.allowedDomains.join(', ')}`}
          </dd>
          <dt>Last run</dt>
          <dd>
            {job.lastRun ? (
              <>
                <Link to={`/runs/${job.lastRun.id}`}>#{job.lastRun.number}</Link>{' '}
                <StatusBadge status={job.lastRun.status} />
              </>
            ) : (
              <span className="muted">never</span>
            )}
          </dd>
        </dl>
      </div>
    </div>
  );
}

function Settings({ job, onSaved }: { job: JobDto; onSaved: () => void }) {
  const navigate = useNavigate();
  const [error, setError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);
  const [saved, setSaved] = useState(false);
  const initial: JobFormValues = {
    name: job.name,
    instruction: job.instruction,
    cron: job.cron ?? '',
    timezone: job.timezone ?? '',
    network: job.network,
    allowedDomains: (job.allowedDomains ?? []).join('\n'),
    concurrency: job.concurrency,
    selfImprove: job.selfImprove,
    enabled: job.enabled,
  };
  const save = async (v: JobFormValues) => {
    setBusy(true);
    setError(null);
    setSaved(false);
    // An empty string clears cron and timezone (the PATCH convention).
    const body: JobPatch = {
      name: v.name.trim(),
      instruction: v.instruction.trim(),
      cron: v.cron.trim(),
      timezone: v.timezone.trim(),
      network: v.network,
      concurrency: v.concurrency,
      selfImprove: v.selfImprove,
      enabled: v.enabled,
      ...(v.network === 'allowlist' ? { allowedDomains: domainList(v.allowedDomains) } : {}),
    };
    try {
      await call(client.PATCH('/api/jobs/{id}', { params: { path: { id: job.id } }, body }));
      setSaved(true);
      onSaved();
    } catch (err) {
      setError(asApiError(err));
    } finally {
      setBusy(false);
    }
  };
  const archive = async () => {
    if (!window.confirm(`Archive “${job.name}”? It stops running; its runs are kept.`)) return;
    try {
      await call(client.DELETE('/api/jobs/{id}', { params: { path: { id: job.id } } }));
      navigate('/jobs');
    } catch (err) {
      setError(asApiError(err));
    }
  };
  return (
    <div className="narrow">
      {saved && (
        <div className="notice ok" role="status">
          Saved.
        </div>
      )}
      <JobForm
        key={job.updatedAt}
        initial={initial}
        error={error}
        busy={busy}
        onSubmit={(v) => void save(v)}
        actions={
          <button type="submit" className="primary" disabled={busy}>
            Save changes
          </button>
        }
      />
      <div className="card danger">
        <h2>Archive</h2>
        <p>An archived job no longer runs and disappears from the list; its runs stay readable.</p>
        <button type="button" className="danger" onClick={() => void archive()}>
          Archive job
        </button>
      </div>
    </div>
  );
}

/** The last 30 days in four numbers, and the chart per run (its own chunk, loaded when the overview opens). */
function Tiles({ jobId }: { jobId: string }) {
  const stats = useApi(`stats ${jobId}`, (signal) =>
    call(client.GET('/api/jobs/{id}/stats', { params: { path: { id: jobId }, query: { range: '30d' } }, signal })),
  );
  useRunEvents((e) => {
    if (e.jobId === jobId) stats.reload();
  });
  const s = stats.data;
  if (stats.error)
    return (
      <div className="span2">
        <ErrorBox error={stats.error} onRetry={stats.reload} />
      </div>
    );
  return (
    <>
      <div className="tiles span2" aria-label="Last 30 days">
        <div className="tile">
          <span className="tile-value">{s ? s.runs.length : '…'}</span>
          <span className="muted small">runs in 30 days</span>
        </div>
        <div className="tile">
          <span className="tile-value">{s ? (s.runs.length ? `${Math.round(s.successRate * 100)}%` : '—') : '…'}</span>
          <span className="muted small">succeeded</span>
        </div>
        <div className="tile">
          <span className="tile-value">{s ? duration(s.p50Ms || null) : '…'}</span>
          <span className="muted small">median duration</span>
        </div>
        <div className="tile">
          <span className="tile-value">{s ? cost(s.avgCost) : '…'}</span>
          <span className="muted small">per run, learning included</span>
        </div>
      </div>
      {s && (
        <div className="card span2">
          <Suspense fallback={<Spinner />}>
            <RunChart stats={s} />
          </Suspense>
        </div>
      )}
    </>
  );
}
