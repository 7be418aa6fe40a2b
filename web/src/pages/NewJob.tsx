import { useEffect, useState } from 'react';
import { Link, useNavigate } from 'react-router-dom';
import { asApiError, call, client, type ApiError } from '../api.js';
import { CompileBox, CompiledNotes, type CompiledJob } from '../components/CompileBox.js';
import { domainList, emptyJob, JobForm, type JobFormValues } from '../components/JobForm.js';
import type { JobFields } from '../types.js';

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

function fromCompiled(job: CompiledJob): JobFormValues {
  return {
    ...emptyJob,
    name: job.name,
    instruction: job.instruction,
    cron: job.cron ?? '',
    timezone: job.timezone ?? '',
    network: job.network,
    allowedDomains: (job.allowedDomains ?? []).join('\n'),
  };
}

export function NewJobPage() {
  const navigate = useNavigate();
  const [error, setError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);
  const [compiled, setCompiled] = useState<{ job: CompiledJob; n: number } | null>(null);

  useEffect(() => {
    document.title = 'New job · svc';
  }, []);

  const save = async (v: JobFormValues, submitter: string | null) => {
    setBusy(true);
    setError(null);
    try {
      // The compiled spec (inputs, outputs, success criteria, Dockerfile) goes with the form's fields.
      const job = await call(
        client.POST('/api/jobs', { body: { ...toJobFields(v), ...(compiled ? { spec: compiled.job.spec } : {}) } }),
      );
      if (submitter === 'run') {
        const started = await call(client.POST('/api/jobs/{id}/runs', { params: { path: { id: job.id } }, body: {} }));
        navigate(started.runId ? `/runs/${started.runId}` : `/jobs/${job.id}`);
      } else navigate(`/jobs/${job.id}`);
    } catch (err) {
      setError(asApiError(err));
      setBusy(false);
    }
  };

  return (
    <section className="narrow">
      <nav className="crumbs" aria-label="Breadcrumb">
        <Link to="/jobs">Jobs</Link> / New job
      </nav>
      <h1>New job</h1>
      <CompileBox onCompiled={(job) => setCompiled((c) => ({ job, n: (c?.n ?? 0) + 1 }))} />
      <h2 className="or">{compiled ? 'The proposed job' : 'Or fill in the form'}</h2>
      {compiled && <CompiledNotes job={compiled.job} />}
      <JobForm
        key={compiled?.n ?? 0}
        initial={compiled ? fromCompiled(compiled.job) : emptyJob}
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
