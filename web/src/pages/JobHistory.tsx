import { Link, useSearchParams } from 'react-router-dom';
import { call, client } from '../api.js';
import { AuditTable } from '../components/AuditTable.js';
import { ErrorBox, Spinner } from '../components/ui.js';
import { dateTime } from '../format.js';
import { useApi } from '../hooks.js';

/** The job and its playbook as they were at `at`, folded from the event log by the API (docs/api.md, "Time travel"). */
function AsOf({ jobId, at }: { jobId: string; at: number }) {
  const query = { at };
  const job = useApi(`job ${jobId} at ${at}`, (signal) =>
    call(client.GET('/api/jobs/{id}', { params: { path: { id: jobId }, query }, signal })),
  );
  const playbook = useApi(`playbook ${jobId} at ${at}`, (signal) =>
    call(client.GET('/api/jobs/{id}/playbook', { params: { path: { id: jobId }, query }, signal })),
  );
  const j = job.data;
  const p = playbook.data;
  const learnings = p?.content.learnings ?? [];
  const toolkit = p?.content.toolkit ?? [];
  return (
    <div className="card" aria-label="Job as of this moment">
      <h2>
        As of {dateTime(at)} <Link to={`/jobs/${jobId}/history`}>back to now</Link>
      </h2>
      <ErrorBox error={job.error ?? playbook.error} />
      {(!j || !p) && !job.error && !playbook.error && <Spinner />}
      {j && p && (
        <dl>
          <dt>Name</dt>
          <dd>{j.name}</dd>
          <dt>Instruction</dt>
          <dd className="pre-wrap" data-testid="as-of-instruction">
            {j.instruction}
          </dd>
          <dt>Schedule</dt>
          <dd>{j.cron ? <code>{j.cron}</code> : <span className="muted">none</span>}</dd>
          <dt>Enabled</dt>
          <dd>{j.enabled ? 'yes' : 'no'}</dd>
          <dt>Playbook</dt>
          <dd data-testid="as-of-playbook">
            version {p.version}
            {p.summary ? `: ${p.summary}` : ''}
          </dd>
          <dt>Learnings</dt>
          <dd>
            {learnings.length === 0 ? (
              <span className="muted">none</span>
            ) : (
              <ul>
                {learnings.map((l) => (
                  <li key={l.id}>{l.text}</li>
                ))}
              </ul>
            )}
          </dd>
          <dt>Scripts</dt>
          <dd>
            {toolkit.length === 0 ? <span className="muted">none</span> : toolkit.map((s) => s.name).join(', ')}
            {p.content.main !== null && ' (and a main script)'}
          </dd>
        </dl>
      )}
    </div>
  );
}

/** A job's history tab: its changes across streams, and the job as it was at a chosen change (`?at=` in the URL). */
export function HistoryTab({ jobId }: { jobId: string }) {
  const [params] = useSearchParams();
  const at = Number(params.get('at'));
  return (
    <div>
      {Number.isSafeInteger(at) && at > 0 && <AsOf key={at} jobId={jobId} at={at} />}
      <AuditTable jobId={jobId} />
    </div>
  );
}
