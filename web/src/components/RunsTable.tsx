import { Link, useSearchParams } from 'react-router-dom';
import { call, client } from '../api.js';
import { cost, dateTime, duration } from '../format.js';

import { useApi, useDebouncedCallback, useEditableCopy, useRunEvents } from '../hooks.js';
import { Pager } from './Pager.js';
import { Empty, ErrorBox, ModeBadge, Spinner, StatusBadge } from './ui.js';

const statuses = ['queued', 'running', 'succeeded', 'failed', 'timed_out', 'cancelled', 'skipped'];

/** Runs, newest first, with a status filter and paging in the URL; new runs appear as they start. */
export function RunsTable({ jobId, showJob }: { jobId?: string; showJob: boolean }) {
  const [params, setParams] = useSearchParams();
  const status = params.get('status') ?? '';
  const search = params.get('search') ?? '';
  // The box follows the URL when it changes from outside, and writes it as the person types.
  const [typed, setTyped] = useEditableCopy(search);
  const page = Math.max(1, Number(params.get('page')) || 1);
  const pageSize = Number(params.get('pageSize')) || 25;
  const query = { job: jobId, status, search, sort: '-queuedAt', page, pageSize };
  const list = useApi(`runs ${JSON.stringify(query)}`, (signal) =>
    call(client.GET('/api/runs', { params: { query }, signal })),
  );
  useRunEvents((e) => {
    if (!jobId || e.jobId === jobId) list.reload();
  });
  const set = (changes: Record<string, string | null>) =>
    setParams((p) => {
      const n = new URLSearchParams(p);
      for (const [k, v] of Object.entries(changes)) {
        if (v === null) n.delete(k);
        else n.set(k, v);
      }
      return n;
    });
  const writeSearch = useDebouncedCallback((text: string) => set({ search: text || null, page: null }), 250);
  const data = list.data;
  return (
    <div>
      <div className="toolbar">
        <input
          type="search"
          aria-label="Search runs"
          placeholder="Search job name, summary or error"
          value={typed}
          maxLength={200}
          onChange={(e) => {
            setTyped(e.target.value);
            writeSearch(e.target.value);
          }}
        />
        <label>
          Status{' '}
          <select value={status} onChange={(e) => set({ status: e.target.value || null, page: null })}>
            <option value="">any</option>
            {statuses.map((s) => (
              <option key={s} value={s}>
                {s.replace('_', ' ')}
              </option>
            ))}
          </select>
        </label>
      </div>
      <ErrorBox error={list.error} onRetry={list.reload} />
      {!data && !list.error && <Spinner />}
      {data && data.total === 0 && <Empty title={status ? `No ${status.replace('_', ' ')} runs` : 'No runs yet'} />}
      {data && data.items.length > 0 && (
        <div className="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Run</th>
                {showJob && <th scope="col">Job</th>}
                <th scope="col">Status</th>
                <th scope="col">Mode</th>
                <th scope="col">Trigger</th>
                <th scope="col">Queued</th>
                <th scope="col">Duration</th>
                <th scope="col">Cost</th>
              </tr>
            </thead>
            <tbody>
              {data.items.map((r) => (
                <tr key={r.id}>
                  <td data-label="Run">
                    <Link to={`/runs/${r.id}`}>#{r.number}</Link>
                  </td>
                  {showJob && (
                    <td data-label="Job">
                      {r.jobDeleted ? (
                        <span className="muted">{r.jobName} (archived)</span>
                      ) : (
                        <Link to={`/jobs/${r.jobId}`}>{r.jobName}</Link>
                      )}
                    </td>
                  )}
                  <td data-label="Status">
                    <StatusBadge status={r.status} />
                  </td>
                  <td data-label="Mode">
                    <ModeBadge mode={r.mode} />
                  </td>
                  <td data-label="Trigger">{r.trigger}</td>
                  <td data-label="Queued">{dateTime(r.queuedAt)}</td>
                  <td data-label="Duration">{duration(r.msTotal)}</td>
                  <td data-label="Cost">{cost(r.cost + r.reflectionCost)}</td>
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
    </div>
  );
}
