import { useEffect, useState } from 'react';
import { Link, useNavigate, useSearchParams } from 'react-router-dom';
import { asApiError, call, client, type ApiError } from '../api.js';
import { Empty, ErrorBox, ModeBadge, RunStrip, Spinner, Toggle } from '../components/ui.js';
import { Pager } from '../components/Pager.js';
import { dateTime, relative } from '../format.js';
import { useApi, useDebouncedCallback, useEditableCopy, useRunEvents } from '../hooks.js';
import type { JobListDto } from '../types.js';

const sortable: Array<{ key: string; label: string }> = [
  { key: 'name', label: 'Name' },
  { key: 'nextRunAt', label: 'Next run' },
  { key: 'runCount', label: 'Runs' },
  { key: 'updatedAt', label: 'Updated' },
];

/** The jobs of the workspace: search, sort, page and page size live in the URL, the server does the work. */
export function JobsPage() {
  const [params, setParams] = useSearchParams();
  const search = params.get('search') ?? '';
  const sort = params.get('sort') ?? 'name';
  const page = Math.max(1, Number(params.get('page')) || 1);
  const pageSize = Number(params.get('pageSize')) || 25;
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

  const query = { search, sort, page, pageSize };
  const list = useApi(`jobs ${JSON.stringify(query)}`, (signal) =>
    call(client.GET('/api/jobs', { params: { query }, signal })),
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

  const data = list.data;
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
        {list.loading && data && <span className="spinner small" aria-label="Updating" />}
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
      {!data && !list.error && <Spinner />}
      {data && data.total === 0 && !search && (
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
      {data && data.total === 0 && search && <Empty title={`No job matches “${search}”`} />}
      {data && data.items.length > 0 && (
        <div className="table-wrap">
          <table className="jobs">
            <thead>
              <tr>
                {sortable.slice(0, 1).map((c) => (
                  <SortHeader key={c.key} col={c} sort={sort} onSort={toggleSort} />
                ))}
                <th scope="col">Schedule</th>
                <th scope="col">Last runs</th>
                <SortHeader col={sortable[1]} sort={sort} onSort={toggleSort} />
                <SortHeader col={sortable[2]} sort={sort} onSort={toggleSort} />
                <th scope="col">Enabled</th>
                <th scope="col">
                  <span className="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {data.items.map((job) => (
                <tr key={job.id}>
                  <td data-label="Name">
                    <Link to={`/jobs/${job.id}`} className="job-name">
                      {job.name}
                    </Link>{' '}
                    <ModeBadge mode={job.nextMode} />
                  </td>
                  <td data-label="Schedule">
                    {job.scheduleHuman ?? job.cron ?? <span className="muted">manual</span>}
                  </td>
                  <td data-label="Last runs">
                    <RunStrip runs={job.recentRuns} />
                  </td>
                  <td data-label="Next run" title={job.nextRunAt ? dateTime(job.nextRunAt, job.timezone) : undefined}>
                    {job.nextRunAt ? (
                      <>
                        {dateTime(job.nextRunAt, job.timezone)}
                        <div className="muted small">
                          {relative(job.nextRunAt)}
                          {job.timezone ? ` · ${job.timezone}` : ''}
                        </div>
                      </>
                    ) : (
                      <span className="muted">—</span>
                    )}
                  </td>
                  <td data-label="Runs">{job.runCount}</td>
                  <td data-label="Enabled">
                    <Toggle
                      checked={job.enabled}
                      label={`Enable ${job.name}`}
                      onChange={(v) => void setEnabled(job, v)}
                    />
                  </td>
                  <td className="actions">
                    <button type="button" onClick={() => void runNow(job)} aria-label={`Run ${job.name} now`}>
                      Run now
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {data && data.total > 0 && (
        <Pager
          page={page}
          pageSize={pageSize}
          total={data.total}
          onPage={(p) => set({ page: p === 1 ? null : String(p) })}
          onPageSize={(s) => set({ pageSize: s === 25 ? null : String(s), page: null })}
        />
      )}
    </section>
  );
}

function SortHeader({
  col,
  sort,
  onSort,
}: {
  col: { key: string; label: string };
  sort: string;
  onSort: (k: string) => void;
}) {
  const dir = sort === col.key ? 'ascending' : sort === `-${col.key}` ? 'descending' : 'none';
  return (
    <th scope="col" aria-sort={dir}>
      <button type="button" className="sort" onClick={() => onSort(col.key)}>
        {col.label}
        <span aria-hidden="true">{dir === 'ascending' ? ' ▲' : dir === 'descending' ? ' ▼' : ''}</span>
      </button>
    </th>
  );
}
