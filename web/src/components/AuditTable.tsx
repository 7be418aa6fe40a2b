import { Link, useSearchParams } from 'react-router-dom';
import { call, client } from '../api.js';
import { dateTime } from '../format.js';
import { useApi } from '../hooks.js';
import type { AuditEntryDto } from '../types.js';
import { Pager } from './Pager.js';
import { Empty, ErrorBox, Spinner } from './ui.js';

const actors = ['user', 'token', 'run', 'reflection', 'scheduler', 'system'];

/** A `datetime-local` value as Unix ms in the browser's zone; empty or unreadable is no bound. */
function fromLocal(value: string): number | undefined {
  const ms = value ? new Date(value).getTime() : NaN;
  return Number.isFinite(ms) ? ms : undefined;
}

function Actor({ entry }: { entry: AuditEntryDto }) {
  const { type, id, name } = entry.actor;
  const label = name ?? id ?? type;
  return (
    <span>
      <span className="badge">{type}</span> {type === 'run' && id ? <Link to={`/runs/${id}`}>{label}</Link> : label}
    </span>
  );
}

/**
 * The audit trail (the workspace's, or one job's history), newest first, with its filters and paging in the URL. A
 * job's entries link to the job as it was just after the change.
 */
export function AuditTable({ jobId }: { jobId?: string }) {
  const [params, setParams] = useSearchParams();
  const actor = params.get('actor') ?? '';
  const type = params.get('type') ?? '';
  const since = params.get('since') ?? '';
  const until = params.get('until') ?? '';
  const page = Math.max(1, Number(params.get('page')) || 1);
  const pageSize = Number(params.get('pageSize')) || 25;
  const query = {
    sort: '-at',
    page,
    pageSize,
    ...(actor ? { actor } : {}),
    ...(type ? { type } : {}),
    ...(fromLocal(since) !== undefined ? { from: fromLocal(since) } : {}),
    ...(fromLocal(until) !== undefined ? { to: fromLocal(until) } : {}),
  };
  const list = useApi(`audit ${jobId ?? ''} ${JSON.stringify(query)}`, (signal) =>
    jobId
      ? call(client.GET('/api/jobs/{id}/history', { params: { path: { id: jobId }, query }, signal }))
      : call(client.GET('/api/audit', { params: { query }, signal })),
  );
  const set = (changes: Record<string, string | null>) =>
    setParams((p) => {
      const n = new URLSearchParams(p);
      for (const [k, v] of Object.entries(changes)) {
        if (v === null || v === '') n.delete(k);
        else n.set(k, v);
      }
      return n;
    });
  const data = list.data;
  return (
    <div>
      <div className="toolbar">
        <label>
          Actor{' '}
          <select value={actor} onChange={(e) => set({ actor: e.target.value, page: null })}>
            <option value="">anyone</option>
            {actors.map((a) => (
              <option key={a} value={a}>
                {a}
              </option>
            ))}
          </select>
        </label>
        <label>
          Event type{' '}
          <input
            value={type}
            placeholder="e.g. JobUpdated"
            maxLength={200}
            onChange={(e) => set({ type: e.target.value.trim(), page: null })}
          />
        </label>
        <label>
          From{' '}
          <input type="datetime-local" value={since} onChange={(e) => set({ since: e.target.value, page: null })} />
        </label>
        <label>
          Until{' '}
          <input type="datetime-local" value={until} onChange={(e) => set({ until: e.target.value, page: null })} />
        </label>
      </div>
      <ErrorBox error={list.error} onRetry={list.reload} />
      {!data && !list.error && <Spinner />}
      {data && data.total === 0 && <Empty title="No changes match" />}
      {data && data.items.length > 0 && (
        <div className="table-wrap">
          <table aria-label={jobId ? 'Job history' : 'Audit trail'}>
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Who</th>
                <th scope="col">What</th>
                <th scope="col">Change</th>
                <th scope="col">Stream</th>
              </tr>
            </thead>
            <tbody>
              {data.items.map((e) => (
                <tr key={e.id}>
                  <td>
                    {e.jobId ? (
                      <Link to={`/jobs/${e.jobId}/history?at=${e.at}`} title="View the job as of this moment">
                        {dateTime(e.at)}
                      </Link>
                    ) : (
                      dateTime(e.at)
                    )}
                  </td>
                  <td>
                    <Actor entry={e} />
                  </td>
                  <td>
                    <code>{e.type}</code>
                  </td>
                  <td>{e.summary}</td>
                  <td className="muted small">
                    <code>
                      {e.streamId}@{e.revision}
                    </code>
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
          onPage={(p) => set({ page: String(p) })}
          onPageSize={(s) => set({ pageSize: String(s), page: null })}
        />
      )}
    </div>
  );
}
