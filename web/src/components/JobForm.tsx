import { useState, type FormEvent, type ReactNode } from 'react';
import type { ApiError } from '../api.js';
import type { Concurrency, Network } from '../types.js';
import { ErrorBox, Field } from './ui.js';

export interface JobFormValues {
  name: string;
  instruction: string;
  cron: string;
  timezone: string;
  network: Network;
  allowedDomains: string;
  concurrency: Concurrency;
  selfImprove: boolean;
  enabled: boolean;
}

export const emptyJob: JobFormValues = {
  name: '',
  instruction: '',
  cron: '',
  timezone: '',
  network: 'none',
  allowedDomains: '',
  concurrency: 'skip',
  selfImprove: true,
  enabled: true,
};

/** Domains one per line or comma-separated, as the API's list. */
export function domainList(text: string): string[] {
  return text
    .split(/[\s,]+/)
    .map((d) => d.trim())
    .filter(Boolean);
}

/**
 * The plain job form, shared by New job and Settings. Field errors come from the API's answer (its `fields`), so the
 * form shows exactly the rules the server enforces.
 */
export function JobForm({
  initial,
  error,
  busy,
  onSubmit,
  actions,
}: {
  initial: JobFormValues;
  error: ApiError | null;
  busy: boolean;
  onSubmit: (v: JobFormValues, submitter: string | null) => void;
  actions: ReactNode;
}) {
  const [v, setV] = useState(initial);
  const set = <K extends keyof JobFormValues>(k: K, value: JobFormValues[K]) => setV((s) => ({ ...s, [k]: value }));
  const fieldError = (name: string) => error?.field(name);
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const submitter = (e.nativeEvent as SubmitEvent).submitter;
    onSubmit(v, submitter instanceof HTMLButtonElement ? submitter.value || null : null);
  };
  const describedBy = (name: string) => (fieldError(name) ? `job-${name}-error` : undefined);
  return (
    <form className="form" onSubmit={submit} noValidate>
      {error && error.fields.length === 0 && <ErrorBox error={error} />}
      {error && error.fields.length > 0 && (
        <div className="error-box" role="alert">
          <strong>{error.message}</strong>
        </div>
      )}
      <Field label="Name" htmlFor="job-name" error={fieldError('name')}>
        <input
          id="job-name"
          value={v.name}
          maxLength={200}
          required
          onChange={(e) => set('name', e.target.value)}
          aria-invalid={!!fieldError('name')}
          aria-describedby={describedBy('name')}
        />
      </Field>
      <Field
        label="Instruction"
        htmlFor="job-instruction"
        error={fieldError('instruction')}
        hint="What the job should do, in plain words. The agent reads it on every run."
      >
        <textarea
          id="job-instruction"
          rows={6}
          value={v.instruction}
          maxLength={20000}
          onChange={(e) => set('instruction', e.target.value)}
          aria-invalid={!!fieldError('instruction')}
          aria-describedby={describedBy('instruction')}
        />
      </Field>
      <div className="row">
        <Field
          label="Schedule (cron)"
          htmlFor="job-cron"
          error={fieldError('cron')}
          hint="Five fields, e.g. 0 7 * * 1-5. Empty: only when started."
        >
          <input
            id="job-cron"
            value={v.cron}
            maxLength={100}
            placeholder="0 7 * * *"
            onChange={(e) => set('cron', e.target.value)}
            aria-invalid={!!fieldError('cron')}
          />
        </Field>
        <Field
          label="Time zone"
          htmlFor="job-timezone"
          error={fieldError('timezone')}
          hint="IANA name, e.g. Europe/Berlin. Empty: the workspace's."
        >
          <input
            id="job-timezone"
            value={v.timezone}
            maxLength={100}
            placeholder={Intl.DateTimeFormat().resolvedOptions().timeZone}
            onChange={(e) => set('timezone', e.target.value)}
            aria-invalid={!!fieldError('timezone')}
          />
        </Field>
      </div>
      <div className="row">
        <Field label="Network" htmlFor="job-network" error={fieldError('network')}>
          <select id="job-network" value={v.network} onChange={(e) => set('network', e.target.value as Network)}>
            <option value="none">None</option>
            <option value="allowlist">Only listed domains</option>
            <option value="internet">Internet</option>
          </select>
        </Field>
        <Field label="When a run is still going" htmlFor="job-concurrency" error={fieldError('concurrency')}>
          <select
            id="job-concurrency"
            value={v.concurrency}
            onChange={(e) => set('concurrency', e.target.value as Concurrency)}
          >
            <option value="skip">Skip the new run</option>
            <option value="queue">Queue it</option>
            <option value="parallel">Run in parallel</option>
          </select>
        </Field>
      </div>
      {v.network === 'allowlist' && (
        <Field
          label="Allowed domains"
          htmlFor="job-domains"
          error={
            fieldError('allowedDomains') ?? error?.fields.find((f) => f.field.startsWith('allowedDomains'))?.message
          }
          hint="One per line, e.g. api.example.com"
        >
          <textarea
            id="job-domains"
            rows={3}
            value={v.allowedDomains}
            onChange={(e) => set('allowedDomains', e.target.value)}
          />
        </Field>
      )}
      <div className="checks">
        <label>
          <input type="checkbox" checked={v.enabled} onChange={(e) => set('enabled', e.target.checked)} /> Enabled (runs
          on its schedule and webhook)
        </label>
        <label>
          <input type="checkbox" checked={v.selfImprove} onChange={(e) => set('selfImprove', e.target.checked)} /> Learn
          from its runs
        </label>
      </div>
      <div className="form-actions" aria-busy={busy}>
        {actions}
      </div>
    </form>
  );
}
