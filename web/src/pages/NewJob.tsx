import { useEffect, useState } from 'react';
import { Link, useNavigate } from 'react-router-dom';
import { ApiError, post } from '../api.js';
import { domainList, emptyJob, JobForm, type JobFormValues } from '../components/JobForm.js';
import type { JobDto, JobFields, TriggerRunOutput } from '../types.js';

export function toJobFields(v: JobFormValues): JobFields {
  return {
    name: v.name.trim(),
    instruction: v.instruction.trim(),
    cron: v.cron.trim() || null,
    timezone: v.timezone.trim() || null,
    network: v.network,
    allowedDomains: v.network === 'allowlist' ? domainList(v.allowedDomains) : null,
    concurrency: v.concurrency,
    selfImprove: v.selfImprove,
    enabled: v.enabled,
  };
}

export function NewJobPage() {
  const navigate = useNavigate();
  const [error, setError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    document.title = 'New job · svc';
  }, []);

  const save = async (v: JobFormValues, submitter: string | null) => {
    setBusy(true);
    setError(null);
    try {
      const job = await post<JobDto>('/api/jobs', toJobFields(v));
      if (submitter === 'run') {
        const started = await post<TriggerRunOutput>(`/api/jobs/${job.id}/runs`, {});
        navigate(started.runId ? `/runs/${started.runId}` : `/jobs/${job.id}`);
      } else navigate(`/jobs/${job.id}`);
    } catch (err) {
      setError(err as ApiError);
      setBusy(false);
    }
  };

  return (
    <section className="narrow">
      <nav className="crumbs" aria-label="Breadcrumb">
        <Link to="/jobs">Jobs</Link> / New job
      </nav>
      <h1>New job</h1>
      <JobForm
        initial={emptyJob}
        error={error}
        busy={busy}
        onSubmit={(v, s) => void save(v, s)}
        actions={
          <>
            <button type="submit" className="primary" value="save" disabled={busy}>
              Save
            </button>
            <button type="submit" value="run" disabled={busy}>
              Save &amp; run
            </button>
            <Link to="/jobs" className="button ghost">
              Cancel
            </Link>
          </>
        }
      />
    </section>
  );
}
