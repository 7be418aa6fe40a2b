import { Link, useSearchParams } from 'react-router-dom';
import { call, client } from '../api.js';
import { cost, dateTime, duration } from '../format.js';

import { useDebouncedCallback, useEditableCopy, useRunEvents } from '../hooks.js';
import { useList } from '../list.js';
import type { Schemas } from '../api.js';
import { DataTable, type Column } from './DataTable.js';
import { Pager, pageSizeOf } from './Pager.js';
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
  const pageSize = pageSizeOf(params.get('pageSize'));
  const all = pageSize === 'all';
  const filter = { job: jobId, status, search, sort: '-queuedAt' };
  const list = useList(
    `runs ${JSON.stringify(filter)}`,
    (p, size, signal) =>
      call(client.GET('/api/runs', { params: { query: { ...filter, page: p, pageSize: size } }, signal })),
    { all, page, pageSize: all ? 100 : pageSize },
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
  const { rows, total } = list;
  const columns: Array<Column<Schemas['RunDto']>> = [
    { key: 'run', header: 'Run', cell: (r) => <Link to={`/runs/${r.id}`}>#{r.number}</Link> },
    ...(showJob
      ? [
          {
            key: 'job',
            header: 'Job',
            cell: (r: Schemas['RunDto']) =>
              r.jobDeleted ? (
                <span className="muted">{r.jobName} (archived)</span>
              ) : (
                <Link to={`/jobs/${r.jobId}`}>{r.jobName}</Link>
              ),
          },
        ]
      : []),
    { key: 'status', header: 'Status', cell: (r) => <StatusBadge status={r.status} /> },
    { key: 'mode', header: 'Mode', cell: (r) => <ModeBadge mode={r.mode} /> },
    { key: 'trigger', header: 'Trigger', cell: (r) => r.trigger },
    { key: 'queued', header: 'Queued', cell: (r) => dateTime(r.queuedAt) },
    { key: 'duration', header: 'Duration', cell: (r) => duration(r.msTotal) },
    { key: 'cost', header: 'Cost', cell: (r) => cost(r.cost + r.reflectionCost) },
  ];
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
      {!rows && !list.error && <Spinner />}
      {total === 0 && <Empty title={status ? `No ${status.replace('_', ' ')} runs` : 'No runs yet'} />}
      {rows && rows.length > 0 && (
        <DataTable rows={rows} rowKey={(r) => r.id} columns={columns} label={showJob ? 'Runs' : 'Runs of the job'} />
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
    </div>
  );
}
