import { lazy, Suspense, useEffect, type ReactNode } from 'react';
import { Link, useSearchParams } from 'react-router-dom';
import { call, client } from '../api.js';
import { Empty, ErrorBox, Spinner, StatusBadge } from '../components/ui.js';
import { cost, dateTime, duration, relative } from '../format.js';
import { useApi, useRunEvents } from '../hooks.js';
import {
  changeOf,
  costPerJob,
  defaultRange,
  overviewRanges,
  percent,
  rangeOf,
  type Better,
  type Change,
  type Overview,
  type OverviewRange,
} from '../overview.js';
import './dashboard.css';

// The chart is a chunk of its own, like the job chart: the first load of any page never carries it.
const OverviewChart = lazy(() => import('../components/OverviewChart.js'));

type Totals = Overview['current'];
type RunRef = Overview['running'][number];

/**
 * The workspace at a glance (`/`): the range's totals against the previous period, runs per hour or day by status,
 * cost by job, what runs now, the last failures and the jobs that learned to be cheaper. The range lives in the URL;
 * the page follows `/api/events` like the lists do (docs/design.md, "Web app").
 */
export function DashboardPage() {
  const [params, setParams] = useSearchParams();
  const range = rangeOf(params.get('range'));
  const overview = useApi(`overview ${range}`, (signal) =>
    call(client.GET('/api/stats/overview', { params: { query: { range } }, signal })),
  );
  useRunEvents(() => overview.reload());
  useEffect(() => {
    document.title = 'Dashboard · svc';
  }, []);
  // A new range shows nothing until its own answer: the previous range's figures under the new label would mislead.
  const o = overview.data?.range === range ? overview.data : undefined;
  const setRange = (value: OverviewRange) =>
    setParams((p) => {
      const n = new URLSearchParams(p);
      if (value === defaultRange) n.delete('range');
      else n.set('range', value);
      return n;
    });

  return (
    <section className="dashboard">
      <div className="page-head">
        <h1>Dashboard</h1>
        {(!o || o.hasRuns) && <RangePicker range={range} onChange={setRange} busy={overview.loading && !!o} />}
      </div>
      <ErrorBox error={overview.error} onRetry={overview.reload} />
      {!o && !overview.error && <Spinner />}
      {o && !o.hasRuns && <FirstSteps />}
      {o && o.hasRuns && <Figures o={o} />}
    </section>
  );
}

function RangePicker({
  range,
  onChange,
  busy,
}: {
  range: OverviewRange;
  onChange: (r: OverviewRange) => void;
  busy: boolean;
}) {
  // Native radios: one tab stop, arrow keys move the choice, and the label is the accessible name.
  return (
    <fieldset className="range-picker">
      <legend className="sr-only">Range</legend>
      {overviewRanges.map((r) => (
        <label key={r.value} className={r.value === range ? 'on' : undefined}>
          <input
            type="radio"
            name="overview-range"
            value={r.value}
            checked={r.value === range}
            onChange={() => onChange(r.value)}
          />
          <span aria-hidden="true">{r.value}</span>
          <span className="sr-only">Last {r.label}</span>
        </label>
      ))}
      {busy && <span className="spinner small" aria-label="Updating" />}
    </fieldset>
  );
}

/** A workspace without any run: what to do first, with the way there. */
function FirstSteps() {
  const jobs = useApi('jobs count', (signal) =>
    call(client.GET('/api/jobs', { params: { query: { pageSize: 1 } }, signal })),
  );
  const count = jobs.data?.total;
  const first = jobs.data?.items[0];
  return (
    <Empty title="No runs yet">
      <p>This page fills in as your jobs run. Three steps get you there:</p>
      <ol className="first-steps">
        <li className={count ? 'done' : undefined}>
          <strong>Create a job.</strong> Describe in a sentence what should happen and when, for example “Every morning,
          summarise yesterday’s failed logins”; the service proposes the job for you to check.{' '}
          {count ? (
            <span>
              Done: you have <Link to="/jobs">{count === 1 ? 'one job' : `${count} jobs`}</Link>.
            </span>
          ) : (
            <Link className="button primary" to="/jobs/new">
              Create your first job
            </Link>
          )}
        </li>
        <li>
          <strong>Run it.</strong> Press <em>Run now</em> on the job, or let its schedule or webhook start it. You can
          watch the run live, step by step.{' '}
          {first && (
            <Link className="button" to={`/jobs/${first.id}`}>
              Open “{first.name}”
            </Link>
          )}
        </li>
        <li>
          <strong>Come back here.</strong> Runs, success rate, duration and cost show on this page, and so do the jobs
          that got cheaper as they learned from their runs.
        </li>
      </ol>
    </Empty>
  );
}

function Figures({ o }: { o: Overview }) {
  const period = overviewRanges.find((r) => r.value === o.range)!;
  const empty = o.perDay.every((b) => b.succeeded + b.failed + b.timedOut + b.cancelled + b.skipped + b.other === 0);
  return (
    <>
      <h2 className="sr-only">Last {period.label}</h2>
      <TotalsTiles current={o.current} previous={o.previous} period={period.period} />
      <div className="grid dashboard-grid">
        <section className="card span2" aria-labelledby="runs-chart-h">
          <h2 id="runs-chart-h">Runs, last {period.label}</h2>
          {empty ? (
            <p className="muted">No runs in the last {period.label}. Pick a longer range to see older ones.</p>
          ) : (
            <Suspense fallback={<Spinner label="Loading the chart…" />}>
              <OverviewChart overview={o} />
            </Suspense>
          )}
        </section>
        <Running runs={o.running} />
        <Failures runs={o.recentFailures} />
        <CostByJob o={o} label={period.label} />
        <Learned o={o} />
      </div>
    </>
  );
}

function TotalsTiles({ current, previous, period }: { current: Totals; previous: Totals; period: string }) {
  const finished = (t: Totals) => t.succeeded + t.failed > 0;
  const compare = (
    cur: number,
    prev: number,
    better: Better,
    show: (v: number) => string,
    kind: 'amount' | 'rate' = 'amount',
  ) => changeOf(cur, prev, { better, kind, period, show });
  const plural = (n: number, one: string) => `${n.toLocaleString()} ${one}${n === 1 ? '' : 's'}`;
  return (
    <div className="tiles overview-tiles">
      <Tile
        label="Runs"
        raw={current.runs}
        value={current.runs.toLocaleString()}
        detail={`${current.succeeded.toLocaleString()} succeeded · ${current.failed.toLocaleString()} failed`}
        change={compare(current.runs, previous.runs, 'neither', (v) => plural(v, 'run'))}
      />
      <Tile
        label="Success rate"
        raw={current.successRate}
        value={finished(current) ? percent(current.successRate) : '—'}
        detail="of finished runs"
        change={
          finished(current) && finished(previous)
            ? compare(current.successRate, previous.successRate, 'higher', percent, 'rate')
            : null
        }
      />
      <Tile
        label="Median duration"
        raw={current.p50Ms}
        value={current.p50Ms ? duration(current.p50Ms) : '—'}
        detail="p50"
        change={current.p50Ms && previous.p50Ms ? compare(current.p50Ms, previous.p50Ms, 'lower', duration) : null}
      />
      <Tile
        label="Slowest runs"
        raw={current.p95Ms}
        value={current.p95Ms ? duration(current.p95Ms) : '—'}
        detail="p95"
        change={current.p95Ms && previous.p95Ms ? compare(current.p95Ms, previous.p95Ms, 'lower', duration) : null}
      />
      <Tile
        label="Run cost"
        raw={current.runCost}
        value={cost(current.runCost)}
        detail={plural(current.runTokens, 'token')}
        change={compare(current.runCost, previous.runCost, 'lower', cost)}
      />
      <Tile
        label="Learning cost"
        raw={current.learningCost}
        value={cost(current.learningCost)}
        detail="reflection and verification"
        // Learning is spent to make later runs cheaper: its rise is neither good nor bad news by itself.
        change={compare(current.learningCost, previous.learningCost, 'neither', cost)}
      />
    </div>
  );
}

function Tile({
  label,
  raw,
  value,
  detail,
  change,
}: {
  label: string;
  raw: number;
  value: string;
  detail: string;
  change: Change | null;
}) {
  const arrow = change?.direction === 'up' ? '▲' : change?.direction === 'down' ? '▼' : '';
  return (
    <div className="tile" role="group" aria-label={label}>
      <span className="tile-label">{label}</span>
      {/* The exact figure as the API answered it, beside the rounded one shown. */}
      <data className="tile-value" value={raw}>
        {value}
      </data>
      <span className="muted small">{detail}</span>
      {change ? (
        <span className={`delta delta-${change.tone}`} title={change.long}>
          <span aria-hidden="true">
            {arrow} {change.text}
          </span>
          <span className="sr-only">{change.long}</span>
        </span>
      ) : (
        <span className="delta muted">nothing to compare with</span>
      )}
    </div>
  );
}

function Card({ id, title, count, children }: { id: string; title: string; count?: number; children: ReactNode }) {
  return (
    <section className="card" aria-labelledby={id}>
      <h2 id={id}>
        {title}
        {count !== undefined && count > 0 && <span className="count">{count}</span>}
      </h2>
      {children}
    </section>
  );
}

function RunLine({ run, children }: { run: RunRef; children?: ReactNode }) {
  return (
    <li>
      <div className="run-line">
        <Link to={`/runs/${run.id}`}>
          {run.jobName} #{run.number}
        </Link>
        <StatusBadge status={run.status} />
        <span className="muted small" title={dateTime(run.startedAt ?? run.queuedAt)}>
          {run.startedAt ? `started ${relative(run.startedAt)}` : `queued ${relative(run.queuedAt)}`}
        </span>
      </div>
      {children}
    </li>
  );
}

function Running({ runs }: { runs: RunRef[] }) {
  return (
    <Card id="running-h" title="Running now" count={runs.length}>
      {runs.length === 0 ? (
        <p className="muted">Nothing is running.</p>
      ) : (
        <ul className="run-lines" aria-labelledby="running-h">
          {runs.map((r) => (
            <RunLine key={r.id} run={r} />
          ))}
        </ul>
      )}
    </Card>
  );
}

function Failures({ runs }: { runs: RunRef[] }) {
  return (
    <Card id="failures-h" title="Recent failures">
      {runs.length === 0 ? (
        <p className="muted">No run has failed.</p>
      ) : (
        <>
          <ul className="run-lines" aria-labelledby="failures-h">
            {runs.map((r) => (
              <RunLine key={r.id} run={r}>
                {r.error && <p className="run-error small">{r.error}</p>}
                {r.summary && r.summary !== r.error && <p className="run-summary muted small">{r.summary}</p>}
              </RunLine>
            ))}
          </ul>
          <Link className="small" to="/runs?status=failed">
            All failed runs
          </Link>
        </>
      )}
    </Card>
  );
}

function CostByJob({ o, label }: { o: Overview; label: string }) {
  const jobs = costPerJob(o.costByJob);
  const max = Math.max(1, ...jobs.map((j) => j.cost));
  const shown = jobs.slice(0, 10);
  return (
    <Card id="cost-h" title="Cost by job">
      {jobs.length === 0 ? (
        <p className="muted">No job ran in the last {label}.</p>
      ) : (
        <ol className="cost-bars" aria-labelledby="cost-h">
          {shown.map((j) => (
            <li key={j.jobId}>
              <span className="cost-name">
                <Link to={`/jobs/${j.jobId}`}>{j.jobName}</Link>
              </span>
              <span className="cost-value">{cost(j.cost)}</span>
              <span className="cost-track" aria-hidden="true">
                <span className="cost-bar" style={{ width: `${(j.cost / max) * 100}%` }} />
              </span>
            </li>
          ))}
        </ol>
      )}
      {jobs.length > shown.length && (
        <p className="muted small">and {jobs.length - shown.length} more jobs with a smaller cost.</p>
      )}
    </Card>
  );
}

function Learned({ o }: { o: Overview }) {
  const none = o.gettingCheaper.length === 0 && o.gettingLeaner.length === 0;
  const drop = (pct: number) => (pct >= 0 ? `−${percent(pct)}` : `+${percent(-pct)}`);
  return (
    <Card id="learned-h" title="Getting cheaper and leaner">
      <p className="muted small">
        The first 3 succeeded runs of the last 90 days against the latest 3, for jobs with at least 6.
      </p>
      {none && <p className="muted">No job has enough succeeded runs to compare yet.</p>}
      {o.gettingCheaper.length > 0 && (
        <>
          <h3 id="cheaper-h">Cost per run</h3>
          <ul className="learned" aria-labelledby="cheaper-h">
            {o.gettingCheaper.map((j) => (
              <li key={j.jobId}>
                <Link to={`/jobs/${j.jobId}`}>{j.jobName}</Link>{' '}
                <span className="delta delta-good">{drop(j.dropPct)}</span>
                <span className="muted small block">
                  {cost(j.firstCost)} → {cost(j.recentCost)} per run · {j.runs} runs
                </span>
              </li>
            ))}
          </ul>
        </>
      )}
      {o.gettingLeaner.length > 0 && (
        <>
          <h3 id="leaner-h">Tokens per run</h3>
          <ul className="learned" aria-labelledby="leaner-h">
            {o.gettingLeaner.map((j) => (
              <li key={j.jobId}>
                <Link to={`/jobs/${j.jobId}`}>{j.jobName}</Link>{' '}
                <span className={`delta ${j.tokenDropPct >= 0 ? 'delta-good' : 'delta-bad'}`}>
                  {drop(j.tokenDropPct)}
                </span>
                <span className="muted small block">
                  {j.firstTokens.toLocaleString()} → {j.recentTokens.toLocaleString()} tokens per run · {j.runs} runs
                </span>
              </li>
            ))}
          </ul>
        </>
      )}
    </Card>
  );
}
