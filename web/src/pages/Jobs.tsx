import { useEffect, useState } from 'react';
import { Link, useNavigate, useSearchParams } from 'react-router-dom';
import { asApiError, call, client, type ApiError } from '../api.js';
import { Empty, ErrorBox, ModeBadge, RunStrip, Spinner, Toggle } from '../components/ui.js';
import { DataTable, type Column } from '../components/DataTable.js';
import { Pager, pageSizeOf } from '../components/Pager.js';
import { dateTime, relative } from '../format.js';
import { useDebouncedCallback, useEditableCopy, useRunEvents } from '../hooks.js';
import { useList } from '../list.js';
import type { JobListDto } from '../types.js';

/** The jobs of the workspace: search, sort, page and page size live in the URL, the server does the work. */
export function JobsPage() {
  const [params, setParams] = useSearchParams();
  const search = params.get('search') ?? '';
  const sort = params.get('sort') ?? 'name';
  const page = Math.max(1, Number(params.get('page')) || 1);
  const pageSize = pageSizeOf(params.get('pageSize'));
  const all = pageSize === 'all';
  // The box follows the URL when it changes from outside (back button, a link), and writes it as the person types.
  const [typed, setTyped] = useEditableCopy(search);
  const writeSearch = useDebouncedCallback((text: string) => {
    setParams(
      (p) => {
        const n = new URLSearchParams(p);
        if (text) n.set('search', text);
        else n.delete('search');
        n.delete('page');
        return n;
      },
      { replace: true },
    );
  }, 250);
  const navigate = useNavigate();

  useEffect(() => {
    document.title = 'Jobs · svc';
  }, []);

  const list = useList(
    `jobs ${JSON.stringify({ search, sort })}`,
    (p, size, signal) =>
      call(client.GET('/api/jobs', { params: { query: { search, sort, page: p, pageSize: size } }, signal })),
    { all, page, pageSize: all ? 100 : pageSize },
  );
  useRunEvents(() => list.reload());
  const [notice, setNotice] = useState<{ text: string; runId?: string | null } | null>(null);
  const [actionError, setActionError] = useState<ApiError | null>(null);

  const set = (changes: Record<string, string | null>) =>
    setParams((p) => {
      const n = new URLSearchParams(p);
      for (const [k, v] of Object.entries(changes)) {
        if (v === null) n.delete(k);
        else n.set(k, v);
      }
      return n;
    });

  const toggleSort = (key: string) => {
    const next = sort === key ? `-${key}` : sort === `-${key}` ? key : key;
    set({ sort: next === 'name' ? null : next, page: null });
  };

  const setEnabled = async (job: JobListDto, enabled: boolean) => {
    setActionError(null);
    try {
      await call(client.PATCH('/api/jobs/{id}', { params: { path: { id: job.id } }, body: { enabled } }));
      list.reload();
    } catch (err) {
      setActionError(asApiError(err));
    }
  };

  const runNow = async (job: JobListDto) => {
    setActionError(null);
    try {
      const started = await call(client.POST('/api/jobs/{id}/runs', { params: { path: { id: job.id } }, body: {} }));
      setNotice(
        started.runId
          ? { text: `Started a run of “${job.name}”.`, runId: started.runId }
          : { text: `“${job.name}” skipped the run: one is already under way.` },
      );
      list.reload();
    } catch (err) {
      setActionError(asApiError(err));
    }
  };

  const { rows, total } = list;
  const columns: Array<Column<JobListDto>> = [
    {
      key: 'name',
      header: 'Name',
      sortKey: 'name',
      cell: (job) => (
        <>
          <Link to={`/jobs/${job.id}`} className="job-name">
            {job.name}
          </Link>{' '}
          <ModeBadge mode={job.nextMode} />
        </>
      ),
    },
    {
      key: 'schedule',
      header: 'Schedule',
      cell: (job) => job.scheduleHuman ?? job.cron ?? <span className="muted">manual</span>,
    },
    { key: 'runs', header: 'Last runs', cell: (job) => <RunStrip runs={job.recentRuns} /> },
    {
      key: 'next',
      header: 'Next run',
      sortKey: 'nextRunAt',
      cell: (job) =>
        job.nextRunAt ? (
          <span title={dateTime(job.nextRunAt, job.timezone)}>
            {dateTime(job.nextRunAt, job.timezone)}
            <span className="muted small block">
              {relative(job.nextRunAt)}
              {job.timezone ? ` · ${job.timezone}` : ''}
            </span>
          </span>
        ) : (
          <span className="muted">—</span>
        ),
    },
    { key: 'count', header: 'Runs', sortKey: 'runCount', cell: (job) => job.runCount },
    {
      key: 'enabled',
      header: 'Enabled',
      cell: (job) => (
        <Toggle checked={job.enabled} label={`Enable ${job.name}`} onChange={(v) => void setEnabled(job, v)} />
      ),
    },
    {
      key: 'actions',
      header: <span className="sr-only">Actions</span>,
      className: 'actions',
      cell: (job) => (
        <button type="button" onClick={() => void runNow(job)} aria-label={`Run ${job.name} now`}>
          Run now
        </button>
      ),
    },
  ];
  return (
    <section>
      <div className="page-head">
        <h1>Jobs</h1>
        <button type="button" className="primary" onClick={() => navigate('/jobs/new')}>
          New job
        </button>
      </div>
      <div className="toolbar">
        <input
          type="search"
          aria-label="Search jobs"
          placeholder="Search name or instruction"
          value={typed}
          onChange={(e) => {
            setTyped(e.target.value);
            writeSearch(e.target.value);
          }}
          maxLength={200}
        />
        {list.loading && rows && <span className="spinner small" aria-label="Updating" />}
      </div>
      {notice && (
        <div className="notice ok" role="status">
          {notice.text} {notice.runId && <Link to={`/runs/${notice.runId}`}>Watch it</Link>}
          <button type="button" className="link" onClick={() => setNotice(null)} aria-label="Dismiss">
            ×
          </button>
        </div>
      )}
      <ErrorBox error={actionError} />
      <ErrorBox error={list.error} onRetry={list.reload} />
      {!rows && !list.error && <Spinner />}
      {total === 0 && !search && (
        <Empty title="No jobs yet">
          <p>
            A job is an instruction the service runs on a schedule, by webhook or when you ask. It learns from each run
            and can graduate to a proven script.
          </p>
          <Link className="button primary" to="/jobs/new">
            Create your first job
          </Link>
        </Empty>
      )}
      {total === 0 && search && <Empty title={`No job matches “${search}”`} />}
      {rows && rows.length > 0 && (
        <DataTable
          rows={rows}
          rowKey={(j) => j.id}
          columns={columns}
          sort={sort}
          onSort={toggleSort}
          className="jobs"
          label="Jobs"
        />
      )}
      {total !== undefined && total > 0 && (
        <Pager
          page={page}
          pageSize={pageSize}
          total={total}
          onPage={(p) => set({ page: p === 1 ? null : String(p) })}
          onPageSize={(s) => set({ pageSize: s === 25 ? null : String(s), page: null })}
        />
      )}
    </section>
  );
}
